"""Attention-based English→French translation: the model library (pure TensorFlow/Keras)."""
