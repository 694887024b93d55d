"""Trains the translation model from shards on any Keras backend and hands back its weights.

The one script a GPU host, Colab or Kaggle runs (JAX or PyTorch, no TensorFlow
needed), from a checkout and a shards directory (`nmt shards`):

    python -m training.accelerator.train --config training/configs/en-fr-v10.yaml \\
        --shards ../runs/shards-en-fr-v10 --run ../runs/en-fr-v10 --backend jax \\
        --max-time 8m --speed-steps 20 --out ../runs/en-fr-v10-out

With `--speed-steps N` it first measures target tokens/s in float32 and
mixed_bfloat16 on the same batches (compilation excluded) and trains in the
faster precision unless `--precision` says which. At the end `--out` receives
the mean of the last `--average` checkpoints cut into parts of at most 15 MiB
(`training.weight_files.save_parts`), `history.jsonl`, `summary.json` and
`speed.json`; on a CPU with TensorFlow, `python -m training.accelerator.import_weights`
turns them into a run directory that `nmt export --run` exports.

A config with guided alignment or an alignment head needs the word links of
the shards' training pairs, `--alignments FILE` (`nmt align-corpus`); a frozen
head trains on `--init-weights` (a model without a head: the head starts afresh).
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

PRECISIONS = ("float32", "mixed_bfloat16")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True, help="training config (YAML)")
    parser.add_argument("--shards", required=True, help="shards directory (`nmt shards`)")
    parser.add_argument("--run", required=True, help="run directory (checkpoints, history)")
    parser.add_argument("--backend", choices=("jax", "torch", "tensorflow"),
                        default=os.environ.get("KERAS_BACKEND", "jax"))
    parser.add_argument("--max-time", default=None,
                        help="training time, e.g. 8m (default: the config's optim.max_time)")
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--precision", choices=PRECISIONS, default=None,
                        help="default: the faster one measured, else the config's")
    parser.add_argument("--speed-steps", type=int, default=0,
                        help="measure tokens/s over this many steps per precision first")
    parser.add_argument("--dev-translate", type=int, default=200,
                        help="dev pairs per domain translated (greedy) at each evaluation "
                             "for BLEU/chrF (0: none)")
    parser.add_argument("--average", type=int, default=3,
                        help="checkpoints averaged into the weights handed back")
    parser.add_argument("--out", default=None, help="directory for the weights and logs")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--init-weights", default=None,
                        help="start from these weights: a `--out` directory's weights/ "
                             "(training.weight_files), e.g. a previous phase's")
    parser.add_argument("--alignments", default=None,
                        help="word links of the shards' training pairs, a Pharaoh line per pair "
                             "(`nmt align-corpus`), for guided alignment or an alignment head "
                             "(default: the config's data.train_alignments)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="config override, e.g. optim.max_tokens=24000 (repeatable)")
    return parser.parse_args(argv)


def overrides_of(pairs) -> dict:
    import yaml

    result = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--set takes KEY=VALUE, e.g. optim.max_tokens=24000. Got {pair!r}")
        result[key] = yaml.safe_load(value)
    return result


def measure_speed(args, overrides: dict, steps: int, precisions=PRECISIONS) -> dict:
    """Target tokens/s of each precision on the same batches of one shape (`args.config`,
    `args.shards`); bench/train_speed_backends.py runs it on each backend."""
    from training.keras_trainer import make_trainer

    results = {}
    for precision in precisions:
        with tempfile.TemporaryDirectory() as tmp:
            trainer = make_trainer(args.config, args.shards, Path(tmp) / "run",
                                   {**overrides, "optim.precision": precision},
                                   alignments=args.alignments)
            batches = trainer.batches()
            first = next(batches)
            same = [first, *itertools.islice(
                (b for b in batches if b[0].shape == first[0].shape), steps - 1)]
            started = time.monotonic()
            trainer.train_step(first)
            compile_s = time.monotonic() - started
            started = time.monotonic()
            for batch in same:
                trainer.train_step(batch)
            seconds = time.monotonic() - started
            tokens = sum(int((b[2] > 0).sum()) for b in same)
            padded = sum(b[2].size for b in same)
            results[precision] = {
                "batch_shape": list(first[0].shape), "steps": len(same),
                "target_tokens_per_s": tokens / seconds,
                "padded_tokens_per_s": padded / seconds,
                "seconds_per_step": seconds / len(same), "first_step_s": compile_s}
            logging.info("%s: %.0f target tokens/s (%s steps of %s; first step %.1f s)",
                         precision, tokens / seconds, len(same), first[0].shape, compile_s)
    return results


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ["KERAS_BACKEND"] = args.backend  # before Keras is imported
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stdout)
    import keras

    if keras.backend.backend() != args.backend:
        raise SystemExit(f"Keras was imported with the {keras.backend.backend()} backend before "
                         f"--backend {args.backend} could choose it: start the command with "
                         f"KERAS_BACKEND={args.backend} set")

    from training.config import parse_duration
    from training.keras_trainer import checkpoint_step, device_name, make_trainer
    from training.weight_files import average_checkpoints, save_parts

    started = time.monotonic()
    logging.info("keras %s on %s, %s", keras.__version__, args.backend, device_name())
    overrides = overrides_of(args.set)
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    speed = {}
    if args.speed_steps:
        speed = measure_speed(args, overrides, args.speed_steps)
        speed = {"backend": args.backend, "device": device_name(), "precisions": speed}
        if out:
            (out / "speed.json").write_text(json.dumps(speed, indent=2) + "\n")
    precision = args.precision
    if precision is None and speed:
        precision = max(speed["precisions"],
                        key=lambda p: speed["precisions"][p]["target_tokens_per_s"])
    if precision:
        overrides["optim.precision"] = precision
    trainer = make_trainer(args.config, args.shards, args.run, overrides, resume=args.resume,
                           dev_translate=args.dev_translate, alignments=args.alignments)
    if trainer.frozen and not (args.init_weights or args.resume):
        raise SystemExit("alignment_head.train: frozen trains a head on a trained model's "
                         "weights: pass --init-weights DIR (a --out directory's weights/)")
    if args.init_weights and not args.resume:
        trainer.start_from(args.init_weights)
        logging.info("started from the weights in %s", args.init_weights)
    max_time = parse_duration(args.max_time) if args.max_time else None
    if max_time:
        max_time = max(60.0, max_time - (time.monotonic() - started))

    def hand_back_latest(current) -> None:
        # The latest weights as they are, replaced by the average at the end: a job
        # killed before its end still hands back what it trained.
        save_parts(current.model, out / "weights", metadata={
            "steps": [current.position.step], "model_config": current.model_config.to_dict()})

    summary = trainer.fit(max_steps=args.max_steps, max_time=max_time,
                          on_checkpoint=hand_back_latest if out else None)
    summary["speed"] = speed
    (trainer.run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    logging.info("stopped (%s) at step %d, epoch %d", summary["stop"], summary["steps"],
                 summary["epochs"])
    if out:
        keras.mixed_precision.set_global_policy("float32")
        checkpoints = sorted((trainer.run_dir / "checkpoints").glob("step-*.weights.h5"),
                             key=checkpoint_step)[-args.average:]
        from nmt.model import Seq2Seq

        model = Seq2Seq(trainer.model_config)
        model.build_for()
        average_checkpoints(model, checkpoints)
        save_parts(model, out / "weights", metadata={
            "steps": [checkpoint_step(p) for p in checkpoints],
            "model_config": trainer.model_config.to_dict()})
        for name in ("history.jsonl", "summary.json", "config.yaml"):
            shutil.copyfile(trainer.run_dir / name, out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
