"""Attention-based English→French translation: the model library.

`layers` (attention, encoder, decoders) and `model` in Keras 3 ops (any backend); `data`
(corpus, tokenizer, batches); `inference` (search, export, `Translator`);
`alignment` (word links); `evaluation` (metrics, scoring). `types`, `constants`, `paths`
and `options` are plain Python. This file and the subpackages' `__init__.py` import
nothing, so the clients import `nmt.types` without TensorFlow. Text and file handling
around the translator (sentences, markup, glossaries, file formats) is the top-level
package `documents`.
It imports no other package of the project (tests/test_layering.py keeps it so).
"""
