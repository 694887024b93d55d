"""`nmt.evaluation.scoring`: AER of forced alignments, overall and by source length."""

from types import SimpleNamespace

import pytest

from nmt.evaluation.metrics import AlignedPair, alignment_scores
from nmt.evaluation.scoring import score_alignments


class DiagonalAligner:
    """Links word i to word i: right for the short pair below, half wrong for the long one."""

    def align(self, sources, targets):
        return [SimpleNamespace(text=t, word_alignment=tuple((i, i) for i in range(len(s.split()))))
                for s, t in zip(sources, targets, strict=True)]


def pair(n_words: int, sure) -> AlignedPair:
    words = tuple(f"w{i}" for i in range(n_words))
    return AlignedPair(source_words=words, target_words=words, sure=frozenset(sure),
                       possible=frozenset(sure))


def test_aer_by_source_length_scores_each_range_on_its_own():
    short = pair(3, {(0, 0), (1, 1), (2, 2)})
    long = pair(12, {(i, 11 - i) for i in range(12)})  # reversed: the diagonal gets 0 of 12
    report = score_alignments(DiagonalAligner(), [short, long, short])
    assert report.by_length["1-9"].aer == pytest.approx(0.0)
    assert report.by_length["10-19"].aer == pytest.approx(1.0)
    assert set(report.by_length) == {"1-9", "10-19"}
    predicted = [{(i, i) for i in range(n)} for n in (3, 12, 3)]
    gold = [short, long, short]
    overall = alignment_scores(predicted, [p.sure for p in gold], [p.possible for p in gold])
    assert report.scores.aer == pytest.approx(overall.aer)
    assert report.sentences == 3 and report.word_count_mismatches == 0
