"""Text and file handling around the translator, in plain Python: documents split into
sentences, translated and joined again; inline markup and placeholders carried across
through the word links; word links as character spans; glossaries; whole files (PO,
XLIFF, subtitles, Word, Markdown).

Of the model library it uses only the plain types (`nmt.types`, `nmt.constants`) and it
never imports TensorFlow, so the `nmt` command splits documents on the client side
(tests/test_layering.py keeps it so). Until this package existed it was `nmt.documents`.
"""
