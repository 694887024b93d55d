"""What the benchmarks translate: the traffic mix by default, or any sentences file."""

from __future__ import annotations

import argparse
import os
import platform
from pathlib import Path

from nmt.options import DEFAULT_MODEL_DIR
from nmt.paths import DATA_DIR_ENV, data_dir
from training.machine import cpu_model

# 2,000 lines: Anki test sentences, image captions and news-discussion comments,
# mean 9.8 words (see ../shared/data/README.md).
TRAFFIC_MIX = data_dir() / "out-of-domain" / "traffic-mix.en"
SENTENCES_HELP = (
    "one English sentence a line; for an English<TAB>French file the English side is used "
    f"(default: out-of-domain/traffic-mix.en in ${DATA_DIR_ENV}, else in ../shared/data "
    "beside the checkout)"
)


def read_sentences(path: Path) -> list[str]:
    """The non-empty lines of `path` in file order (English side of a TSV)."""
    if not path.is_file():
        raise SystemExit(f"No sentences file at {path}; pass --sentences PATH")
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.split("\t", 1)[0].strip() for line in lines if line.strip()]


def machine() -> str:
    return (f"{cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"{platform.system()}")


def add_model_and_data_arguments(parser: argparse.ArgumentParser) -> None:
    """`--model` (an export) and `--data` (the shared data directory), as the benchmarks
    over the shared data sets take them."""
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR,
                        help="exported model (base directory: its highest version)")
    parser.add_argument("--data", type=Path, default=data_dir(),
                        help="the shared data directory (NMT_DATA_DIR)")


def add_exports_arguments(parser: argparse.ArgumentParser) -> None:
    """Exports to compare (positional) and `--label`, a row's name for each."""
    parser.add_argument("models", nargs="+", help="export base or version directories")
    parser.add_argument("--label", action="append", dest="labels", metavar="NAME",
                        help="a row's name, once per export in order (default: its path)")


def export_labels(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The `--label`s, one per export (their paths when none is given); a parser error for
    any other count."""
    if args.labels is not None and len(args.labels) != len(args.models):
        parser.error(f"give --label once per export, or not at all. Received: "
                     f"{len(args.labels)} labels for {len(args.models)} exports")
    return args.labels or list(args.models)
