"""Training speed by Keras backend: target tokens/s of the same model on the same batches.

One subprocess per backend (Keras fixes its backend at import), each timing
`training.accelerator.train.measure_speed`: the Keras trainer's step
(`train_on_batch`, compiled by the backend: XLA under JAX, `tf.function` under
TensorFlow) on the first batch shape of the shards' first epoch, the first step
(compilation) excluded; and `nmt train`'s own TensorFlow step
(`training.train.Trainer.train_step`) on the same batches. Backends that are
not installed are reported as such.

    python bench/train_speed_backends.py --config training/configs/en-fr-v10.yaml \\
        --shards ../runs/shards-en-fr-v10 --steps 10 --set optim.max_tokens=6000
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BACKENDS = ("tensorflow", "jax", "torch")


def child(args) -> None:
    """Runs in the backend's own process: prints one JSON line of figures."""
    from training.accelerator.train import measure_speed, overrides_of

    overrides = overrides_of(args.set)
    if args.child == "nmt-train":
        print(json.dumps(time_nmt_train_step(args, overrides)))
        return
    results = measure_speed(args, overrides, args.steps, precisions=(args.precision,))
    print(json.dumps(results[args.precision]))


def time_nmt_train_step(args, overrides: dict) -> dict:
    """`nmt train`'s own step (`training.train.Trainer.train_step`, TensorFlow) on the
    batches `measure_speed` times: the first batch's shape, first step excluded."""
    import itertools
    import time

    import tensorflow as tf

    from nmt.data import shards
    from nmt.data.tokenizer import SubwordTokenizer, TokenizerPair
    from training.config import load_config
    from training.keras_trainer import KerasTrainer
    from training.train import Trainer

    cfg = load_config(args.config, {**overrides, "optim.precision": args.precision})
    with tempfile.TemporaryDirectory() as tmp:
        batches = KerasTrainer(cfg, args.shards, Path(tmp) / "keras").batches()
        first = next(batches)
        same = [first, *itertools.islice(
            (b for b in batches if b[0].shape == first[0].shape), args.steps - 1)]
        info = shards.read_manifest(args.shards)["tokenizers"]
        model = str(Path(args.shards) / info["source"]["file"])
        tokenizers = TokenizerPair(SubwordTokenizer.from_file(model, "en"),
                                   SubwordTokenizer.from_file(model, "fr"), joint=True)
        trainer = Trainer(cfg, Path(tmp) / "tf", tokenizers, corpus=None, dev_pairs=[])
        started = time.monotonic()
        trainer.train_step(first[:2], first[2])[0].numpy()
        compile_s = time.monotonic() - started
        started = time.monotonic()
        for source, target_in, target_out in same:
            trainer.train_step((tf.constant(source), tf.constant(target_in)),
                               tf.constant(target_out))[0].numpy()
        seconds = time.monotonic() - started
        trainer.writer.close()
    tokens = sum(int((b[2] > 0).sum()) for b in same)
    return {"batch_shape": list(first[0].shape), "steps": len(same),
            "target_tokens_per_s": tokens / seconds,
            "padded_tokens_per_s": sum(b[2].size for b in same) / seconds,
            "seconds_per_step": seconds / len(same), "first_step_s": compile_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="training/configs/en-fr-v10.yaml")
    parser.add_argument("--shards", required=True, help="a shards directory (`nmt shards`)")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per backend")
    parser.add_argument("--precision", default="float32",
                        choices=("float32", "mixed_bfloat16"))
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    from training.machine import cpu_model

    print(f"machine: {cpu_model()}, {os.cpu_count()} cores; config {args.config} "
          f"{' '.join(args.set)}; {args.precision}; {args.steps} timed steps")
    print("| trainer | batch (rows × length) | target tokens/s | padded tokens/s | "
          "s/step | first step (compile) s |\n|---|---|---:|---:|---:|---:|")
    runs = [("tensorflow", "nmt-train", "TensorFlow, `nmt train`'s step")] + [
        (backend, "keras", f"{backend}, Keras trainer") for backend in args.backends]
    for backend, trainer, label in runs:
        if importlib.util.find_spec(backend) is None:
            print(f"| {label} | not installed | | | | |")
            continue
        command = [sys.executable, __file__, f"--child={trainer}", "--config", args.config,
                   "--shards", args.shards, "--steps", str(args.steps),
                   "--precision", args.precision, *(f"--set={pair}" for pair in args.set)]
        env = {**os.environ, "KERAS_BACKEND": backend, "JAX_PLATFORMS": "cpu",
               "TF_CPP_MIN_LOG_LEVEL": "3"}
        with tempfile.TemporaryDirectory():
            result = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True)
        if result.returncode:
            print(f"| {label} | failed: {result.stderr.strip().splitlines()[-1]} | | | | |")
            continue
        r = json.loads(result.stdout.strip().splitlines()[-1])
        rows, length = r["batch_shape"]
        print(f"| {label} | {rows} × {length} | {r['target_tokens_per_s']:,.0f} | "
              f"{r['padded_tokens_per_s']:,.0f} | {r['seconds_per_step']:.2f} | "
              f"{r['first_step_s']:.1f} |")


if __name__ == "__main__":
    main()
