"""The distillation table: exports (a teacher and its students) x decodings, with test BLEU,
Alibi AER and decoding speed on the traffic mix.

For each export and each beam size (greedy, beam 2, beam 5 by default), on
the same precision choice for every export:

- test BLEU: `test.tsv` of the Anki corpus, multi-reference, decoded with
  the model's default options at that beam (`nmt evaluate`'s scoring);
- Alibi AER: forced alignment of the gold pairs (`nmt evaluate --alibi`),
  which does not depend on the decoding, so once per export;
- sentences/s through `Translator` on the sentences file (default: the
  traffic mix), batches of `--batch` in file order and sorted by length
  (`bench/decode_speed.py`'s timing).

Prints the CPU and its bfloat16 units, then a Markdown table; the row of
each model's default decoding (its export's `recommended_decoding`, e.g.
greedy for a student) is marked. Timings are only comparable between rows
of one run on an otherwise idle machine: run it alone (not beside a
training). The server at 1 and 32 clients is `bench/load_test.py` on each
export.

    python bench/distill_table.py models/en-fr/4 models/en-fr-student/1 ...
        [--names v4,student] [--beams 1,2,5] [--batch 64] [--precision auto]
        [--test FILE] [--test-limit N] [--alibi DIR | --pharaoh SRC TGT GOLD]
        [--sentences FILE] [--limit N | --no-speed] [--json FILE]
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

from bench.decode_speed import ORDERS, in_order, int_list, time_setting  # noqa: E402
from bench.support.inputs import SENTENCES_HELP, TRAFFIC_MIX, machine, read_sentences  # noqa: E402
from nmt.constants import DEFAULT_BATCH_SIZE  # noqa: E402
from nmt.data.corpus import read_lines, read_pairs  # noqa: E402
from nmt.evaluation import metrics, scoring  # noqa: E402
from nmt.inference.precision import AUTO, LOAD_CHOICES, cpu_bfloat16_units  # noqa: E402
from nmt.inference.translator import Translator  # noqa: E402
from nmt.paths import data_dir  # noqa: E402
from nmt.types import DecodeOptions, options_over  # noqa: E402

DEFAULT_BEAMS = (1, 2, 5)
TEST_SET = data_dir() / "anki-fra-eng" / "test.tsv"
ALIBI = data_dir() / "alibi-enfr-alignments"


def decoding_options(translator: Translator, beam: int) -> DecodeOptions:
    """The model's default options at `beam` (one hypothesis)."""
    return options_over(translator.info.default_options, {"beam_size": beam, "n_best": 1})


def decoding_label(options: DecodeOptions) -> str:
    return "greedy" if options.beam_size == 1 else f"beam {options.beam_size}"


def measure(translator: Translator, beam: int, pairs, sentences: list[str],
            batch: int) -> dict:
    """One row: test BLEU (if `pairs`) and sentences/s in each order (if `sentences`)."""
    options = decoding_options(translator, beam)
    row: dict = {"beam": beam, "default": options == translator.info.default_options}
    if pairs:
        report = scoring.score_translations(translator, pairs, options, batch)
        row["test_bleu"] = round(report.scores.bleu, 2)
    for order in ORDERS if sentences else ():
        timing = time_setting(translator, in_order(sentences, order), beam, batch)
        row[f"{order}_sentences_per_s"] = round(timing["sentences_per_s"], 1)
    return row


def gold_alignments(args) -> list:
    """The gold pairs for AER: `--pharaoh` files, else the Alibi directory (if there)."""
    if args.pharaoh:
        sources, targets = (read_lines(path) for path in args.pharaoh[:2])
        links = metrics.read_pharaoh_gold(args.pharaoh[2])
        if not len(sources) == len(targets) == len(links):
            raise SystemExit("--pharaoh files must have the same number of lines")
        return [metrics.AlignedPair(tuple(s.split()), tuple(t.split()), frozenset(sure),
                                    frozenset(possible))
                for s, t, (sure, possible) in zip(sources, targets, links, strict=True)]
    if args.alibi and Path(args.alibi).is_dir():
        return metrics.read_alibi(args.alibi)
    return []


def _cell(row: dict, key: str, form: str) -> str:
    return "" if row.get(key) is None else f"{row[key]:{form}}"


