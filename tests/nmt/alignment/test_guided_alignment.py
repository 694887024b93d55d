"""Guided-alignment gold matrices and losses against NumPy references."""

import numpy as np
import pytest
import tensorflow as tf

from nmt.alignment.guided_alignment import guided_alignment_loss, two_way_alignment_loss
from nmt.data.datasets import gold_alignment_matrix


def softmax_rows(logits):
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def reference_loss(attention, gold, kind):
    """The docstring's formula, written out per row."""
    total, rows = 0.0, 0
    for b in range(gold.shape[0]):
        for t in range(gold.shape[1]):
            mass = gold[b, t].sum()
            if mass == 0:
                continue
            q = gold[b, t] / mass
            a = attention[b, t]
            total += -(q * np.log(a + 1e-6)).sum() if kind == "ce" else ((a - q) ** 2).sum()
            rows += 1
    return total / max(rows, 1)


@pytest.fixture
def example():
    rng = np.random.default_rng(3)
    attention = softmax_rows(rng.normal(size=(2, 4, 5))).astype(np.float32)  # (batch, T, S)
    gold = np.zeros((2, 4, 5), np.float32)
    gold[0, 0, 1] = gold[0, 1, 0] = gold[0, 1, 2] = gold[0, 2, 3] = 1  # row 3 (EOS) free
    gold[1, 0, 0] = gold[1, 2, 2] = 1  # row 1 unaligned, row 3 free
    return attention, gold


@pytest.mark.parametrize("kind", ["ce", "mse"])
def test_loss_matches_numpy(example, kind):
    attention, gold = example
    loss = guided_alignment_loss(tf.constant(attention), tf.constant(gold), kind)
    np.testing.assert_allclose(float(loss), reference_loss(attention, gold, kind), rtol=1e-5)


def test_rows_without_links_are_free(example):
    attention, gold = example
    changed = attention.copy()
    changed[1, 1] = softmax_rows(np.arange(5.0))  # unaligned row
    changed[:, 3] = softmax_rows(np.ones(5))  # EOS rows
    before = guided_alignment_loss(tf.constant(attention), tf.constant(gold))
    after = guided_alignment_loss(tf.constant(changed), tf.constant(gold))
    assert float(before) == pytest.approx(float(after))


def test_perfect_attention_scores_lowest(example):
    _, gold = example
    perfect = gold / np.maximum(gold.sum(-1, keepdims=True), 1)
    uniform = np.full_like(gold, 1 / 5)
    for kind in ("ce", "mse"):
        low = float(guided_alignment_loss(tf.constant(perfect), tf.constant(gold), kind))
        high = float(guided_alignment_loss(tf.constant(uniform), tf.constant(gold), kind))
        assert low < high


def test_loss_is_float32_under_bfloat16(example):
    attention, gold = example
    loss = guided_alignment_loss(tf.constant(attention, tf.bfloat16), tf.constant(gold))
    assert loss.dtype == tf.float32
    np.testing.assert_allclose(float(loss), reference_loss(attention, gold, "ce"), rtol=2e-2)


def test_no_links_gives_zero():
    attention = tf.fill([1, 2, 3], 1 / 3)
    assert float(guided_alignment_loss(attention, tf.zeros([1, 2, 3]))) == 0.0


def test_unknown_type_is_refused():
    with pytest.raises(ValueError, match="Received: loss_type='kl'"):
        guided_alignment_loss(tf.ones([1, 1, 1]), tf.ones([1, 1, 1]), "kl")


def test_gold_matrix_from_links():
    # Example 0: links 0-0, 2-1, 2-1 again, and 9-0 beyond the source; example 1: none.
    links = tf.ragged.constant([[0, 0, 2, 1, 2, 1, 9, 0], []], dtype=tf.int32)
    gold = gold_alignment_matrix(links, 3, 4).numpy()  # (batch, T, S)
    expected = np.zeros((2, 3, 4), np.float32)
    expected[0, 0, 0] = expected[0, 1, 2] = 1
    np.testing.assert_array_equal(gold, expected)


@pytest.mark.parametrize("kind", ["ce", "mse"])
def test_two_way_loss_adds_the_columns_loss(example, kind):
    rows, gold = example
    rng = np.random.default_rng(4)
    columns = softmax_rows(rng.normal(size=(2, 5, 4))).transpose(0, 2, 1).astype(np.float32)
    loss = two_way_alignment_loss(tf.constant(rows), tf.constant(columns), tf.constant(gold),
                                  kind)
    # The columns' reference: each source piece's links over the target, written out.
    total, count = 0.0, 0
    for b in range(2):
        for s in range(5):
            mass = gold[b, :, s].sum()
            if mass:
                q, a = gold[b, :, s] / mass, columns[b, :, s]
                total += -(q * np.log(a + 1e-6)).sum() if kind == "ce" else ((a - q) ** 2).sum()
                count += 1
    expected = reference_loss(rows, gold, kind) + total / count
    np.testing.assert_allclose(float(loss), expected, rtol=1e-5)
