"""Corpus word alignment for guided training: symmetrisation, words and pieces, files."""

import numpy as np
import pytest

from nmt.data.tokenizer import SubwordTokenizer
from training import corpus_alignment as ca

FORWARD = {(0, 0), (1, 2), (2, 1), (3, 3)}
REVERSE = {(0, 0), (1, 1), (2, 1), (3, 3), (3, 4)}


@pytest.mark.parametrize(("method", "expected"), [
    ("forward", FORWARD),
    ("reverse", REVERSE),
    ("intersection", {(0, 0), (2, 1), (3, 3)}),
    ("union", FORWARD | REVERSE),
    # Grown from the intersection: (1, 2) and (1, 1) touch (2, 1) and align the unaligned
    # source word 1; (3, 4) touches (3, 3) and aligns the unaligned target word 4.
    ("grow-diag-final-and", {(0, 0), (1, 1), (1, 2), (2, 1), (3, 3), (3, 4)}),
])
def test_symmetrize(method, expected):
    assert ca.symmetrize(FORWARD, REVERSE, method) == expected


def test_final_and_adds_only_links_of_two_unaligned_words():
    # (5, 5) is far from every intersection link: added by final-and, both words unaligned.
    # (0, 1) is far too, but source word 0 is aligned already: not added.
    forward, reverse = {(0, 0), (5, 5)}, {(0, 0), (0, 3)}
    assert ca.symmetrize(forward, reverse, "grow-diag-final-and") == {(0, 0), (5, 5)}


def test_unknown_symmetrization_is_refused():
    with pytest.raises(ValueError, match="Received: method='gdfa'"):
        ca.symmetrize(FORWARD, REVERSE, "gdfa")


def test_word_links_to_pieces_and_back():
    source_words = np.array([0, 0, 1, -1])  # two pieces for word 0, an invisible piece
    target_words = np.array([0, 1, 1])
    pieces = ca.word_links_to_pieces({(0, 1), (1, 0)}, source_words, target_words)
    assert pieces == [(0, 1), (0, 2), (1, 1), (1, 2), (2, 0)]
    assert ca.piece_links_to_words(pieces, source_words, target_words) == {(0, 1), (1, 0)}


def test_aligner_words_spell_the_pieces(tiny_tokenizers):
    # Rebuilt here: an earlier test's `tf.random.set_seed` may have freed the shared
    # tokenizer's SentencePiece resource (see `tiny_tokenizers`).
    source = SubwordTokenizer(tiny_tokenizers.source.model_proto, "en")
    texts = ["I like coffee.", "", "unbelievably long-winded words!"]
    index, words = ca.piece_words(source, texts)
    assert words == ["I like coffee.", "", "unbelievably long-winded words!"]
    assert [int(i.max()) + 1 if len(i) else 0 for i in index] == [3, 0, 3]


def test_eflomal_aligns_a_repetitive_corpus():
    pytest.importorskip("eflomal", reason="needs the [align] extra (installed by [dev])")
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(12)]
    sources, targets = [], []
    for _ in range(400):  # target = source words renamed, in reverse order
        words = list(rng.choice(vocab, size=rng.integers(2, 6), replace=False))
        sources.append(" ".join(words))
        targets.append(" ".join(w.replace("w", "m") for w in reversed(words)))
    forward, reverse = ca.run_eflomal(sources, targets)
    links = [ca.symmetrize(f, r, "intersection") for f, r in zip(forward, reverse, strict=True)]
    correct = total = 0
    for source, pair_links in zip(sources, links, strict=True):
        n = len(source.split())
        gold = {(i, n - 1 - i) for i in range(n)}
        correct += len(pair_links & gold)
        total += n
    assert correct / total > 0.9


def test_training_alignments_line_count(tmp_path):
    path = tmp_path / "links.txt"
    path.write_text("0-0 1-1\n\n", encoding="utf-8")
    assert ca.read_training_alignments(path, 2) == [frozenset({(0, 0), (1, 1)}), frozenset()]
    with pytest.raises(ValueError, match="has 2 lines but the training file has 3 pairs"):
        ca.read_training_alignments(path, 3)


def test_corpus_links_follow_the_kept_pairs_and_check_lengths():
    alignments = [frozenset({(0, 0)}), frozenset({(1, 0), (0, 1)}), frozenset({(4, 0)})]
    ragged = ca.corpus_links(alignments, np.array([1, 0]), np.array([2, 1]), np.array([2, 1]))
    assert [list(ragged[i]) for i in range(2)] == [[0, 1, 1, 0], [0, 0]]
    with pytest.raises(ValueError, match=r"links.txt:3: link 4-0 is outside the pair"):
        ca.corpus_links(alignments, np.array([2]), np.array([3]), np.array([3]), "links.txt")


def test_write_alignments_is_pharaoh(tmp_path):
    path = tmp_path / "out" / "a.txt"
    ca.write_alignments(path, [[(0, 0), (2, 1)], []])
    assert path.read_text(encoding="utf-8") == "0-0 2-1\n\n"
