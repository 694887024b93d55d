"""`nmt.data.encoding`: ragged id storage and tokenizing a corpus once."""

from pathlib import Path

import numpy as np
import pytest

from nmt.data.corpus import read_pairs
from nmt.data.encoding import EncodedCorpus, RaggedIds, concatenate_examples, encode_pairs
from nmt.data.tokenizer import EOS_ID

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "tiny_pairs.tsv"


# --------------------------------------------------------------------------- ragged ids


def test_ragged_ids_take_and_append_match_python():
    rows = [[5, 6, 7], [], [8], [9, 10]]
    ragged = RaggedIds.from_lists(rows)
    assert ragged.lengths.tolist() == [3, 0, 1, 2]
    taken = ragged.take(np.array([3, 0, 1, 3]))
    assert [taken[i].tolist() for i in range(len(taken))] == [[9, 10], [5, 6, 7], [], [9, 10]]
    appended = ragged.append(EOS_ID)
    assert [appended[i].tolist() for i in range(4)] == [r + [EOS_ID] for r in rows]
    assert appended.values.dtype == np.int32
    with pytest.raises(ValueError, match="row_splits"):
        RaggedIds(np.zeros(3, np.int32), np.array([0, 2]))


# --------------------------------------------------------------------------- encoding


def _generated_pairs(count=300, seed=0):
    """Pairs of word-for-word "translations" with 1 to 20 words."""
    english = ["the", "a", "cat", "dog", "house", "green", "big", "small", "eats", "sees"]
    french = ["le", "la", "chat", "chien", "maison", "vert", "grand", "petit", "mange", "voit"]
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(count):
        words = rng.integers(0, len(english), size=rng.integers(1, 21))
        pairs.append((" ".join(english[w] for w in words), " ".join(french[w] for w in words)))
    return pairs


@pytest.fixture(scope="module")
def pairs():
    return read_pairs(FIXTURE) if FIXTURE.exists() else _generated_pairs()


@pytest.fixture(scope="module")
def tokenizers(pairs):
    from nmt.data.tokenizer import train_tokenizers

    return train_tokenizers(pairs[:400], vocab_size=120)


def test_encode_pairs_matches_tokenizer(tokenizers, pairs):
    import tensorflow as tf

    pairs = pairs[:50]
    corpus = encode_pairs(pairs, tokenizers, batch=7)
    assert len(corpus) == 50 and corpus.dropped == 0
    expected_src = tokenizers.source.tokenize(tf.constant([s for s, _ in pairs])).to_list()
    expected_tgt = tokenizers.target.tokenize(tf.constant([t for _, t in pairs])).to_list()
    for i in range(50):
        assert corpus.source[i].tolist() == expected_src[i] + [EOS_ID]
        assert corpus.target[i].tolist() == expected_tgt[i]
    assert corpus.source.values.dtype == np.int32


def test_encode_pairs_drops_long_pairs(tokenizers, pairs):
    pairs = pairs[:60]
    full = encode_pairs(pairs, tokenizers, max_tokens_per_sentence=10_000)
    limit = int(np.median(full.source.lengths))
    corpus = encode_pairs(pairs, tokenizers, max_tokens_per_sentence=limit)
    keep = (full.source.lengths <= limit) & (full.target.lengths + 1 <= limit)
    assert 0 < corpus.dropped < len(pairs)
    assert corpus.dropped == int((~keep).sum())
    assert corpus.indices.tolist() == np.flatnonzero(keep).tolist()
    for row, index in enumerate(corpus.indices):
        assert corpus.source[row].tolist() == full.source[index].tolist()


# --------------------------------------------------------------------------- joined examples


def _small_corpus(with_alignments=True):
    source = RaggedIds.from_lists([[10, 11, EOS_ID], [20, EOS_ID], [30, 31, 32, EOS_ID]])
    target = RaggedIds.from_lists([[110, 111], [120, 121, 122], [130]])
    links = RaggedIds.from_lists([[0, 0, 1, 1], [0, 2], [2, 0]])
    return EncodedCorpus(
        source, target, np.arange(3), 0, links if with_alignments else None
    )


def test_concatenate_examples_joins_pairs_and_shifts_links():
    corpus = _small_corpus()
    joined = concatenate_examples(
        corpus, count=50, max_pairs=3, max_tokens_per_sentence=100, seed=4
    )
    assert len(joined) == 53
    assert joined.indices[:3].tolist() == [0, 1, 2] and (joined.indices[3:] == -1).all()
    for k in range(3):  # the original examples come first, unchanged
        assert joined.source[k].tolist() == corpus.source[k].tolist()
        assert joined.alignments[k].tolist() == corpus.alignments[k].tolist()
    # Rebuild every joined example from the members it must be made of: a
    # source piece's identity says which pair and position it came from.
    sizes = set()
    for k in range(3, len(joined)):
        source, target = joined.source[k].tolist(), joined.target[k].tolist()
        assert source[-1] == EOS_ID and source.count(EOS_ID) == 1
        members = [token // 10 - 1 for token in source[:-1] if token % 10 == 0]
        sizes.add(len(members))
        expected_source, expected_target, expected_links = [], [], []
        for m in members:
            for i, j in corpus.alignments[m].reshape(-1, 2).tolist():
                expected_links.append([i + len(expected_source), j + len(expected_target)])
            expected_source += corpus.source[m].tolist()[:-1]
            expected_target += corpus.target[m].tolist()
        assert source[:-1] == expected_source and target == expected_target
        assert joined.alignments[k].reshape(-1, 2).tolist() == expected_links
    assert sizes == {2, 3}


def test_concatenate_examples_respects_the_length_limit_and_is_seeded():
    corpus = _small_corpus(with_alignments=False)
    joined = concatenate_examples(corpus, count=40, max_pairs=4, max_tokens_per_sentence=6, seed=0)
    added = range(3, len(joined))
    assert 0 < len(added) < 40 and joined.alignments is None
    assert all(len(joined.source[k]) <= 6 and len(joined.target[k]) + 1 <= 6 for k in added)
    again = concatenate_examples(corpus, count=40, max_pairs=4, max_tokens_per_sentence=6, seed=0)
    assert np.array_equal(again.source.values, joined.source.values)
    unchanged = concatenate_examples(corpus, count=0, max_pairs=2, max_tokens_per_sentence=6,
                                     seed=0)
    assert unchanged is corpus
    with pytest.raises(ValueError, match="max_pairs"):
        concatenate_examples(corpus, count=1, max_pairs=1, max_tokens_per_sentence=6, seed=0)
