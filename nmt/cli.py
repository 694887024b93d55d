"""The `nmt` command: serve, translate, batch, train, evaluate, export."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

DEFAULT_MODEL = Path(__file__).resolve().parent.parent / "models" / "en-fr"


def _add_train(sub) -> None:
    p = sub.add_parser("train", help="train a model from a YAML config")
    p.add_argument("--config", required=True, help="training/configs/<name>.yaml")
    p.add_argument("--run", required=True, help="run directory (checkpoints, logs, tokenizer)")
    p.add_argument("--resume", action="store_true", help="continue the run in --run")
    p.add_argument("--max-time", help="wall-clock budget, e.g. 90m (overrides the config)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a config value, e.g. --set optim.max_steps=100")
    p.set_defaults(func=_train)


def _train(args) -> int:
    from training.config import parse_overrides
    from training.train import run

    run(args.config, args.run, resume=args.resume, max_time=args.max_time,
        overrides=parse_overrides(args.set))
    return 0


def _add_export(sub) -> None:
    p = sub.add_parser("export", help="export a SavedModel (TF Serving layout)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--run", help="training run directory (uses its best dev checkpoint)")
    source.add_argument("--from-export",
                        help="an existing <base>/<version>, or a <base> (its highest version), "
                             "to re-export")
    p.add_argument("--out", required=True, help="base directory, e.g. models/en-fr")
    p.add_argument("--version", type=int,
                   help="version number (a new directory); with --from-export, defaults to "
                        "the version re-exported")
    p.add_argument("--metadata", help="JSON file of extra metadata (scores, attribution)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing version (e.g. re-export after a format change)")
    p.set_defaults(func=_export)


def _export(args) -> int:
    import json

    from nmt.export import export_saved_model, module_from_export
    from nmt.translator import resolve_version_dir
    from training.export_run import module_from_run

    extra = json.loads(Path(args.metadata).read_text()) if args.metadata else {}
    version = args.version
    if args.run:
        if version is None:
            raise ValueError("--version is required with --run, e.g. --version 3")
        module = module_from_run(Path(args.run), extra)
    else:
        source = resolve_version_dir(args.from_export)
        if version is None:
            if not source.name.isdigit():
                raise ValueError(f"{source} is not a numbered version: pass --version N")
            version = int(source.name)
        module = module_from_export(source)
        module.metadata.update(extra)
    path = export_saved_model(module, args.out, version, overwrite=args.overwrite)
    print(path)
    return 0


def _add_decode_options(p) -> None:
    p.add_argument("--beam-size", type=int, default=5, help="beams; 1 = greedy (default 5)")
    p.add_argument("--n-best", type=int, default=1, help="hypotheses per sentence")
    p.add_argument("--length-penalty", type=float, default=0.6, help="alpha of Wu et al. 2016")
    p.add_argument("--coverage-penalty", type=float, default=0.0, help="beta of Wu et al. 2016")
    p.add_argument("--max-length-ratio", type=float, default=2.0,
                   help="most target tokens per source token")
    p.add_argument("--no-replace-unknown", action="store_true",
                   help="keep unknown pieces instead of copying the attended source word")


def _decode_options(args):
    from nmt.types import DecodeOptions

    return DecodeOptions(
        beam_size=args.beam_size, n_best=args.n_best, length_penalty=args.length_penalty,
        coverage_penalty=args.coverage_penalty, max_length_ratio=args.max_length_ratio,
        replace_unknown=not args.no_replace_unknown,
    )


def _add_translate(sub) -> None:
    p = sub.add_parser("translate", help="translate sentences (arguments or stdin, one a line)")
    p.add_argument("sentences", nargs="*", help="English sentences; read from stdin if none")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--model", default=str(DEFAULT_MODEL),
                       help="SavedModel base or version directory (default: models/en-fr)")
    where.add_argument("--server", help="host:port of a running `nmt serve`")
    p.add_argument("--alignment", action="store_true", help="print the word alignment table")
    p.add_argument("--plot", help="write the attention heatmap of the first sentence (PNG)")
    _add_decode_options(p)
    p.set_defaults(func=_translate)


def _translate(args) -> int:
    sentences = args.sentences or [line.rstrip("\n") for line in sys.stdin]
    sentences = [s for s in sentences if s.strip()]
    if not sentences:
        raise ValueError("nothing to translate: give sentences as arguments or on stdin")
    options = _decode_options(args)
    if args.server:
        from nmt.client import TranslationClient

        with TranslationClient(args.server) as client:
            results = client.translate(sentences, options)
    else:
        from nmt.translator import Translator

        results = Translator.load(args.model).translate(sentences, options)
    _print_translations(results, args.alignment)
    if args.plot:
        from nmt.plots import save_attention_plot

        save_attention_plot(results[0], args.plot)
        print(f"attention heatmap written to {args.plot}", file=sys.stderr)
    return 0


def _print_translations(results, with_alignment: bool) -> None:
    from nmt.translator import format_alignment_table

    for result in results:
        if len(result.nbest) > 1:
            for rank, hypothesis in enumerate(result.nbest, 1):
                print(f"{rank}\t{hypothesis.score:.3f}\t{hypothesis.text}")
        else:
            print(result.text)
        if with_alignment:
            print(format_alignment_table(result))
            print(f"pharaoh: {result.best.pharaoh()}\n")


def _add_evaluate(sub) -> None:
    p = sub.add_parser("evaluate", help="BLEU/chrF on a test set and AER on gold alignments")
    p.add_argument("--model", default=str(DEFAULT_MODEL), help="SavedModel base or version dir")
    p.add_argument("--test", help="TSV English<TAB>French (multi-reference by identical source)")
    p.add_argument("--source", help="source file, one sentence a line (with --reference)")
    p.add_argument("--reference", action="append", default=[],
                   help="reference file(s), line-aligned with --source; repeat for more")
    p.add_argument("--alibi", help="alibi-enfr-alignments directory, for AER")
    p.add_argument("--pharaoh", nargs=3, metavar=("SOURCE", "TARGET", "GOLD"),
                   help="tokenized source/target files and gold links (i-j sure, ipj possible)")
    p.add_argument("--limit", type=int, default=0, help="use only the first N test pairs")
    p.add_argument("--json", help="also write the results to this JSON file")
    _add_decode_options(p)
    p.set_defaults(func=_evaluate)


def _evaluate(args) -> int:
    import json

    from nmt import data, evaluation, scoring
    from nmt.translator import Translator

    if not (args.test or args.source or args.alibi or args.pharaoh):
        raise ValueError("give --test, --source/--reference, --alibi or --pharaoh")
    translator = Translator.load(args.model)
    results: dict = {}
    pairs = _evaluation_pairs(args, data)
    if pairs:
        report = scoring.score_translations(translator, pairs, _decode_options(args))
        print(f"BLEU {report.scores.bleu:.2f}  chrF {report.scores.chrf:.2f}  "
              f"({report.sentences} sentences, {report.references_per_sentence:.2f} refs each, "
              f"{report.seconds:.0f}s)")
        print(f"  {report.scores.bleu_signature}\n  {report.scores.chrf_signature}")
        results["translation"] = {
            "bleu": round(report.scores.bleu, 2), "chrf": round(report.scores.chrf, 2),
            "bleu_signature": report.scores.bleu_signature,
            "chrf_signature": report.scores.chrf_signature,
            "sentences": report.sentences, "beam_size": args.beam_size,
        }
    gold = _gold_alignments(args, evaluation)
    if gold:
        report = scoring.score_alignments(translator, gold)
        s = report.scores
        print(f"AER {s.aer:.3f}  precision {s.precision:.3f}  recall {s.recall:.3f}  "
              f"({report.sentences} pairs, {report.word_count_mismatches} word-count mismatches)")
        results["alignment"] = {"aer": round(s.aer, 4), "precision": round(s.precision, 4),
                                "recall": round(s.recall, 4), "pairs": report.sentences}
    scores = {}
    if "translation" in results:
        scores["test_bleu"] = results["translation"]["bleu"]
        scores["test_chrf"] = results["translation"]["chrf"]
    if "alignment" in results:
        scores["alibi_aer"] = results["alignment"]["aer"]
    if args.json:
        # `scores` is what `nmt export --metadata` stores and GetModelInfo reports.
        Path(args.json).write_text(json.dumps({"scores": scores, **results}, indent=2) + "\n")
    return 0


def _evaluation_pairs(args, data) -> list[tuple[str, str]]:
    if args.test:
        pairs = data.read_pairs(args.test)
    elif args.source:
        if not args.reference:
            raise ValueError("--source needs at least one --reference file")
        sources = data.read_lines(args.source)
        pairs = []
        for reference_file in args.reference:
            references = data.read_lines(reference_file)
            if len(references) != len(sources):
                raise ValueError(f"{reference_file} has {len(references)} lines but "
                                 f"{args.source} has {len(sources)}; they must be line-aligned")
            pairs.extend(zip(sources, references, strict=True))
    else:
        return []
    return pairs[: args.limit] if args.limit else pairs


def _gold_alignments(args, evaluation) -> list:
    if args.alibi:
        return evaluation.read_alibi(args.alibi)
    if args.pharaoh:
        from nmt import data

        sources, targets = (data.read_lines(p) for p in args.pharaoh[:2])
        links = evaluation.read_pharaoh_gold(args.pharaoh[2])
        if not len(sources) == len(targets) == len(links):
            raise ValueError("--pharaoh files must have the same number of lines")
        return [
            evaluation.AlignedPair(tuple(s.split()), tuple(t.split()), frozenset(sure),
                                   frozenset(possible))
            for s, t, (sure, possible) in zip(sources, targets, links, strict=True)
        ]
    return []


def _add_optional(sub, module: str, function: str) -> None:
    """Registers a subcommand that lives beside its implementation (serving/, batch/)."""
    import importlib

    try:
        getattr(importlib.import_module(module), function)(sub)
    except ModuleNotFoundError as error:
        if error.name != module:
            raise


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    parser = argparse.ArgumentParser(prog="nmt", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_translate(sub)
    _add_evaluate(sub)
    _add_train(sub)
    _add_export(sub)
    _add_optional(sub, "serving.cli", "add_serve_parser")
    _add_optional(sub, "batch.cli", "add_batch_parser")
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError) as error:
        print(f"nmt {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
