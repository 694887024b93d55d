"""Training throughput: target tokens/s and the fraction of matrix-multiply peak.

Runs the training step of `nmt train` (`training.train.Trainer.train_step`:
the config's optimizer, schedule, clipping, precision and distribution
strategy) on real batches of the training data and
prints tokens/s, the model's FLOPs per target token (counted from its shapes,
forward and backward), the achieved FLOP rate, and the machine's measured
matrix-multiply peak in float32 and bfloat16 for comparison.

    python bench/train_speed.py --config training/configs/en-fr.yaml [--steps 30]
        [--precision mixed_bfloat16|float32]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tensorflow as tf  # noqa: E402

from bench.flops import forward_macs, matmul_peak  # noqa: E402
from nmt.data.corpus import read_pairs  # noqa: E402
from nmt.data.datasets import make_train_dataset  # noqa: E402
from nmt.data.encoding import encode_pairs  # noqa: E402
from nmt.data.tokenizer import train_tokenizers  # noqa: E402
from training.config import load_config, parse_overrides  # noqa: E402
from training.machine import cpu_model  # noqa: E402
from training.train import Trainer  # noqa: E402


def time_steps(trainer: Trainer, batches: list) -> tuple[float, float, float]:
    """Runs `trainer.train_step` on `batches` (the first 5 untimed).

    Returns:
        `(seconds, target tokens, forward multiply-adds)` of the timed steps.
    """
    for inputs, target_out in batches[:5]:  # warm-up and tracing
        trainer.train_step(inputs, target_out)[0].numpy()
    config = trainer.model.config
    tokens = macs = 0.0
    started = time.perf_counter()
    for (source, target_in), target_out in batches[5:]:
        trainer.train_step((source, target_in), target_out)[0].numpy()
        tokens += float(tf.reduce_sum(tf.cast(target_out > 0, tf.float32)))
        batch, s_len = source.shape
        macs += batch * forward_macs(config, s_len, target_in.shape[1])
    return time.perf_counter() - started, tokens, macs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="training/configs/en-fr.yaml")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--precision", help="override the config's precision")
    parser.add_argument("--pairs", type=int, default=40000, help="training pairs to tokenize")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override a config value, e.g. model.input_feeding=true")
    args = parser.parse_args()

    overrides = parse_overrides(args.set)
    if args.precision:
        overrides["optim.precision"] = args.precision
    cfg = load_config(args.config, overrides)
    precision = cfg.optim.precision
    pairs = read_pairs(cfg.data.train)[: args.pairs]
    tokenizers = train_tokenizers(pairs, cfg.tokenizer.vocab_size, joint=cfg.tokenizer.joint)
    corpus = encode_pairs(pairs, tokenizers)
    batches = list(make_train_dataset(
        corpus, max_tokens=cfg.optim.max_tokens, seed=1, epoch=0).take(args.steps + 5))

    with tempfile.TemporaryDirectory(prefix="nmt-train-speed-") as run_dir:
        # The trainer of `nmt train`, so the step timed is the one training runs.
        trainer = Trainer(cfg, Path(run_dir), tokenizers, corpus, dev_pairs=[])
        seconds, tokens, macs = time_steps(trainer, batches)
        trainer.writer.close()  # its (empty) TensorBoard log is in run_dir
    config = trainer.model.config
    flops = 3 * 2 * macs  # forward + backward (about twice the forward)
    peak32, peak16 = matmul_peak(tf.float32), matmul_peak(tf.bfloat16)
    peak = peak16 if "bfloat16" in precision else peak32
    achieved = flops / seconds / 1e9
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, "
          f"TensorFlow {tf.__version__}")
    print(f"config: {config.architecture_name()}, {trainer.model.count_params():,} parameters, "
          f"{precision}")
    print("| target tokens/s | sentence pairs/s | GFLOP/s achieved | matmul peak GFLOP/s "
          "(f32 / bf16) | fraction of peak |\n|---|---|---|---|---|")
    sentences = sum(int(t.shape[0]) for (_, t), _ in batches[5:])
    print(f"| {tokens / seconds:,.0f} | {sentences / seconds:,.0f} | {achieved:,.0f} | "
          f"{peak32:,.0f} / {peak16:,.0f} | {achieved / peak:.0%} |")


if __name__ == "__main__":
    main()
