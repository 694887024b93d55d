"""Evaluation: BLEU, chrF and AER with the gold-alignment readers (`metrics`, no
TensorFlow), and the runs of a `Translator` over a test set that they measure (`scoring`).
"""
