"""`nmt.encoding`: ragged id storage and tokenizing a corpus once."""

from pathlib import Path

import numpy as np
import pytest

from nmt.corpus import read_pairs
from nmt.encoding import RaggedIds, encode_pairs
from nmt.tokenizer import EOS_ID

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_pairs.tsv"


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
    from nmt.tokenizer import train_tokenizers

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
