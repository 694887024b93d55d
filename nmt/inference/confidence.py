"""Confidence of a translation from the model's log-probabilities: per piece, word, sentence.

Definitions (natural logarithms; 0 is certain, lower is less sure):

- piece score: log p(y_t | y_<t, x), the log-probability of target piece t
  given the source and the pieces before it ("</s>" included);
- word score: the mean score of the pieces of a whitespace word of the
  target (as Firefox's Bergamot computes its word quality scores); pieces are
  grouped into words as the word links group them (`nmt.alignment.from_attention`), so word
  j's score belongs to word j of `Hypothesis.word_alignment`; "</s>" belongs
  to no word;
- sentence confidence: the mean score per piece, "</s>" included,
  log P(y | x) / T. `exp(confidence)` is the geometric mean of the pieces'
  probabilities (the inverse of the per-piece perplexity). It does not depend
  on the length penalty or the coverage penalty used to rank hypotheses.

Where they come from:

- forced alignment (`Translator.align`): the export's `align` signature
  returns every piece's log-probability (`piece_scores`) and the word means
  (`word_scores`), and `scores` holds log P(y | x);
- translations: the search keeps each chosen piece's log-probability
  (`nmt.inference.search`), and the translate signatures return them and the
  word means under the same names. They are normalised over the ids a
  translation may hold (never PAD or BOS), as forced alignment's are, so
  without a shortlist a translation's pieces score the same searched or
  aligned; with one, the search's are over the sentence's list.
  Exports from before this return none (they are None); the search ranks by
  the normalised score s = log P(y | x) / lp(T) + cp(x; y), so their
  log P(y | x) = (s - cp) * lp(T) is recovered exactly from the returned
  score, the decoding options and, for the coverage penalty, the decoder's
  attention rows (`total_log_prob`).
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from nmt.inference.search import gnmt_coverage_penalty, gnmt_length_penalty


def total_log_prob(score: float, length: int, length_penalty: float,
                   coverage_penalty: float = 0.0, attention: np.ndarray | None = None) -> float:
    """log P(y | x) of a searched hypothesis, from its normalised score.

    Args:
        score: the search's score s = log P / lp(T) + cp.
        length: T, the hypothesis's pieces, "</s>" included.
        length_penalty: alpha of lp(T) = ((5 + T) / 6) ** alpha, as decoded.
        coverage_penalty: beta of cp, as decoded; 0: no coverage penalty.
        attention: the decoder's attention rows `(T, S)` over the source's S
            pieces; needed when `coverage_penalty` is not 0.

    Returns:
        The total log-probability (natural log).

    Raises:
        ValueError: `coverage_penalty` is set without `attention`.
    """
    penalty = 0.0
    if coverage_penalty:
        if attention is None:
            raise ValueError("the coverage penalty needs the decoder's attention rows (T, S). "
                             f"Received: coverage_penalty={coverage_penalty!r}, attention=None")
        coverage = tf.constant(np.asarray(attention, np.float32).sum(axis=0))  # (S,)
        penalty = float(gnmt_coverage_penalty(coverage, tf.constant(True), coverage_penalty))
    return (score - penalty) * float(gnmt_length_penalty(length, length_penalty))


def sentence_confidence(total: float, length: int) -> float | None:
    """The mean log-probability per piece, `total / length`; None for no piece or no score."""
    if length <= 0 or not math.isfinite(total):
        return None
    return total / length
