"""Training data: the corpus files, the in-graph subword tokenizer, the tokenized corpus
and the batches made of it.

`corpus` and `download` import no TensorFlow.
"""
