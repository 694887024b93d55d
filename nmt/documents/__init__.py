"""Documents: texts split into sentences, translated and joined again; inline markup and
placeholders carried across through the word links; word links as character spans.

Nothing here imports TensorFlow: the `nmt` command splits documents on the client side.
"""
