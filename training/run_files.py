"""What a run directory of `nmt train` gives back: its model's config and its best weights.

`training.train` writes run directories and `training.export_run` reads them; both
import this module, and neither imports the other at import time.
"""

from __future__ import annotations

from pathlib import Path

import tensorflow as tf

from nmt.data.tokenizer import TokenizerPair
from nmt.model import ModelConfig, Seq2Seq
from training.config import TrainConfig


def model_config(cfg: TrainConfig, tokenizers: TokenizerPair) -> ModelConfig:
    return ModelConfig.from_dict({
        **cfg.model,
        "source_vocab_size": tokenizers.source.vocab_size,
        "target_vocab_size": tokenizers.target.vocab_size,
    })


def restore_best(model: Seq2Seq, run_dir: Path) -> bool:
    """Loads the best dev-BLEU weights of a run into `model` (False if none yet)."""
    path = run_dir / "best" / "weights"
    if not tf.io.gfile.glob(str(path) + "*"):
        return False
    tf.train.Checkpoint(weights=list(model.weights)).read(str(path)).assert_existing_objects_matched()
    return True
