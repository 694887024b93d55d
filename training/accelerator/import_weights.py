"""Turns what `training.accelerator.train --out` handed back into a run directory.

On a machine with TensorFlow:

    python -m training.accelerator.import_weights --from ../runs/en-fr-v10-out \\
        --shards ../runs/shards-en-fr-v10 --run ../runs/en-fr-v10
    nmt export --run ../runs/en-fr-v10 --out models/en-fr --version 10

The run directory gets the config, the shards' SentencePiece models as its
tokenizer, the history and summary, and the weights as the run's best
(`<run>/best/weights`, the checkpoint `nmt export --run` and `init_from` read).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path


def import_weights(source: Path, shards_dir: Path, run_dir: Path) -> Path:
    """Writes the run directory; returns the weights' checkpoint prefix."""
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
    for name in ("config.yaml", "history.jsonl", "summary.json"):
        if (source / name).exists():
            shutil.copyfile(source / name, run_dir / name)
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", required=True, type=Path,
                        help="the --out directory of training.accelerator.train")
    parser.add_argument("--shards", required=True, type=Path, help="the shards it trained on")
    parser.add_argument("--run", required=True, type=Path, help="run directory to write")
    args = parser.parse_args(argv)
    prefix = import_weights(args.source, args.shards, args.run)
    print(f"weights -> {prefix}; export with: nmt export --run {args.run} --out DIR --version N")
    return 0


if __name__ == "__main__":
    sys.exit(main())
