"""Keras layers: attention, the bidirectional encoder, the attentional decoders.

`step_kernels` holds the same encoder and decoder step as plain functions for
translation, with their matrix products in a chosen dtype (the export uses them).
"""
