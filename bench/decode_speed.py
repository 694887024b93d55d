"""Decoding speed of an exported model: sentences/s and target tokens/s.

Translates the English side of the dev set through `nmt.translator.Translator`
(the path the server, batch jobs and CLI take: in-graph tokenisation, beam
search, alignments and word links, then NumPy results) at beam 1 and 5 and
batch 1 and 64, and prints a Markdown table with the process's peak resident
memory and the machine it ran on.

    python bench/decode_speed.py [models/en-fr] [--dev $NMT_DATA_DIR/anki-fra-eng/dev.tsv]
        [--limit 256] [--beams 1,5] [--batches 1,64]

Each setting translates at most `--limit` distinct dev sentences, in file
order, after one untimed warm-up batch. Target tokens are the pieces of the
returned best translations, end-of-sentence included.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import tensorflow as tf  # noqa: E402

from nmt.options import DEFAULT_MODEL_DIR  # noqa: E402
from nmt.paths import DATA_DIR_ENV, data_dir  # noqa: E402
from nmt.translator import Translator  # noqa: E402
from training.machine import cpu_model  # noqa: E402


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (ru_maxrss is KiB on Linux)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 / (1024 if sys.platform == "darwin" else 1)


def read_sources(path: Path) -> list[str]:
    """Distinct English sentences of an `English<TAB>French` file, in file order."""
    if not path.is_file():
        raise SystemExit(f"No dev set at {path}; pass --dev PATH to an English<TAB>French file")
    lines = path.read_text(encoding="utf-8").splitlines()
    return list(dict.fromkeys(line.split("\t", 1)[0] for line in lines if line.strip()))


def time_setting(translator: Translator, sentences: list[str], beam: int,
                 batch: int) -> dict[str, float]:
    """Translates `sentences` in batches of `batch`; returns rates and counts."""
    translator.translate(sentences[:batch], beam_size=beam)  # warm-up: graph optimisation
    tokens = 0
    started = time.perf_counter()
    for start in range(0, len(sentences), batch):
        results = translator.translate(sentences[start:start + batch], beam_size=beam)
        tokens += sum(len(result.target_tokens) for result in results)
    seconds = time.perf_counter() - started
    return {
        "sentences": len(sentences),
        "seconds": seconds,
        "sentences_per_s": len(sentences) / seconds,
        "tokens_per_s": tokens / seconds,
        "peak_rss_mb": peak_rss_mb(),
    }


def int_list(text: str) -> list[int]:
    values = [int(x) for x in text.split(",") if x.strip()]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers like 1,5; got {text!r}")
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default=str(DEFAULT_MODEL_DIR),
                        help="base or version directory of the export (default: models/en-fr)")
    parser.add_argument("--dev", type=Path, default=data_dir() / "anki-fra-eng" / "dev.tsv",
                        help="English<TAB>French file (default: anki-fra-eng/dev.tsv in "
                             f"${DATA_DIR_ENV}, else in ../shared/data beside the checkout)")
    parser.add_argument("--limit", type=int, default=256,
                        help="at most this many sentences per setting (default: 256)")
    parser.add_argument("--beams", type=int_list, default=[1, 5], help="e.g. 1,5")
    parser.add_argument("--batches", type=int_list, default=[1, 64], help="e.g. 1,64")
    args = parser.parse_args()
    if args.limit < 1:
        parser.error(f"--limit must be at least 1; got {args.limit}")

    sources = read_sources(args.dev)[: args.limit]
    try:
        translator = Translator.load(args.model)
    except FileNotFoundError as error:
        raise SystemExit(
            f"{error}; export a model first (nmt export) or pass its directory"
        ) from None
    rows = []
    for beam in args.beams:
        for batch in args.batches:
            result = time_setting(translator, sources, beam, batch)
            rows.append(
                f"| {beam} | {batch} | {result['sentences']} | {result['sentences_per_s']:,.1f} | "
                f"{result['tokens_per_s']:,.0f} | {result['peak_rss_mb']:,.0f} |"
            )
            print(rows[-1], file=sys.stderr, flush=True)  # progress

    info = translator.info
    print(f"model: {info.path} ({info.name}, {info.attention}), dev: {args.dev.name}")
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, TensorFlow {tf.__version__}, "
          f"Python {platform.python_version()}")
    print("\n| beam | batch | sentences | sentences/s | target tokens/s | peak RSS (MB) |")
    print("|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
