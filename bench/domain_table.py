"""Should a new model version ship? Exports x held-out domains: BLEU/chrF, Alibi AER and speed.

For each export (a base or version directory; its row is labelled by the
path, e.g. `en-fr/8`), on the same precision choice and decoding (the
export's default options, at `--beam-size` if given):

- anki: `anki-fra-eng/test.tsv`, multi-reference by identical source
  (`nmt evaluate --test`);
- newstest2013, newsdiscuss (newsdiscusstest2015), multi30k (Multi30k 2017
  Flickr): `out-of-domain/<set>.{en,fr}`, line-aligned (`nmt evaluate
  --source --reference`, which also groups identical sources);
- eurlex: `markup-enfr/dev-eurlex.{en,fr}` with the XLIFF inline tags
  stripped on both sides (`bench/markup_bleu.py`'s `strip_tags`), each line
  translated as one sentence;
- laws, docs, ui (Godot), libreoffice-ui, libreoffice-help, firefox-ui:
  `dev-<split>.tsv` of a built corpus, with `--corpus DIR` (the last three
  are in the v10 corpus only);
- alibi: AER of forced alignments of the Alibi gold pairs, with the export's
  own link rule (`nmt evaluate --alibi`);
- speed: sentences/s on `out-of-domain/traffic-mix.en` in file order, batches
  of 64, one warm-up call first (`bench/decode_speed.py`'s timing).

BLEU/chrF are sacrebleu's (`nmt.evaluation.metrics`); the last column is the
mean chrF of the out-of-domain sets scored (all but anki). A set whose files
are missing is left out with a note. Prints the machine and each export's
precision path, then a Markdown table. Timings are only comparable between
rows of one run on an otherwise idle machine.

`--from-json` runs no model: it prints one table over the rows of earlier
runs' `--json` files, so that rows measured in separate sittings (the scores
of one model one day, the speed of both together later) are shown together.
Rows of the same label are merged, file by file: a later file fills in the
sets the earlier lacked, and a set measured in both is the later file's. A
note says which file each row's sets came from, at what precision and beam.

    python bench/domain_table.py models/en-fr/8 ../runs/export-en-fr-broad/9
        [--data ../shared/data] [--corpus DIR] [--sets anki eurlex ...] [--limit N]
        [--precision auto|float32|bfloat16] [--beam-size N] [--json FILE]
    python bench/domain_table.py --from-json scores.json speed.json [--sets ...]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import tensorflow as tf  # noqa: E402

from bench.decode_speed import time_setting  # noqa: E402
from bench.markup_bleu import strip_tags  # noqa: E402
from bench.support.inputs import machine, read_sentences  # noqa: E402
from nmt.constants import DEFAULT_BATCH_SIZE  # noqa: E402
from nmt.data.corpus import read_lines, read_pairs  # noqa: E402
from nmt.evaluation import metrics, scoring  # noqa: E402
from nmt.inference.precision import AUTO, LOAD_CHOICES, cpu_bfloat16_units  # noqa: E402
from nmt.inference.translator import Translator  # noqa: E402
from nmt.paths import DATA_DIR_ENV, data_dir, resolve_version_dir  # noqa: E402
from nmt.types import DecodeOptions, options_over  # noqa: E402

Pair = tuple[str, str]

# Line-aligned sets: name -> (table header, `<data>/<stem>.{en,fr}`).
LINE_ALIGNED = {
    "newstest2013": ("newstest2013", "out-of-domain/newstest2013"),
    "newsdiscuss": ("newsdiscuss 2015", "out-of-domain/newsdiscusstest2015"),
    "multi30k": ("Multi30k 2017", "out-of-domain/multi30k-test2017-flickr"),
    "eurlex": ("EUR-Lex, no tags", "markup-enfr/dev-eurlex"),
}
# `<corpus>/dev-<split>.tsv`; the last three: the v10 corpus (training/corpora/en-fr-v10.yaml).
CORPUS_SPLITS = ("laws", "docs", "ui", "libreoffice-ui", "libreoffice-help", "firefox-ui")
ANKI_TEST = "anki-fra-eng/test.tsv"
ALIBI_DIR = "alibi-enfr-alignments"
TRAFFIC_MIX = "out-of-domain/traffic-mix.en"

TRANSLATION_SETS = ("anki", *LINE_ALIGNED, *CORPUS_SPLITS)
OUT_OF_DOMAIN = tuple(name for name in TRANSLATION_SETS if name != "anki")
SETS = (*TRANSLATION_SETS, "alibi", "speed")
HEADERS = {"anki": "Anki test", **{name: header for name, (header, _) in LINE_ALIGNED.items()},
           "laws": "laws", "docs": "docs", "ui": "UI", "libreoffice-ui": "LibreOffice UI",
           "libreoffice-help": "LibreOffice help", "firefox-ui": "Firefox UI"}


def _existing(path: Path) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"no file at {path}")
    return path


def read_set(name: str, data: Path, corpus: Path | None = None) -> list[Pair]:
    """`(English, French)` pairs of the translation set `name`, in file order.

    Raises:
        FileNotFoundError: a file of the set is missing (or `corpus` is None for
            a corpus split); the message says which.
        ValueError: `name` is unknown, or the two sides of a line-aligned set
            differ in length.
    """
    if name == "anki":
        return read_pairs(_existing(data / ANKI_TEST))
    if name in CORPUS_SPLITS:
        if corpus is None:
            raise FileNotFoundError("no --corpus DIR given")
        return read_pairs(_existing(corpus / f"dev-{name}.tsv"))
    if name not in LINE_ALIGNED:
        raise ValueError(f"unknown set; expected one of {', '.join(TRANSLATION_SETS)}. "
                         f"Received: name={name!r}")
    stem = data / LINE_ALIGNED[name][1]
    english_path, french_path = (stem.parent / f"{stem.name}.{side}" for side in ("en", "fr"))
    english, french = read_lines(_existing(english_path)), read_lines(_existing(french_path))
    if len(english) != len(french):
        raise ValueError(f"{english_path} has {len(english)} lines but {french_path} has "
                         f"{len(french)}; they must be line-aligned")
    if name == "eurlex":
        return [(strip_tags(en), strip_tags(fr)) for en, fr in zip(english, french, strict=True)]
    return list(zip(english, french, strict=True))


def read_inputs(names: list[str], data: Path, corpus: Path | None,
                limit: int) -> tuple[dict, dict[str, str]]:
    """What every model is run on, the first `limit` items (0: all) of each set asked for.

    Returns:
        `(inputs, skipped)`: `inputs` maps a translation set to its pairs,
        `"alibi"` to the gold `metrics.AlignedPair`s and `"speed"` to the
        sentences; `skipped` maps each set left out to the reason.
    """
    inputs: dict = {}
    skipped: dict[str, str] = {}
    for name in names:
        try:
            if name == "alibi":
                if not (data / ALIBI_DIR).is_dir():
                    raise FileNotFoundError(f"no directory at {data / ALIBI_DIR}")
                found = metrics.read_alibi(data / ALIBI_DIR)
            elif name == "speed":
                found = read_sentences(_existing(data / TRAFFIC_MIX))
            else:
                found = read_set(name, data, corpus)
        except FileNotFoundError as error:
            skipped[name] = str(error)
            continue
        inputs[name] = found[:limit] if limit else found
    return inputs, skipped


def decoding(translator: Translator, beam_size: int | None) -> DecodeOptions:
    """The export's default options, at `beam_size` if given."""
    defaults = translator.info.default_options
    return defaults if beam_size is None else options_over(defaults, {"beam_size": beam_size})


