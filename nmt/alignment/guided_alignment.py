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

from keras import ops

GUIDED_ALIGNMENT_TYPES = ("ce", "mse")
_EPSILON = 1e-6


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
        gold: float `(batch, T, S)`, 1 at links (`nmt.data.datasets.gold_alignment_matrix`).
        loss_type: `"ce"` or `"mse"`.

    Returns:
        Scalar float32 loss (0 when no row has a link).
    """
    if loss_type not in GUIDED_ALIGNMENT_TYPES:
        raise ValueError(
            f"loss_type must be one of {GUIDED_ALIGNMENT_TYPES}. Received: loss_type={loss_type!r}"
        )
    attention = ops.cast(attention, "float32")
    gold = ops.cast(gold, "float32")
    mass = ops.sum(gold, axis=-1, keepdims=True)  # (batch, T, 1)
    target = gold / ops.maximum(mass, 1.0)  # (batch, T, S) rows sum to 1 or 0
    linked = ops.cast(ops.greater(mass[..., 0], 0), "float32")  # (batch, T)
    if loss_type == "ce":
        per_row = -ops.sum(target * ops.log(attention + _EPSILON), axis=-1)
    else:
        per_row = ops.sum(ops.square(attention - target), axis=-1)  # (batch, T)
    return ops.sum(per_row * linked) / ops.maximum(ops.sum(linked), 1.0)


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
    transpose = lambda matrix: ops.swapaxes(ops.cast(matrix, "float32"), -1, -2)  # noqa: E731
    return (guided_alignment_loss(rows, gold, loss_type)
            + guided_alignment_loss(transpose(columns), transpose(gold), loss_type))
