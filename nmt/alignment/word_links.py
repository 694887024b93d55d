"""Word links from a word alignment matrix, by one of several rules (NumPy only).

The exported model returns, for every translation, its word matrix
(`word_attention`, `(target words, source words)`: rows of the target word's
pieces averaged, columns of the source word's pieces summed, see
`nmt.alignment.from_attention`) and the links of the default rule. A client or the server
can read other links from the same matrix:

- `argmax`: each target word links to the source word it attends to most
  (one link per target word; the exported `word_alignments`).
- `threshold`: every cell of at least `threshold` (Marian's `--alignment 0.x`,
  on words); a target word may get none or several links.
- `intersect`: cells that are the maximum of their row and of their column
  (argmax in both directions, intersected): precise, leaves words unaligned.
- `grow`: `intersect`, then neighbouring cells (also diagonal) of at least
  `threshold` that align a word not yet aligned, until none is added (as
  Koehn et al.'s grow-diag grows an intersection towards the union).

Links are `(source word, target word)` pairs, 0-based, sorted.
"""

from __future__ import annotations

import numpy as np

LINK_RULES = ("argmax", "threshold", "intersect", "grow")
DEFAULT_LINK_RULE = "argmax"
DEFAULT_THRESHOLD = 0.3
_NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


def check_rule(rule: str, threshold: float = DEFAULT_THRESHOLD) -> None:
    """Raises ValueError naming the bad value."""
    if rule not in LINK_RULES:
        raise ValueError(f"link rule must be one of {LINK_RULES}. Received: rule={rule!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not (
            0 < threshold <= 1):
        raise ValueError("link threshold must be a number in (0, 1]. "
                         f"Received: threshold={threshold!r}")


def word_links(matrix, rule: str = DEFAULT_LINK_RULE,
               threshold: float = DEFAULT_THRESHOLD) -> list[tuple[int, int]]:
    """Links `(source word, target word)` read from a word matrix.

    Args:
        matrix: float `(target words, source words)`; rows sum to at most 1.
        rule: one of `LINK_RULES`.
        threshold: the least weight a `threshold` or grown link has.

    Returns:
        Sorted `(source, target)` pairs. Cells of weight 0 never link.
    """
    check_rule(rule, threshold)
    m = np.asarray(matrix, dtype=np.float32)
    if m.ndim != 2:
        raise ValueError(f"matrix must be 2-D (target words, source words). "
                         f"Received: shape={m.shape}")
    if m.size == 0:
        return []
    if rule == "argmax":
        cells = {(int(np.argmax(row)), t) for t, row in enumerate(m) if row.max() > 0}
    elif rule == "threshold":
        cells = {(int(s), int(t)) for t, s in zip(*np.nonzero(m >= threshold), strict=True)}
    else:
        cells = _intersect(m)
        if rule == "grow":
            cells = _grow(m, cells, threshold)
    return sorted(cells)


def _intersect(m: np.ndarray) -> set[tuple[int, int]]:
    best = (m == m.max(axis=1, keepdims=True)) & (m == m.max(axis=0, keepdims=True)) & (m > 0)
    return {(int(s), int(t)) for t, s in zip(*np.nonzero(best), strict=True)}


def _grow(m: np.ndarray, links: set[tuple[int, int]], threshold: float
          ) -> set[tuple[int, int]]:
    strong = {(int(s), int(t)) for t, s in zip(*np.nonzero(m >= threshold), strict=True)}
    return grow_diag(links, strong)


def grow_diag(links: set[tuple[int, int]], candidates: set[tuple[int, int]]
              ) -> set[tuple[int, int]]:
    """Koehn et al.'s grow-diag: adds candidate links next to (also diagonally) a link
    that align a word not yet aligned, until none is added. Returns a new set."""
    links = set(links)
    sources = {s for s, _ in links}
    targets = {t for _, t in links}
    grown = True
    while grown:
        grown = False
        for s, t in sorted(links):
            for ds, dt in _NEIGHBOURS:
                cell = (s + ds, t + dt)
                if cell in candidates and cell not in links and (
                        cell[0] not in sources or cell[1] not in targets):
                    links.add(cell)
                    sources.add(cell[0])
                    targets.add(cell[1])
                    grown = True
    return links


def relink(translation, rule: str, threshold: float = DEFAULT_THRESHOLD):
    """A `nmt.types.Translation` whose hypotheses' word links are read by `rule`.

    Raises:
        ValueError: a hypothesis carries no word matrix (an export from before
            the matrix was returned).
    """
    import dataclasses

    check_rule(rule, threshold)
    nbest = []
    for hypothesis in translation.nbest:
        if hypothesis.word_matrix is None:
            raise ValueError(
                f"word link rule {rule!r} needs the word matrix, which this model's export "
                "does not return; re-export the model with this version, or leave the rule "
                "unset")
        links = tuple(word_links(hypothesis.word_matrix, rule, threshold))
        nbest.append(dataclasses.replace(hypothesis, word_alignment=links))
    return dataclasses.replace(translation, nbest=tuple(nbest))


def format_alignment_table(translation) -> str:
    """Word links as a readable table: each target word and the source words it links to.

    Words are the whitespace-separated words of `translation.text` and
    `translation.source`; a target word without a link shows "-".

    Args:
        translation: a `nmt.types.Translation`; its best hypothesis's links are shown.

    Returns:
        One line per target word, `word  source words`, under a header line.
    """
    source_words = translation.source.split()
    target_words = translation.text.split()
    linked: dict[int, list[str]] = {t: [] for t in range(len(target_words))}
    for s, t in sorted(translation.word_alignment, key=lambda link: (link[1], link[0])):
        linked.setdefault(t, []).append(source_words[s] if s < len(source_words) else f"#{s}")
    width = max([len("target"), *(len(word) for word in target_words)])
    rows = [f"{'target':<{width}}  source"]
    for t, sources in sorted(linked.items()):
        target = target_words[t] if t < len(target_words) else f"#{t}"
        rows.append(f"{target:<{width}}  {' '.join(sources) or '-'}")
    return "\n".join(rows)
