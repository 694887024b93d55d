"""Attention-based English→French translation: the model library.

Layers, model, tokenizer, search, export and `nmt.translator.Translator`, on
TensorFlow/Keras and tensorflow-text; `nmt.types`, `nmt.constants`, `nmt.paths`,
`nmt.options`, `nmt.corpus` and `nmt.evaluation` need no TensorFlow, for clients
and command lines.
It imports no other package of the project (tests/test_layering.py keeps it so).
"""
