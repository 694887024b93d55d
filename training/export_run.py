"""Builds the exportable `TranslationModule` from a training run directory."""

from __future__ import annotations

import json
from pathlib import Path

import keras
import tensorflow as tf

from nmt.data.tokenizer import TokenizerPair
from nmt.inference.export import TranslationModule, build_module
from nmt.model import Seq2Seq
from training.config import load_config
from training.run_files import model_config, restore_best


def module_from_run(run_dir: Path, metadata: dict | None = None,
                    average: int = 0, precision: str = "float32") -> TranslationModule:
    """A model of a run: its best dev-BLEU weights (latest if none yet), or, with
    `average=N`, the mean of its last N checkpoints; computing in `precision`
    (see `nmt.inference.export.build_module`). Its metadata holds the run's summary
    (`training`) and, for a distilled run, the teacher (`distillation`)."""
    if not (run_dir / "config.yaml").exists():
        raise FileNotFoundError(f"{run_dir} is not a training run (no config.yaml)")
    cfg = load_config(run_dir / "config.yaml")
    tokenizers = TokenizerPair.load(run_dir / "tokenizer")
    keras.mixed_precision.set_global_policy("float32")  # whatever the run trained in
    module = build_module(model_config(cfg, tokenizers), tokenizers, precision=precision)
    model = module.model
    weights: dict = {}
    if average:
        weights["averaged_checkpoints"] = average_checkpoints(model, run_dir, average)
    elif not restore_best(model, run_dir):
        latest = tf.train.latest_checkpoint(str(run_dir / "checkpoints"))
        if latest is None:
            raise FileNotFoundError(f"{run_dir} has no checkpoint to export yet")
        tf.train.Checkpoint(weights=list(model.weights)).read(latest).expect_partial()
    summary_path = run_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    summary.pop("model_config", None)
    # A distilled run's teacher and the decoding that made its data (`training.distill`).
    distillation = summary.pop("distillation", None)
    module.metadata.update({
        "name": cfg.name, "attention": model.config.architecture_name(), "training": summary,
        **({"distillation": distillation} if distillation else {}), **weights,
        **(metadata or {}),
    })
    return module


def average_checkpoints(model: Seq2Seq, run_dir: Path, count: int) -> list[int]:
    """Sets `model`'s weights to the mean of the run's last `count` checkpoints.

    Returns:
        The steps of the checkpoints averaged, oldest first.

    Raises:
        ValueError: fewer checkpoints are kept than asked for.
    """
    state = tf.train.get_checkpoint_state(str(run_dir / "checkpoints"))
    paths = list(state.all_model_checkpoint_paths) if state else []
    if count < 1 or count > len(paths):
        raise ValueError(
            f"--average must be between 1 and the {len(paths)} checkpoints kept in "
            f"{run_dir / 'checkpoints'} (optim.keep_checkpoints). Received: {count}"
        )
    chosen = paths[-count:]
    reader = tf.train.Checkpoint(weights=list(model.weights))
    total = None
    for path in chosen:
        reader.read(path).expect_partial().assert_existing_objects_matched()
        values = [w.numpy().astype("float64") for w in model.weights]
        total = values if total is None else [t + v for t, v in zip(total, values, strict=True)]
    for weight, value in zip(model.weights, total, strict=True):
        dtype = keras.backend.standardize_dtype(weight.dtype)
        weight.assign((value / len(chosen)).astype(dtype))
    return [int(path.rsplit("-", 1)[-1]) for path in chosen]
