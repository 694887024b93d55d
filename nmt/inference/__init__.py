"""Translation with a trained model: beam search, vocabulary shortlists, the export's
precisions, confidence scores, the SavedModel export and `translator.Translator`.

`precision` imports no TensorFlow (`nmt.options` reads it before TensorFlow loads).
"""
