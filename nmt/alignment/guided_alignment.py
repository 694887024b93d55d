"""Guided alignment: supervising attention with word alignments.

Training can add a loss that pulls the decoder's attention towards given
alignment links (Chen et al. 2016, "Guided Alignment Training for
Topic-Aware Neural Machine Translation"; Garg et al. 2019), as OpenNMT-tf's
`guided_alignment_type` and Marian's `--guided-alignment` do.

Step convention. Links are pairs (i, j) of 0-based subword positions: i a
piece of the source (the encoder's column i), j a piece of the target
without BOS or EOS. Attention row j is the attention of the decoder step
that predicts target piece j (the step whose input is piece j - 1, or BOS
for j = 0), so row j is matched to the links of target piece j. The row of
the end-of-sentence step, the source end-of-sentence column and padding
carry no links; a target piece without links (an unaligned word) leaves
its row free, as padding does.
"""

from __future__ import annotations

import tensorflow as tf

GUIDED_ALIGNMENT_TYPES = ("ce", "mse")
_EPSILON = 1e-6


def gold_alignment_matrix(links, target_length, source_length):
    """Dense 0/1 gold matrices from per-example link lists.

    Args:
        links: int `tf.RaggedTensor` `(batch, None)`: each row is the flat
            list `[i0, j0, i1, j1, ...]` of (source piece, target piece)
            links of one example.
        target_length: T of the batch (decoder steps, EOS included).
        source_length: S of the batch (source pieces, EOS included).

    Returns:
        float32 `(batch, T, S)`: 1 where a link is, 0 elsewhere. Links
        beyond `(T, S)` are ignored.
    """
    links = tf.cast(links, tf.int32)
    pairs = tf.reshape(links.flat_values, [-1, 2])  # (links, 2) as (i, j)
    rows = tf.cast(links.value_rowids()[::2], tf.int32)  # (links,) example of each link
    inside = (pairs[:, 0] < source_length) & (pairs[:, 1] < target_length)
    indices = tf.stack([rows, pairs[:, 1], pairs[:, 0]], axis=1)  # (links, 3) as (b, t, s)
    indices = tf.boolean_mask(indices, inside)
    shape = tf.stack([links.nrows(out_type=tf.int32), target_length, source_length])
    counts = tf.scatter_nd(indices, tf.ones([tf.shape(indices)[0]], tf.float32), shape)
    return tf.minimum(counts, 1.0)  # a repeated link counts once


def guided_alignment_loss(attention, gold, loss_type: str = "ce"):
    """Distance between attention and gold alignment rows, averaged over linked rows.

    Each gold row is scaled to sum to 1 (a target piece linked to k source
    pieces gives each 1/k), giving the target distribution q_t. Per row:
    `ce`: -sum_s q_ts log(a_ts + 1e-6) (Marian's and OpenNMT's `ce`);
    `mse`: sum_s (a_ts - q_ts)^2. The loss is the mean over rows that have
    at least one link; rows without links (EOS, padding, unaligned pieces)
    add nothing. Computed in float32 whatever the attention's dtype.

    Args:
        attention: float `(batch, T, S)`, rows summing to 1 over S.
        gold: float `(batch, T, S)`, 1 at links (see `gold_alignment_matrix`).
        loss_type: `"ce"` or `"mse"`.

    Returns:
        Scalar float32 loss (0 when no row has a link).
    """
    if loss_type not in GUIDED_ALIGNMENT_TYPES:
        raise ValueError(
            f"loss_type must be one of {GUIDED_ALIGNMENT_TYPES}. Received: loss_type={loss_type!r}"
        )
    attention = tf.cast(attention, tf.float32)
    gold = tf.cast(gold, tf.float32)
    mass = tf.reduce_sum(gold, axis=-1, keepdims=True)  # (batch, T, 1)
    target = gold / tf.maximum(mass, 1.0)  # (batch, T, S) rows sum to 1 or 0
    linked = tf.cast(mass[..., 0] > 0, tf.float32)  # (batch, T)
    if loss_type == "ce":
        per_row = -tf.reduce_sum(target * tf.math.log(attention + _EPSILON), axis=-1)
    else:
        per_row = tf.reduce_sum(tf.square(attention - target), axis=-1)  # (batch, T)
    return tf.reduce_sum(per_row * linked) / tf.maximum(tf.reduce_sum(linked), 1.0)


def two_way_alignment_loss(rows, columns, gold, loss_type: str = "ce"):
    """`guided_alignment_loss` of an aligner that scores both directions.

    The rows p(s|t) are matched to the gold rows as `guided_alignment_loss`
    does, the columns p(t|s) to the gold columns (each source piece's links,
    scaled to sum to 1); source pieces without links add nothing. The loss
    is the sum of the two directions' losses.

    Args:
        rows: float `(batch, T, S)`, each row summing to 1 over S.
        columns: float `(batch, T, S)`, each column summing to 1 over T.
        gold: float `(batch, T, S)`, 1 at links.
        loss_type: `"ce"` or `"mse"`.

    Returns:
        Scalar float32 loss.
    """
    transpose = lambda matrix: tf.linalg.matrix_transpose(tf.cast(matrix, tf.float32))  # noqa: E731
    return (guided_alignment_loss(rows, gold, loss_type)
            + guided_alignment_loss(transpose(columns), transpose(gold), loss_type))
