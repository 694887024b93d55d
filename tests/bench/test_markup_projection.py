"""`bench/markup_projection.py`: scores, and the alignment cache, with a fake aligner."""

import numpy as np

from bench.markup_projection import AlignCache, evaluate
from nmt.types import Hypothesis, Translation

PAIRS = [('Click <g id="1">OK</g> now.', 'Cliquez <g id="1">OK</g> maintenant.'),
         ('The <g id="1">deficit</g> grew.', 'Le <g id="1">déficit</g> a augmenté.')]


def translation(source: str, target: str) -> Translation:
    """A forced alignment that links word i to word i; its matrix says the same."""
    n, m = len(source.split()), len(target.split())
    links = tuple((i, i) for i in range(min(n, m)))
    matrix = np.eye(m, n, dtype=np.float32)
    hypothesis = Hypothesis(text=target, target_tokens=(), score=0.0,
                            alignment=np.zeros((0, 0)), word_alignment=links,
                            word_matrix=matrix)
    return Translation(source=source, source_tokens=(), nbest=(hypothesis,))


def counting_aligner(calls: list):
    def align(sources, targets):
        calls.append(list(sources))
        return [translation(s, t) for s, t in zip(sources, targets, strict=True)]
    return lambda: align


def test_second_run_reads_the_cache_and_scores_the_same(tmp_path):
    path, calls = tmp_path / "align.json", []
    first = evaluate(counting_aligner(calls), PAIRS, batch_size=1, cache=AlignCache(path))
    assert path.exists() and len(calls) == 2
    second = evaluate(counting_aligner(calls), PAIRS, batch_size=1, cache=AlignCache(path))
    assert len(calls) == 2  # nothing aligned again
    for before, after in zip(first, second, strict=True):
        assert vars(before) == vars(after)
    model, _ = second
    assert model.lines == 2 and model.exact == model.paired == 2


def test_a_link_rule_is_read_from_the_cached_matrix(tmp_path):
    path, calls = tmp_path / "align.json", []
    evaluate(counting_aligner(calls), PAIRS, batch_size=2, cache=AlignCache(path))
    model, _ = evaluate(counting_aligner(calls), PAIRS, batch_size=2, cache=AlignCache(path),
                        rule="argmax")
    assert len(calls) == 1 and model.exact == 2
