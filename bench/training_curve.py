"""Time to quality: a run's dev scores per domain against the hours it has trained.

Reads `<run>/history.jsonl` (one line per dev evaluation; `domains` where the
dev set mixes sources, as `nmt corpus` writes it) and prints one markdown row
per evaluation: training hours, step, epoch, overall and per-domain chrF (and
BLEU with `--bleu`). `--baseline` adds a first row from `nmt evaluate --json`
of the starting model on the same dev set (greedy, as training evaluates), so
the curve starts where the run did.

    python bench/training_curve.py ../runs/en-fr-broad \
        [--baseline ../runs/v8-dev-greedy.json] [--bleu]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def read_history(run: Path) -> list[dict]:
    path = run / "history.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: no dev evaluation has run yet")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def baseline_row(path: Path) -> dict:
    """An `nmt evaluate --json` result as a history record at hour 0."""
    translation = json.loads(path.read_text(encoding="utf-8"))["translation"]
    return {"step": 0, "epoch": 0, "train_seconds": 0.0, "bleu": translation["bleu"],
            "chrf": translation["chrf"], "domains": translation.get("domains", {})}


def table(records: list[dict], bleu: bool = False) -> list[str]:
    """Markdown lines: one row per record, one column per domain (sorted)."""
    domains = sorted({name for record in records for name in record.get("domains", {})})
    metric = "BLEU / chrF" if bleu else "chrF"

    def cell(scores: dict) -> str:
        if not scores:
            return ""
        return f"{scores['bleu']:.2f} / {scores['chrf']:.2f}" if bleu else f"{scores['chrf']:.2f}"

    def row(cells: list[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    lines = [row(["hours", "step", "epoch", f"all, {metric}", *domains]),
             "|---:|---:|---:|---:|" + "---:|" * len(domains)]
    for record in records:
        per_domain = [cell(record.get("domains", {}).get(name, {})) for name in domains]
        lines.append(row([f"{record['train_seconds'] / 3600:.2f}", f"{record['step']:,}",
                          str(record["epoch"]), cell(record), *per_domain]))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a training run directory")
    parser.add_argument("--baseline", type=Path,
                        help="`nmt evaluate --json` of the starting model on the run's dev set")
    parser.add_argument("--bleu", action="store_true", help="BLEU beside chrF")
    args = parser.parse_args(argv)
    records = read_history(args.run)
    if args.baseline:
        records = [baseline_row(args.baseline), *records]
    print("\n".join(table(records, args.bleu)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
