"""Guided alignment and the alignment head on any Keras backend.

`AlignmentTraining` wraps a `Seq2Seq` for `train_on_batch` when a run learns
from word links: its loss is `nmt train`'s (`training.train.Trainer.train_step`),

    translation + guided_alignment.weight × guided + alignment_head.weight × head,

with the guided term on the decoder's attention (`guided_alignment.type`) and
the head term on the alignment head's rows, or on both its directions with
agreement (`nmt.alignment.guided_alignment`). A frozen head
(`alignment_head.train: frozen`) learns alone: `freeze_all_but_head` leaves the
head's weights the only trainable ones, the model runs as it translates (no
dropout, no logits), and the loss is the head's, so translations stay
byte-identical.
"""

from __future__ import annotations

import keras
from keras import ops

from nmt.alignment.guided_alignment import guided_alignment_loss, two_way_alignment_loss
from nmt.model import Seq2Seq, sequence_loss
from training.config import TrainConfig


def head_weights(model: Seq2Seq) -> list:
    """The alignment head's weights (empty without a head)."""
    return [w for layer in model.decoder.head_layers for w in layer.weights]


def freeze_all_but_head(model: Seq2Seq) -> None:
    """Makes every weight but the alignment head's non-trainable."""
    head = {id(w) for w in head_weights(model)}
    if not head:
        raise ValueError("alignment_head.train: frozen needs a model with an alignment head "
                         "(model.alignment_head)")
    for weight in model.weights:
        if id(weight) not in head:
            weight.trainable = False


class AlignmentTraining(keras.Model):
    """Trains `model` on `(source, target_in, target_out)` with targets `(target_out, gold)`:
    gold is float32 `(batch, T, S)`, 1 at the word links (`nmt.data.shards.gold_alignment`).

    Args:
        model: the built `Seq2Seq` being trained (its weights are shared).
        cfg: the run's config: `guided_alignment`, `alignment_head`.
    """

    def __init__(self, model: Seq2Seq, cfg: TrainConfig, **kwargs):
        super().__init__(**kwargs)
        self.model = model
        self.guide = cfg.guided_alignment
        self.head = cfg.alignment_head
        self.frozen = cfg.has_head and self.head.frozen
        if self.frozen:
            freeze_all_but_head(model)

    def call(self, inputs, training=False):
        source, target_in, target_out = inputs
        # A frozen model runs as it translates: no dropout, and no logits to compute.
        return self.model.teacher_forced(source, target_in, target_out,
                                         training=training and not self.frozen,
                                         project=not self.frozen)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        target_out, gold = y
        total = ops.convert_to_tensor(0.0, "float32")
        if not self.frozen:
            total = sequence_loss(target_out, y_pred["logits"], self.model.config.label_smoothing)
            if self.guide.enabled:
                total = total + self.guide.weight * guided_alignment_loss(
                    y_pred["attention"], gold, self.guide.type)
        if "head_columns" in y_pred:  # agreement: both directions
            total = total + self.head.weight * two_way_alignment_loss(
                y_pred["head_rows"], y_pred["head_columns"], gold, self.head.type)
        elif "head" in y_pred:
            total = total + self.head.weight * guided_alignment_loss(
                y_pred["head"], gold, self.head.type)
        return total

    def build_for(self) -> None:
        """Runs once on dummy ids, so that `train_on_batch` finds the model built."""
        ids = ops.ones((2, 3), "int32")
        self((ids, ids, ids))
