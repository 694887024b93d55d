"""Keras layers in `keras.ops`: attention, the bidirectional encoder, the attentional decoders.

They run on TensorFlow, JAX and PyTorch. `step_kernels` holds the decoder step as plain
functions for translation, with its matrix products in a chosen dtype (the export uses
them, with `nmt.inference.fast_encoder` for the encoder).
"""