def mean_out_of_domain_chrf(scores: dict[str, dict]) -> float | None:
    """The mean chrF of the out-of-domain sets in `scores` (None: there are none)."""
    values = [scores[name]["chrf"] for name in OUT_OF_DOMAIN
              if (scores.get(name) or {}).get("chrf") is not None]
    return round(statistics.fmean(values), 2) if values else None


def evaluate(translator: Translator, label: str, options: DecodeOptions, inputs: dict) -> dict:
    """One row: BLEU/chrF of every translation set, Alibi AER and sentences/s of `inputs`."""
    info = translator.info
    row: dict = {"label": label, "model": info.path, "precision": info.precision,
                 "precision_reason": info.precision_reason, "beam_size": options.beam_size,
                 "word_links": info.word_links, "scores": {}}
    for name in TRANSLATION_SETS:
        if name in inputs:
            report = scoring.score_translations(translator, inputs[name], options)
            row["scores"][name] = {"bleu": round(report.scores.bleu, 2),
                                   "chrf": round(report.scores.chrf, 2),
                                   "sentences": report.sentences,
                                   "seconds": round(report.seconds, 1)}
            print(f"{label} {name}: {row['scores'][name]}", file=sys.stderr, flush=True)
    if "alibi" in inputs:
        started = time.perf_counter()
        report = scoring.score_alignments(translator, inputs["alibi"])  # the export's links
        row["alibi"] = {"aer": round(report.scores.aer, 4), "pairs": report.sentences,
                        "seconds": round(time.perf_counter() - started, 1)}
        print(f"{label} alibi: {row['alibi']}", file=sys.stderr, flush=True)
    if "speed" in inputs:
        timing = time_setting(translator, inputs["speed"], options.beam_size, DEFAULT_BATCH_SIZE)
        row["speed"] = {"sentences_per_s": round(timing["sentences_per_s"], 1),
                        "sentences": timing["sentences"], "seconds": round(timing["seconds"], 1)}
        print(f"{label} speed: {row['speed']}", file=sys.stderr, flush=True)
    row["mean_out_of_domain_chrf"] = mean_out_of_domain_chrf(row["scores"])
    return row


