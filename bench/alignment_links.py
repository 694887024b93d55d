"""Which rule reads word links best from a model's alignment matrix? AER on Alibi.

Force-decodes the 522 Alibi gold pairs once through the exported model
(`Translator.align`), then reads word links from each pair's word matrix
with every rule of `nmt.alignment.word_links` (argmax per target word, a threshold,
argmax in both directions intersected, and that intersection grown with
neighbours above a threshold) and prints precision, recall and AER, overall
and by source length, as a Markdown table.

    python bench/alignment_links.py [MODEL] [--data ../shared/data]
        [--thresholds 0.1,0.2,0.3,0.5]

MODEL defaults to the shipped model; it needs an export that returns
`word_attention` (version 5 and later, or a re-export).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.support.inputs import machine  # noqa: E402
from nmt.options import DEFAULT_MODEL_DIR  # noqa: E402
from nmt.paths import data_dir  # noqa: E402


def rules(thresholds: list[float]) -> list[tuple[str, float]]:
    """(rule, threshold) pairs to measure; argmax and intersect take no threshold."""
    grid = [("argmax", 0.0), ("intersect", 0.0)]
    for rule in ("threshold", "grow"):
        grid.extend((rule, t) for t in thresholds)
    return grid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default=DEFAULT_MODEL_DIR)
    parser.add_argument("--data", type=Path, help="the shared data directory")
    parser.add_argument("--thresholds", default="0.1,0.2,0.3,0.5")
    args = parser.parse_args()

    from nmt.alignment.word_links import word_links
    from nmt.evaluation.metrics import read_alibi
    from nmt.evaluation.scoring import alignment_report, force_align
    from nmt.inference.translator import Translator

    gold = read_alibi((args.data or data_dir()) / "alibi-enfr-alignments")
    translator = Translator.load(args.model)
    results = force_align(translator, gold)
    if results and results[0].best.word_matrix is None:
        sys.exit(f"{args.model} returns no word matrix; re-export it with this version")
    print(f"{translator.info.path} ({translator.info.attention}), {len(gold)} Alibi pairs; "
          f"{machine()}\n")
    print("| rule | threshold | AER | precision | recall | 1-9 | 10-19 | 20-39 | 40+ |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for rule, threshold in rules([float(t) for t in args.thresholds.split(",")]):
        predicted = [set(word_links(r.best.word_matrix, rule, threshold or 0.5))
                     for r in results]
        report = alignment_report(predicted, gold, results)
        s = report.scores
        buckets = " | ".join(f"{report.by_length[label].aer:.3f}" if label in report.by_length
                             else "-" for label in ("1-9", "10-19", "20-39", "40+"))
        shown = f"{threshold:g}" if threshold else "-"
        print(f"| {rule} | {shown} | {s.aer:.3f} | {s.precision:.3f} | {s.recall:.3f} | "
              f"{buckets} |")


if __name__ == "__main__":
    main()
