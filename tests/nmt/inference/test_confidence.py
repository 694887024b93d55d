"""`nmt.inference.confidence`: the search's normalised score turned back into log-probabilities."""

import math

import numpy as np
import pytest

from nmt.inference.confidence import sentence_confidence, total_log_prob


def reference_total(score, length, alpha, beta, attention):
    """(s - cp) * lp written out with NumPy (Wu et al. 2016, Eq. 14)."""
    lp = ((5.0 + length) / 6.0) ** alpha
    coverage = np.asarray(attention, np.float64).sum(axis=0)
    cp = beta * np.log(np.clip(coverage, 1e-10, 1.0)).sum()
    return (score - cp) * lp


def test_without_penalties_the_score_is_the_total():
    assert total_log_prob(-3.25, 7, length_penalty=0.0) == pytest.approx(-3.25)


@pytest.mark.parametrize("alpha, beta", [(0.6, 0.0), (1.0, 0.2), (0.0, 2.0), (2.5, 0.7)])
def test_length_and_coverage_penalties_are_undone(alpha, beta):
    rng = np.random.default_rng(3)
    attention = rng.dirichlet(np.ones(6), size=4).astype(np.float32)  # (T=4, S=6)
    attention[:, -1] = 0.0  # a source piece never attended: the floor applies

    total = total_log_prob(-1.7, 4, alpha, beta, attention)

    assert total == pytest.approx(reference_total(-1.7, 4, alpha, beta, attention), rel=1e-5)


def test_a_coverage_penalty_needs_the_attention():
    with pytest.raises(ValueError, match=r"Received: coverage_penalty=0\.2, attention=None"):
        total_log_prob(-1.0, 3, 0.6, 0.2)


def test_sentence_confidence_is_the_mean_per_piece():
    assert sentence_confidence(-6.0, 4) == -1.5
    assert sentence_confidence(-6.0, 0) is None
    assert sentence_confidence(-math.inf, 3) is None