def label_of(path: str | os.PathLike) -> str:
    """`<base name>/<version>` of the version directory `path` is or holds, e.g. `en-fr/8`."""
    version_dir = resolve_version_dir(path)
    return f"{version_dir.parent.name}/{version_dir.name}"


def _cell(value, form: str) -> str:
    return "" if value is None else f"{value:{form}}"


def table(rows: list[dict], columns: list[str]) -> str:
    """A Markdown table: one line per row, a column per set in `columns` (in `SETS` order)."""
    header = ["model", "precision", "beam"]
    for name in columns:
        header.append({"alibi": "Alibi AER", "speed": "sentences/s, traffic mix"}.get(
            name, f"{HEADERS.get(name, name)} BLEU / chrF"))
    header.append("mean out-of-domain chrF")
    lines = ["| " + " | ".join(header) + " |", "|---|---|---:|" + "---:|" * (len(header) - 3)]
    for row in rows:  # a set a row lacks (read with --from-json) is an empty cell
        cells = [row["label"], str(row.get("precision", "")), str(row.get("beam_size", ""))]
        for name in columns:
            if name == "alibi":
                cells.append(_cell((row.get("alibi") or {}).get("aer"), ".3f"))
            elif name == "speed":
                cells.append(_cell((row.get("speed") or {}).get("sentences_per_s"), ",.1f"))
            else:
                scores = (row.get("scores") or {}).get(name)
                cells.append(f"{_cell(scores.get('bleu'), '.2f')} / "
                             f"{_cell(scores.get('chrf'), '.2f')}" if scores else "")
        cells.append(_cell(row.get("mean_out_of_domain_chrf"), ".2f"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def read_runs(paths: list[Path]) -> list[tuple[str, dict]]:
    """`(path, run)` of each `--json` file of an earlier run, in order.

    Raises:
        SystemExit: a file is missing, is not JSON, or has no `results` rows with a
            `label` (the message names it).
    """
    runs = []
    for path in paths:
        try:
            run = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise SystemExit(f"no file at {path}") from None
        except json.JSONDecodeError as error:
            raise SystemExit(f"{path} is not JSON: {error}") from None
        results = run.get("results") if isinstance(run, dict) else None
        if not isinstance(results, list) or not all(
                isinstance(row, dict) and "label" in row for row in results):
            raise SystemExit(f"{path} is not the --json file of a domain_table run: expected "
                             '{"results": [{"label": ...}, ...]}')
        runs.append((str(path), run))
    return runs


def _measured(row: dict) -> dict:
    """Set name -> what `row` measured of it, for every set it has."""
    found = dict(row.get("scores") or {})
    found.update({name: row[name] for name in ("alibi", "speed") if row.get(name)})
    return found


def _joined(values) -> str:
    return " / ".join(dict.fromkeys(str(value) for value in values))


def _merged(label: str, sets: dict[str, tuple[str, dict]], last: tuple[str, dict]) -> dict:
    """The row of `label` made of `sets` (set name -> the `(file, row)` it is taken from);
    `last` is the label's last `(file, row)`, for a label that measured nothing."""
    taken = list({id(row): (source, row) for source, row in sets.values()}.values()) or [last]
    scores = {name: row["scores"][name] for name, (_, row) in sets.items()
              if name in TRANSLATION_SETS}
    return {"label": label, "model": taken[-1][1].get("model"),
            "precision": _joined(row.get("precision", "") for _, row in taken),
            "beam_size": _joined(row.get("beam_size", "") for _, row in taken),
            "scores": scores,
            **{name: row[name] for name, (_, row) in sets.items() if name in ("alibi", "speed")},
            "mean_out_of_domain_chrf": mean_out_of_domain_chrf(scores),
            "sources": {name: source for name, (source, _) in sets.items()}}


def _provenance(label: str, sets: dict[str, tuple[str, dict]]) -> str:
    """`note: <label>: <sets> from <file> (<precision>, beam <n>); ...`."""
    parts: dict[int, tuple[list[str], str, dict]] = {}
    for name, (source, row) in sets.items():
        parts.setdefault(id(row), ([], source, row))[0].append(name)
    said = [f"{', '.join(names)} from {source} ({row.get('precision')}, beam "
            f"{row.get('beam_size')})" for names, source, row in parts.values()]
    return f"note: {label}: {'; '.join(said) or 'no set measured'}"


def merge_rows(runs: list[tuple[str, dict]]) -> tuple[list[dict], list[str]]:
    """One row per label over the `results` of `runs`, labels in order of first appearance.

    A later run fills in the sets an earlier one lacked; a set measured in both
    is the later run's. The precision and beam of a merged row are those of the
    rows its sets came from (joined with " / " when they differ); its
    `sources` maps each set to the file it came from.

    Returns:
        `(rows, notes)`: `notes` say, per row, which sets came from which file
        at what precision and beam, and which sets were measured twice.
    """
    found: dict[str, dict[str, tuple[str, dict]]] = {}  # label -> set -> (file, row)
    last: dict[str, tuple[str, dict]] = {}
    twice: dict[str, list[str]] = {}
    for source, run in runs:
        for row in run["results"]:
            label, sets = row["label"], found.setdefault(row["label"], {})
            last[label] = (source, row)
            for name in _measured(row):
                if name in sets:
                    twice.setdefault(label, []).append(
                        f"note: {label}: {name} is in {sets[name][0]} and in {source}; "
                        f"{source}'s is kept")
                sets[name] = (source, row)
    rows, notes = [], []
    for label, sets in found.items():
        in_order = {name: sets[name] for name in SETS if name in sets}
        rows.append(_merged(label, in_order, last[label]))
        notes += [_provenance(label, in_order), *twice.get(label, [])]
    return rows, notes


def from_json(paths: list[Path], names: list[str], json_out: Path | None) -> int:
    """Prints one table over the rows of earlier runs' `--json` files (see the module
    docstring); the columns are the sets of `names` that some row has."""
    runs = read_runs(paths)
    for source, run in runs:
        sizes = ", ".join(f"{name} {count}" for name, count in (run.get("sets") or {}).items())
        limit = f" (--limit {run['limit']})" if run.get("limit") else ""
        print(f"{source}: machine: {run.get('machine', 'not recorded')}, TensorFlow "
              f"{run.get('tensorflow', 'not recorded')}; items per set: "
              f"{sizes or 'not recorded'}{limit}")
    rows, notes = merge_rows(runs)
    print("\n".join(notes) + "\n")
    present = {name for row in rows for name in row["sources"]}
    print(table(rows, [name for name in names if name in present]))
    if json_out:
        json_out.write_text(json.dumps({"from_json": [source for source, _ in runs],
                                        "results": rows}, indent=2) + "\n")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*",
                        help="export base or version directories (none with --from-json)")
    parser.add_argument("--data", type=Path, default=data_dir(),
                        help=f"the shared data directory (default: ${DATA_DIR_ENV}, else "
                             "../shared/data beside the checkout)")
    parser.add_argument("--corpus", type=Path,
                        help="a built corpus directory with dev-<split>.tsv files (laws, docs, "
                             "ui; libreoffice-ui, libreoffice-help and firefox-ui in the v10 "
                             "corpus) (default: those columns are left out)")
    parser.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS),
                        help="the columns to measure (default: all)")
    parser.add_argument("--limit", type=int, default=0,
                        help="the first N items of every set only (default: all)")
    parser.add_argument("--precision", choices=LOAD_CHOICES, default=AUTO,
                        help="every export's path (default auto: what nmt serve picks here)")
    parser.add_argument("--beam-size", type=int,
                        help="beam for every set and the speed (default: each export's)")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    parser.add_argument("--from-json", nargs="+", type=Path, metavar="FILE",
                        help="run no model: one table over the rows of these earlier runs' "
                             "--json files, the rows of one label merged (a later file fills "
                             "in the sets an earlier lacked; a set in several files: the "
                             "last file's wins); --sets picks the columns, the other "
                             "measurement options are ignored")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if bool(args.models) == bool(args.from_json):
        parser.error("give export directories to measure, or --from-json FILE ... to show "
                     "earlier runs, not both")
    names = [name for name in SETS if name in args.sets]
    if args.from_json:
        return from_json(args.from_json, names, args.json)
    if args.limit < 0:
        parser.error(f"--limit must be 0 (all) or positive. Received: {args.limit}")
    if args.beam_size is not None and args.beam_size < 1:
        parser.error(f"--beam-size must be at least 1. Received: {args.beam_size}")
    try:
        labels = [label_of(model) for model in args.models]  # a wrong path fails before the runs
    except FileNotFoundError as error:
        raise SystemExit(str(error)) from None
    inputs, skipped = read_inputs(names, args.data, args.corpus, args.limit)
    for name, reason in skipped.items():
        print(f"note: {name} left out: {reason}")
    if not inputs:
        raise SystemExit(f"nothing to measure: every set asked for is missing (--data {args.data})")

    units = ", ".join(cpu_bfloat16_units()) or "none (bfloat16 is emulated)"
    print(f"machine: {machine()}, TensorFlow {tf.__version__}; bfloat16 units: {units}")
    rows = []
    for model, label in zip(args.models, labels, strict=True):
        translator = Translator.load(model, args.precision)
        info = translator.info
        print(f"{label}: {info.path}, precision {info.precision} ({info.precision_reason}; "
              f"carries {', '.join(info.precisions)})", flush=True)
        rows.append(evaluate(translator, label, decoding(translator, args.beam_size), inputs))
    columns = [name for name in names if name in inputs]
    sizes = ", ".join(f"{name} {len(inputs[name])}" for name in columns)
    print(f"data: {args.data}; corpus: {args.corpus or 'none'}; items per set: {sizes}"
          f"{f' (--limit {args.limit})' if args.limit else ''}\n")
    print(table(rows, columns))
    if args.json:
        args.json.write_text(json.dumps({
            "machine": machine(), "tensorflow": tf.__version__, "bfloat16_units": units,
            "data": str(args.data), "corpus": str(args.corpus) if args.corpus else None,
            "limit": args.limit, "sets": {name: len(inputs[name]) for name in columns},
            "skipped": skipped, "results": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
