"""Vocabulary shortlists: IBM Model 1 tables, the lists built from them, a batch's vocabulary."""

import numpy as np
import pytest
import tensorflow as tf

from nmt.data.encoding import RaggedIds
from nmt.data.tokenizer import EOS_ID, PAD_ID
from nmt.inference.shortlist import (
    SPECIAL_IDS,
    Shortlist,
    batch_vocabulary,
    build_shortlist,
    model1_translation_table,
    sentence_vocabularies,
)

# Ids from 4 up are words; 0-3 are PAD, UNK, BOS, EOS.
PAIRS = [([4, 5], [10, 11]), ([4, 6], [10, 12]), ([5, 6], [11, 12]), ([4], [10]),
         ([6, 4, 5], [12, 10, 11, 13])]
SOURCE_VOCAB, TARGET_VOCAB = 8, 14


def ragged(pairs):
    return (RaggedIds.from_lists([s for s, _ in pairs]),
            RaggedIds.from_lists([t for _, t in pairs]))


def model1_by_loops(pairs, source_vocab, target_vocab, iterations):
    """Model 1 EM written plainly, one sentence pair and one target token at a time."""
    null = source_vocab
    t = np.full((source_vocab + 1, target_vocab), 1.0 / target_vocab)
    for _ in range(iterations):
        counts = np.zeros_like(t)
        for source, target in pairs:
            source = [*source, null]
            for f in target:
                weights = np.array([t[e, f] for e in source])
                for e, w in zip(source, weights / weights.sum(), strict=True):
                    counts[e, f] += w
        for e in range(source_vocab + 1):
            total = counts[e].sum()
            t[e] = counts[e] / total if total > 0 else 1.0 / target_vocab
    return t


@pytest.mark.parametrize("iterations, chunk", [(1, 100), (3, 100), (3, 2)])
def test_model1_table_equals_the_textbook_em(iterations, chunk):
    table = model1_translation_table(*ragged(PAIRS), SOURCE_VOCAB, TARGET_VOCAB, iterations,
                                     chunk=chunk)
    want = model1_by_loops(PAIRS, SOURCE_VOCAB, TARGET_VOCAB, iterations)
    np.testing.assert_allclose(table, want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(table.sum(axis=1), 1.0, rtol=1e-5)


def test_model1_learns_the_consistent_translations():
    table = model1_translation_table(*ragged(PAIRS), SOURCE_VOCAB, TARGET_VOCAB, 10)
    assert [int(table[word].argmax()) for word in (4, 5, 6)] == [10, 11, 12]
    np.testing.assert_allclose(table[7], 1.0 / TARGET_VOCAB)  # never seen: uniform


def test_model1_needs_as_many_sources_as_targets():
    source, target = ragged(PAIRS)
    with pytest.raises(ValueError, match="5 source sentences but 4 target"):
        model1_translation_table(source, target.take(np.arange(4)), SOURCE_VOCAB, TARGET_VOCAB)


def test_shortlist_keeps_frequent_words_and_best_translations():
    # Encoded sources end with EOS, which must not get a list of its own.
    pairs = [([*s, EOS_ID], t) for s, t in PAIRS]
    shortlist = build_shortlist(*ragged(pairs), SOURCE_VOCAB, TARGET_VOCAB,
                                frequent=2, per_source=2)
    counts = np.bincount(np.concatenate([t for _, t in PAIRS]), minlength=TARGET_VOCAB)
    assert sorted(shortlist.frequent.tolist()) == sorted(np.argsort(-counts, kind="stable")[:2])
    assert shortlist.translations.shape == (SOURCE_VOCAB, 2)
    assert shortlist.translations[4, 0] == 10 and shortlist.translations[5, 0] == 11
    for unseen in (*SPECIAL_IDS, 7):
        assert set(shortlist.translations[unseen]) == {EOS_ID}
    assert not set(shortlist.translations[4:7].ravel()) & set(SPECIAL_IDS)
    assert shortlist.settings == {"frequent": 2, "per_source_token": 2}


def test_shortlist_sizes_are_capped_by_the_vocabulary_and_checked():
    shortlist = build_shortlist(*ragged(PAIRS), SOURCE_VOCAB, TARGET_VOCAB,
                                frequent=100, per_source=100)
    assert shortlist.translations.shape == (SOURCE_VOCAB, TARGET_VOCAB)
    assert len(shortlist.frequent) == TARGET_VOCAB
    with pytest.raises(ValueError, match="per_source >= 1"):
        build_shortlist(*ragged(PAIRS), SOURCE_VOCAB, TARGET_VOCAB, per_source=0)
    with pytest.raises(ValueError, match="at least one sentence pair"):
        build_shortlist(*ragged([]), SOURCE_VOCAB, TARGET_VOCAB)
    with pytest.raises(ValueError, match="translations"):
        Shortlist(frequent=np.zeros((2, 2), np.int32), translations=np.zeros((3, 2), np.int32))


def small_lists() -> tuple[tf.Tensor, tf.Tensor]:
    """Frequent ids 9 and 20; source 5 -> 12, 9; source 6 -> 25, 7; others add nothing."""
    translations = np.full((30, 2), EOS_ID, np.int32)
    translations[5] = [12, 9]
    translations[6] = [25, 7]
    translations[PAD_ID] = [29, 28]  # padding positions must not count
    return tf.constant([9, 20], tf.int32), tf.constant(translations)


def test_batch_vocabulary_is_the_sorted_union_padded_with_pad():
    frequent, translations = small_lists()
    source = tf.constant([[5, 6, EOS_ID], [6, EOS_ID, PAD_ID]], tf.int32)
    allowed = sentence_vocabularies(frequent, translations, source, 30)
    got = batch_vocabulary(allowed, multiple=8).numpy()
    union = [*SPECIAL_IDS, 7, 9, 12, 20, 25]
    assert got.tolist()[: len(union)] == union
    assert len(got) == 16 and set(got[len(union):]) == {PAD_ID}
    assert got[list(SPECIAL_IDS)].tolist() == list(SPECIAL_IDS)  # positions equal ids
    assert batch_vocabulary(allowed).numpy().tolist() == union


def test_sentence_vocabularies_mark_each_sentences_own_list():
    frequent, translations = small_lists()
    source = tf.constant([[5, 6, EOS_ID], [6, EOS_ID, PAD_ID], [EOS_ID, PAD_ID, PAD_ID]])
    allowed = sentence_vocabularies(frequent, translations, source, 30)
    vocab = batch_vocabulary(allowed, multiple=8)
    got = tf.gather(allowed, vocab, axis=1).numpy()
    assert got.shape == (3, 16)
    common = {*SPECIAL_IDS, 9, 20}
    for row, own in zip(got, [common | {7, 12, 25}, common | {7, 25}, common], strict=True):
        assert {int(i) for i in vocab.numpy()[row]} == own
