"""Word-link rules over a word matrix, against hand-worked examples."""

import numpy as np
import pytest

from nmt.alignment.word_links import LINK_RULES, format_alignment_table, relink, word_links
from nmt.types import Hypothesis, Translation

# Rows: target words; columns: source words.
MATRIX = np.array([
    [0.70, 0.20, 0.10, 0.00],  # t0: clearly s0
    [0.10, 0.45, 0.40, 0.05],  # t1: s1 and s2 (many-to-one source side)
    [0.05, 0.50, 0.40, 0.05],  # t2: also s1, with s2 close
    [0.25, 0.25, 0.25, 0.25],  # t3: spread out (unaligned in truth)
], np.float32)


def test_argmax_links_every_target_word_to_its_best_source_word():
    # t3's weights tie: the first source word wins, as NumPy's argmax picks it.
    assert word_links(MATRIX, "argmax") == [(0, 0), (0, 3), (1, 1), (1, 2)]


def test_threshold_keeps_every_cell_at_or_above_it():
    assert word_links(MATRIX, "threshold", 0.4) == [(0, 0), (1, 1), (1, 2), (2, 1), (2, 2)]
    assert word_links(MATRIX, "threshold", 0.8) == []


def test_intersect_keeps_cells_that_win_their_row_and_their_column():
    # t1's best is s1 (0.45) but s1's best target is t2 (0.50); s2's best target is t1 (0.40),
    # t2's best source is s1: so t2-s1 is kept; t1 is left out; s3's column maximum is t3.
    assert word_links(MATRIX, "intersect") == [(0, 0), (1, 2), (3, 3)]


def test_grow_adds_neighbours_above_the_threshold_that_align_a_new_word():
    # From the intersection: t1 (unaligned) gains s1 (0.45, diagonal to s0-t0); s2
    # (unaligned) gains t2 (0.40, next to s1-t2); then s2-t1 (0.40) would link two aligned
    # words and is not added.
    assert word_links(MATRIX, "grow", 0.4) == [(0, 0), (1, 1), (1, 2), (2, 2), (3, 3)]
    assert word_links(MATRIX, "grow", 0.9) == word_links(MATRIX, "intersect")


# Moses' grow-diag neighbour order: the result of growing depends on it.
NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


def grow_reference(m, threshold):
    """Grow-diag from the row/column intersection, written out independently."""
    rows, cols = m.shape
    links = {(s, t) for t in range(rows) for s in range(cols)
             if m[t, s] > 0 and m[t, s] == m[t].max() and m[t, s] == m[:, s].max()}
    changed = True
    while changed:
        changed = False
        for s, t in sorted(links):
            for ds, dt in NEIGHBOURS:
                s2, t2 = s + ds, t + dt
                if not (0 <= s2 < cols and 0 <= t2 < rows):
                    continue
                aligned_s = {a for a, _ in links}
                aligned_t = {b for _, b in links}
                if (s2, t2) not in links and m[t2, s2] >= threshold and (
                        s2 not in aligned_s or t2 not in aligned_t):
                    links.add((s2, t2))
                    changed = True
    return sorted(links)


@pytest.mark.parametrize("seed", range(5))
def test_grow_matches_an_independent_reference_on_random_matrices(seed):
    rng = np.random.default_rng(seed)
    m = rng.dirichlet(np.ones(7) * 0.3, size=6).astype(np.float32)
    assert word_links(m, "grow", 0.2) == grow_reference(m, 0.2)


@pytest.mark.parametrize("rule", LINK_RULES)
def test_zero_rows_and_empty_matrices_give_no_links(rule):
    assert word_links(np.zeros((2, 3)), rule) == []
    assert word_links(np.zeros((0, 0)), rule) == []


def test_bad_rule_threshold_or_shape_names_the_value():
    with pytest.raises(ValueError, match="rule='best'"):
        word_links(MATRIX, "best")
    with pytest.raises(ValueError, match="threshold=1.5"):
        word_links(MATRIX, "threshold", 1.5)
    with pytest.raises(ValueError, match="shape=\\(4,\\)"):
        word_links(np.zeros(4), "argmax")


def hypothesis(matrix):
    return Hypothesis(text="a b c d", target_tokens=("▁a", "</s>"), score=-1.0,
                      alignment=np.zeros((2, 2)), word_alignment=((0, 0),), word_matrix=matrix)


def test_relink_reads_every_hypothesis_with_the_rule():
    translation = Translation("w x y z", ("▁w", "</s>"), (hypothesis(MATRIX), hypothesis(MATRIX)))
    relinked = relink(translation, "intersect")
    assert [h.word_alignment for h in relinked.nbest] == [((0, 0), (1, 2), (3, 3))] * 2
    assert relinked.text == translation.text


def test_relink_without_a_word_matrix_says_to_re_export():
    translation = Translation("w", ("▁w", "</s>"), (hypothesis(None),))
    with pytest.raises(ValueError, match="re-export"):
        relink(translation, "grow")


def test_format_alignment_table():
    translation = Translation(
        source="I love you",
        source_tokens=("▁I", "▁love", "▁you", "</s>"),
        nbest=(Hypothesis(
            text="je t' aime bien",
            target_tokens=("▁je", "▁t", "'", "▁aime", "▁bien", "</s>"),
            score=-1.5,
            alignment=np.full((6, 4), 0.25, np.float32),
            word_alignment=((0, 0), (2, 1), (1, 2), (2, 2)),
        ),),
    )
    assert format_alignment_table(translation) == "\n".join([
        "target  source",
        "je      I",
        "t'      you",
        "aime    love you",
        "bien    -",
    ])