def table(results: list[dict]) -> str:
    lines = ["| model | parameters | decoding | test BLEU | Alibi AER | sentences/s, file order "
             "| sentences/s, sorted |", "|---|---:|---|---:|---:|---:|---:|"]
    for result in results:
        for row in result["rows"]:
            mark = " (default)" if row["default"] else ""
            lines.append(
                f"| {result['label']} | {_cell(result, 'parameters', ',')} | "
                f"{decoding_label(DecodeOptions(beam_size=row['beam']))}{mark} | "
                f"{_cell(row, 'test_bleu', '.2f')} | {_cell(result, 'alibi_aer', '.3f')} | "
                f"{_cell(row, 'file_sentences_per_s', ',.1f')} | "
                f"{_cell(row, 'sorted_sentences_per_s', ',.1f')} |")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="export base or version directories")
    parser.add_argument("--names", help="comma-separated row labels, one per model "
                                        "(default: NAME vVERSION from each export)")
    parser.add_argument("--beams", type=int_list, default=list(DEFAULT_BEAMS),
                        help="beam sizes, 1 = greedy (default 1,2,5)")
    parser.add_argument("--batch", type=int, default=DEFAULT_BATCH_SIZE,
                        help=f"sentences per model call (default {DEFAULT_BATCH_SIZE})")
    parser.add_argument("--precision", choices=LOAD_CHOICES, default=AUTO,
                        help="every export's path (default auto: what nmt serve picks here)")
    parser.add_argument("--test", type=Path, default=TEST_SET,
                        help="English<TAB>French test pairs for BLEU (default: anki-fra-eng/"
                             "test.tsv of the data directory; an empty string skips BLEU)")
    parser.add_argument("--test-limit", type=int, default=0, help="first N test pairs only")
    gold = parser.add_mutually_exclusive_group()
    gold.add_argument("--alibi", default=str(ALIBI),
                      help="Alibi gold alignments directory for AER (default: the data "
                           "directory's; an empty string skips AER)")
    gold.add_argument("--pharaoh", nargs=3, metavar=("SOURCE", "TARGET", "GOLD"),
                      help="tokenized source/target files and gold links instead of Alibi")
    parser.add_argument("--sentences", type=Path, default=TRAFFIC_MIX, help=SENTENCES_HELP)
    parser.add_argument("--limit", type=int, default=0,
                        help="time only the first N sentences (default: all)")
    parser.add_argument("--no-speed", action="store_true", help="no timing (BLEU and AER only)")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    names = args.names.split(",") if args.names else []
    if names and len(names) != len(args.models):
        parser.error(f"--names gives {len(names)} labels for {len(args.models)} models")
    pairs = read_pairs(args.test) if str(args.test) and Path(args.test).is_file() else []
    pairs = pairs[: args.test_limit] if args.test_limit else pairs
    sentences = [] if args.no_speed else read_sentences(args.sentences)
    sentences = sentences[: args.limit] if args.limit else sentences
    gold = gold_alignments(args)
    results = []
    for index, model in enumerate(args.models):
        translator = Translator.load(model, args.precision)
        info = translator.info
        result = {"model": info.path, "label": names[index] if names else
                  f"{info.name} v{info.version}", "precision": info.precision,
                  "default_options": dataclasses.asdict(info.default_options),
                  "parameters": (info.metadata.get("training") or {}).get("parameters"),
                  "rows": []}
        if gold:
            result["alibi_aer"] = round(scoring.score_alignments(translator, gold).scores.aer, 4)
        for beam in args.beams:
            result["rows"].append(measure(translator, beam, pairs, sentences, args.batch))
            print(f"{result['label']}: {result['rows'][-1]}", file=sys.stderr, flush=True)
        results.append(result)
    units = ", ".join(cpu_bfloat16_units()) or "none (bfloat16 is emulated)"
    print(f"machine: {machine()}, TensorFlow {tf.__version__}; bfloat16 units: {units}")
    print(f"precision: {', '.join(sorted({r['precision'] for r in results}))} "
          f"({args.precision}); test: {len(pairs)} pairs of {args.test}; AER: {len(gold)} "
          f"gold pairs; speed: {len(sentences)} lines of {args.sentences}, batches of "
          f"{args.batch}\n")
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "bfloat16_units": units,
                                         "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
