"""Training on a machine with an accelerator and no TensorFlow (a GPU host, Colab, Kaggle)."""
