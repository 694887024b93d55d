"""Builds the exportable `TranslationModule` from a training run directory."""

from __future__ import annotations

import json
from pathlib import Path

import keras
import tensorflow as tf

from nmt.export import TranslationModule
from nmt.model import Seq2Seq
from nmt.tokenizer import TokenizerPair
from training.config import load_config
from training.train import model_config, restore_best


def module_from_run(run_dir: Path, metadata: dict | None = None) -> TranslationModule:
    """A float32 model with the run's best dev-BLEU weights (latest if none yet)."""
    if not (run_dir / "config.yaml").exists():
        raise FileNotFoundError(f"{run_dir} is not a training run (no config.yaml)")
    cfg = load_config(run_dir / "config.yaml")
    tokenizers = TokenizerPair.load(run_dir / "tokenizer")
    keras.mixed_precision.set_global_policy("float32")  # serve in float32 on any device
    model = Seq2Seq(model_config(cfg, tokenizers))
    model.build_for()
    if not restore_best(model, run_dir):
        latest = tf.train.latest_checkpoint(str(run_dir / "checkpoints"))
        if latest is None:
            raise FileNotFoundError(f"{run_dir} has no checkpoint to export yet")
        tf.train.Checkpoint(weights=list(model.weights)).read(latest).expect_partial()
    summary_path = run_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    summary.pop("model_config", None)
    info = {"name": cfg.name, "attention": model.config.describe(), "training": summary,
            **(metadata or {})}
    return TranslationModule(model, tokenizers, info)
