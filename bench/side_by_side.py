"""A first look at exports side by side: each line of a text file and every export's translation.

Translates the lines of a sentences file (default `bench/data/first_look.en`:
ten ordinary English lines, from a dialog button to a news sentence) with
each export through `nmt.inference.translator.Translator`, at the export's
default decoding (its `recommended_decoding` over `DecodeOptions()`: beam 5
unless the export recommends another), or at `--beam-size` for every export,
on the same precision choice. Prints the machine, each export's precision
path and decoding, then a Markdown table: the English line, then one column
per export, labelled `<base name>/<version>` (`bench/domain_table.py`'s
labels, e.g. `en-fr/8`) unless `--label` names it. A `|` in a cell is
escaped as `\\|`.

    python bench/side_by_side.py models/en-fr/8 ../runs/export-en-fr-broad/9
        [--sentences FILE] [--label NAME --label NAME ...]
        [--precision auto|float32|bfloat16] [--beam-size N] [--json FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import tensorflow as tf  # noqa: E402

from bench.domain_table import decoding, label_of  # noqa: E402
from bench.support.inputs import machine, read_sentences  # noqa: E402
from nmt.constants import DEFAULT_BATCH_SIZE  # noqa: E402
from nmt.inference.precision import AUTO, LOAD_CHOICES, cpu_bfloat16_units  # noqa: E402
from nmt.inference.translator import Translator  # noqa: E402
from nmt.types import DecodeOptions  # noqa: E402

FIRST_LOOK = REPO_ROOT / "bench" / "data" / "first_look.en"


def escape(text: str) -> str:
    """`text` as a Markdown table cell: every `|` escaped."""
    return text.replace("|", "\\|")


def translate_all(translator: Translator, lines: list[str], options: DecodeOptions) -> list[str]:
    """The best translation of each line, in batches of `DEFAULT_BATCH_SIZE`."""
    texts = []
    for start in range(0, len(lines), DEFAULT_BATCH_SIZE):
        batch = lines[start:start + DEFAULT_BATCH_SIZE]
        texts += [translation.text for translation in translator.translate(batch, options)]
    return texts


def table(lines: list[str], labels: list[str], columns: list[list[str]]) -> str:
    """A Markdown table: a row per line of `lines`, its English then `columns[i]` under
    `labels[i]` (one translation per line in each column)."""
    header = ["English", *labels]
    rows = ["| " + " | ".join(escape(cell) for cell in header) + " |",
            "|" + "---|" * len(header)]
    for i, line in enumerate(lines):
        cells = [line, *(column[i] for column in columns)]
        rows.append("| " + " | ".join(escape(cell) for cell in cells) + " |")
    return "\n".join(rows)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="export base or version directories")
    parser.add_argument("--sentences", type=Path, default=FIRST_LOOK, metavar="FILE",
                        help="one English sentence a line; for an English<TAB>French file the "
                             "English side is used (default: bench/data/first_look.en)")
    parser.add_argument("--label", action="append", dest="labels", metavar="NAME",
                        help="a column's header, once per export in order (default: "
                             "<base name>/<version>, e.g. en-fr/8)")
    parser.add_argument("--precision", choices=LOAD_CHOICES, default=AUTO,
                        help="every export's path (default auto: what nmt serve picks here)")
    parser.add_argument("--beam-size", type=int,
                        help="beam for every export (default: each export's, 5 unless it "
                             "recommends another)")
    parser.add_argument("--json", type=Path, metavar="FILE",
                        help="also write the translations to this JSON file")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.beam_size is not None and args.beam_size < 1:
        parser.error(f"--beam-size must be at least 1. Received: {args.beam_size}")
    if args.labels is not None and len(args.labels) != len(args.models):
        parser.error(f"give --label once per export, or not at all. Received: "
                     f"{len(args.labels)} labels for {len(args.models)} exports")
    try:
        labels = args.labels or [label_of(model) for model in args.models]
    except FileNotFoundError as error:
        raise SystemExit(str(error)) from None
    lines = read_sentences(args.sentences)
    if not lines:
        raise SystemExit(f"no lines to translate in {args.sentences}")

    units = ", ".join(cpu_bfloat16_units()) or "none (bfloat16 is emulated)"
    print(f"machine: {machine()}, TensorFlow {tf.__version__}; bfloat16 units: {units}")
    exports, columns = [], []
    for model, label in zip(args.models, labels, strict=True):
        try:
            translator = Translator.load(model, args.precision)
        except (FileNotFoundError, ValueError) as error:  # no export, or a path it lacks
            raise SystemExit(str(error)) from None
        info, options = translator.info, decoding(translator, args.beam_size)
        print(f"{label}: {info.path}, precision {info.precision} ({info.precision_reason}), "
              f"beam {options.beam_size}", flush=True)
        exports.append({"label": label, "model": info.path, "precision": info.precision,
                        "precision_reason": info.precision_reason,
                        "options": dataclasses.asdict(options)})
        columns.append(translate_all(translator, lines, options))
    print(f"sentences: {args.sentences} ({len(lines)} lines)\n")
    print(table(lines, labels, columns))
    if args.json:
        args.json.write_text(json.dumps({
            "machine": machine(), "tensorflow": tf.__version__, "bfloat16_units": units,
            "sentences": str(args.sentences), "exports": exports,
            "rows": [{"english": line, "translations": [column[i] for column in columns]}
                     for i, line in enumerate(lines)]}, indent=2, ensure_ascii=False) + "\n",
            encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
