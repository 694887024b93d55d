"""Turns what `training.accelerator.train --out` handed back into a run directory.

On a machine with TensorFlow:

    python -m training.accelerator.import_weights --from ../runs/en-fr-v10-out \\
        --shards ../runs/shards-en-fr-v10 --run ../runs/en-fr-v10
    nmt export --run ../runs/en-fr-v10 --out models/en-fr --version 10

The run directory gets the config, the shards' SentencePiece models as its
tokenizer, the history and summary, and the weights as the run's best
(`<run>/best/weights`, the checkpoint `nmt export --run` and `init_from` read).

The run directory is written as `nmt train` writes one, so that a model card
follows the chain of runs through it (`training.model_card_data.run_chain`):
its config's data paths relative to the run (`--corpus`: where the corpus is
on this machine), its config's `init_from` naming the imported run it
started from (`--after`), and its summary with `nmt train`'s keys: the name,
`train_seconds` over every part of a resumed run (`--parts`: the `--out`
directories of earlier parts, for runs whose summary counted the last part
alone), `epochs_completed`, and `starting_model` (`--after`'s summary).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

import yaml


def import_weights(source: Path, shards_dir: Path, run_dir: Path, *, corpus: Path | None = None,
                   after: Path | None = None, parts: tuple[Path, ...] = ()) -> Path:
    """Writes the run directory; returns the weights' checkpoint prefix.

    Args:
        corpus: the directory of the training corpus (`train.tsv`, `dev.tsv`) here;
            default: the config's paths, if they exist here.
        after: the run directory (imported) this run started from.
        parts: `--out` directories of this run's earlier parts.
    """
    import keras
    import tensorflow as tf

    from nmt.data import shards
    from nmt.model import ModelConfig, Seq2Seq
    from training.weight_files import PARTS_INDEX, load_parts

    if keras.backend.backend() != "tensorflow":
        raise SystemExit("import_weights writes a TensorFlow checkpoint: run it with "
                         "KERAS_BACKEND=tensorflow (the default)")
    index = json.loads((source / "weights" / PARTS_INDEX).read_text())
    keras.mixed_precision.set_global_policy("float32")
    model = Seq2Seq(ModelConfig.from_dict(index["model_config"]))
    model.build_for()
    load_parts(model, source / "weights")
    run_dir.mkdir(parents=True, exist_ok=True)
    if (source / "history.jsonl").exists():
        shutil.copyfile(source / "history.jsonl", run_dir / "history.jsonl")
    config = yaml.safe_load((source / "config.yaml").read_text()) if (
        source / "config.yaml").exists() else {}
    (run_dir / "config.yaml").write_text(yaml.safe_dump(
        run_config(config, run_dir, corpus, after), sort_keys=False))
    summary = json.loads((source / "summary.json").read_text()) if (
        source / "summary.json").exists() else {}
    summary = run_summary(summary, config, parts, after)
    summary.setdefault("averaged_checkpoints", index.get("steps", []))  # the weights' steps
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    tokenizers = shards.read_manifest(shards_dir)["tokenizers"]
    tokenizer = run_dir / "tokenizer"
    tokenizer.mkdir(exist_ok=True)
    for side in ("source", "target"):
        shutil.copyfile(shards_dir / tokenizers[side]["file"], tokenizer / f"{side}.model")
    (tokenizer / "tokenizer.json").write_text(json.dumps({
        "source_language": tokenizers["source"]["language"],
        "target_language": tokenizers["target"]["language"],
        "joint": bool(tokenizers["joint"])}, indent=2) + "\n")
    prefix = run_dir / "best" / "weights"
    tf.train.Checkpoint(weights=list(model.weights)).write(str(prefix))
    return prefix


def run_config(config: dict, run_dir: Path, corpus: Path | None, after: Path | None) -> dict:
    """The config as `nmt train` keeps it in a run: data paths relative to the run, and
    `init_from` the run it started from."""
    config = dict(config)
    data = dict(config.get("data") or {})
    for key in ("train", "dev"):
        path = Path(corpus) / f"{key}.tsv" if corpus else Path(data[key]) if key in data else None
        if path is not None and path.exists():
            data[key] = os.path.relpath(path.resolve(), run_dir.resolve())
        elif corpus:
            raise FileNotFoundError(f"{path} does not exist: --corpus is the directory of the "
                                    "run's training corpus (its train.tsv and dev.tsv)")
    config["data"] = data
    if after:
        config["init_from"] = os.path.relpath(Path(after).resolve(), run_dir.resolve())
    return config


def run_summary(summary: dict, config: dict, parts: tuple[Path, ...] = (),
                after: Path | None = None) -> dict:
    """The summary with `nmt train`'s keys (those a model card reads)."""
    summary = dict(summary)
    earlier = [json.loads((Path(part) / "summary.json").read_text()) for part in parts]
    if earlier and "train_seconds" in summary:
        raise ValueError("--parts adds the hours of earlier parts to a summary that counted "
                         "the last part alone; this summary counts every part already")
    if "train_seconds" not in summary:
        last = summary.get("hours", 0.0)
        summary["hours"] = last + sum(part.get("hours", 0.0) for part in earlier)
        summary["train_seconds"] = round(summary["hours"] * 3600, 1)
        if earlier:
            summary["parts"] = [{key: part.get(key) for key in ("steps", "hours", "device")}
                                for part in [*earlier, {**summary, "hours": last}]]
    summary.setdefault("name", config.get("name"))
    summary.setdefault("epochs_completed", summary.get("epochs", 0))
    if after:
        before = json.loads((Path(after) / "summary.json").read_text())
        summary["starting_model"] = {"name": before.get("name"), "training": before}
    return summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", required=True, type=Path,
                        help="the --out directory of training.accelerator.train")
    parser.add_argument("--shards", required=True, type=Path, help="the shards it trained on")
    parser.add_argument("--run", required=True, type=Path, help="run directory to write")
    parser.add_argument("--corpus", type=Path, default=None,
                        help="the training corpus's directory here (train.tsv, dev.tsv)")
    parser.add_argument("--after", type=Path, default=None,
                        help="the imported run directory this run started from")
    parser.add_argument("--parts", type=Path, nargs="*", default=(),
                        help="--out directories of this run's earlier parts (resumed runs)")
    args = parser.parse_args(argv)
    prefix = import_weights(args.source, args.shards, args.run, corpus=args.corpus,
                            after=args.after, parts=tuple(args.parts))
    print(f"weights -> {prefix}; export with: nmt export --run {args.run} --out DIR --version N")
    return 0


if __name__ == "__main__":
    sys.exit(main())
