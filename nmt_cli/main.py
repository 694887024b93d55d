"""The `nmt` command: serve, translate, translate-file, align, batch, corpus, shards, train,
align-corpus, distill, evaluate, export."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from pathlib import Path

# None of these imports TensorFlow (a test checks it): `quiet_framework_logs` must run first.
from batch.cli import add_batch_parser
from nmt.constants import DEFAULT_BATCH_SIZE
from nmt.inference.precision import BOTH, EXPORT_CHOICES
from nmt.options import (
    DEFAULT_MODEL_DIR,
    add_decode_options,
    add_precision_option,
    client_decode_options,
    decode_options,
    local_precision,
)
from nmt_cli.extras import missing_extra_message
from nmt_cli.files import add_translate_file_parser
from nmt_cli.glossary_options import add_glossary_arguments, read_glossary_option, server_glossary
from nmt_cli.keys import add_keys_parser
from nmt_cli.shards import add_shards_parser
from serving.cli import add_serve_parser
from training.corpus.cli import add_corpus_parser
from training.distill import add_distill_parser

VERBOSE_ENV = "NMT_VERBOSE"
_quieted = False


def _add_train(sub) -> None:
    p = sub.add_parser("train", help="train a model from a YAML config")
    p.add_argument("--config", required=True, help="training/configs/<name>.yaml")
    p.add_argument("--run", required=True, help="run directory (checkpoints, logs, tokenizer)")
    p.add_argument("--resume", action="store_true", help="continue the run in --run")
    p.add_argument("--max-time", help="wall-clock budget, e.g. 90m (overrides the config)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a config value, e.g. --set optim.max_steps=100")
    p.add_argument("--backend", choices=("tensorflow", "jax", "torch"),
                   help="Keras backend; jax and torch train from --shards "
                        "(training.keras_trainer; default: tensorflow's `nmt train`)")
    p.add_argument("--shards", help="pre-tokenized shards (`nmt shards`): train with the Keras "
                                    "trainer on --backend (KERAS_BACKEND, else jax)")
    p.set_defaults(func=_train)


def _train_on_shards(args) -> int:
    """`nmt train --shards`: the Keras trainer on any backend (training.accelerator.train)."""
    from training.accelerator.train import main as train_on_shards

    if not args.shards:
        print(f"nmt train: --backend {args.backend} trains from pre-tokenized shards: build "
              "them with `nmt shards` and pass --shards DIR", file=sys.stderr)
        return 2
    backend = args.backend or os.environ.get("KERAS_BACKEND", "jax")
    argv = ["--config", args.config, "--shards", args.shards, "--run", args.run,
            "--backend", backend, *(f"--set={pair}" for pair in args.set)]
    if args.resume:
        argv.append("--resume")
    if args.max_time:
        argv += ["--max-time", args.max_time]
    return train_on_shards(argv)


def _train(args) -> int:
    if args.shards or args.backend not in (None, "tensorflow"):
        return _train_on_shards(args)
    from training.config import parse_overrides
    from training.train import TrainingInterrupted, run

    try:
        run(args.config, args.run, resume=args.resume, max_time=args.max_time,
            overrides=parse_overrides(args.set))
    except TrainingInterrupted as stopped:  # a multi-worker run stopped by a signal
        print(f"nmt train: {stopped}", file=sys.stderr)
        return 1  # not 0: a job controller must start the workers again
    return 0


def _add_align_corpus(sub) -> None:
    p = sub.add_parser(
        "align-corpus",
        help="word-align the training pairs for guided alignment (needs the [align] extra)",
    )
    p.add_argument("--config", required=True, help="training/configs/<name>.yaml")
    p.add_argument("--run", required=True,
                   help="run directory: its tokenizers are used (trained there if absent)")
    p.add_argument("--out", help="Pharaoh file to write (default: <run>/alignments.txt)")
    p.add_argument("--symmetrization",
                   help="forward, reverse, intersection, union or grow-diag-final-and "
                        "(default: the config's guided_alignment.symmetrization)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a config value")
    p.set_defaults(func=_align_corpus)


def _align_corpus(args) -> int:
    from training.config import parse_overrides
    from training.train import align_training_corpus

    path, count = align_training_corpus(
        args.config, args.run, out=args.out, symmetrization=args.symmetrization,
        overrides=parse_overrides(args.set),
    )
    print(f"{count} pairs aligned -> {path}")
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
    p.add_argument("--average", type=int, default=0, metavar="N",
                   help="with --run: export the mean of the last N checkpoints instead of the "
                        "best dev-BLEU weights")
    p.add_argument("--precision", choices=EXPORT_CHOICES, default=BOTH,
                   help="the paths the export carries: both (the default: float32 in "
                        "serving_default and the standard signatures, bfloat16 matrix products "
                        "in serving_bfloat16 and translate_with_options_bfloat16; loaders pick "
                        "one for the CPU), or only float32 or only bfloat16 (in the standard "
                        "signatures)")
    short = p.add_mutually_exclusive_group()
    short.add_argument("--shortlist-corpus", metavar="TSV",
                       help="restrict each sentence's search to a vocabulary shortlist learnt from "
                            "these (English, French) training pairs (faster for small batches, "
                            "lower BLEU; see nmt/inference/shortlist.py)")
    short.add_argument("--no-shortlist", action="store_true",
                       help="with --from-export: search the whole vocabulary again")
    p.add_argument("--shortlist-size", type=int, nargs=2, default=(500, 100),
                   metavar=("FREQUENT", "PER_SOURCE"),
                   help="target tokens always kept, and kept per source token (default: 500 100)")
    p.add_argument("--metadata", help="JSON file of extra metadata (scores, attribution)")
    p.add_argument("--links", choices=("argmax", "intersect"),
                   help="the rule of the exported word links (default: argmax, or the "
                        "export's own with --from-export); clients may read others from the "
                        "returned word matrix")
    p.add_argument("--recommended-beam-size", type=int, metavar="N",
                   help="the model's default beam wherever a caller sets none (metadata "
                        "recommended_decoding), e.g. 1 for a distilled model (default: the "
                        "export's own with --from-export, else none: beam 5)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing version (e.g. re-export after a format change)")
    p.set_defaults(func=_export)


def _export(args) -> int:
    import json

    from nmt.inference.export import export_saved_model, module_from_export
    from nmt.paths import resolve_version_dir
    from training.export_run import module_from_run

    extra = json.loads(Path(args.metadata).read_text()) if args.metadata else {}
    version = args.version
    if args.run:
        if version is None:
            raise ValueError("--version is required with --run, e.g. --version 3")
        module = module_from_run(Path(args.run), extra, average=args.average,
                                 precision=args.precision)
    else:
        if args.average:
            raise ValueError("--average reads a run's checkpoints: use it with --run")
        source = resolve_version_dir(args.from_export)
        if version is None:
            if not source.name.isdigit():
                raise ValueError(f"{source} is not a numbered version: pass --version N")
            version = int(source.name)
        module = module_from_export(source, args.precision)
        for key, value in extra.items():  # scores from several evaluations add up
            if isinstance(value, dict) and isinstance(module.metadata.get(key), dict):
                module.metadata[key] = {**module.metadata[key], **value}
            else:
                module.metadata[key] = value
    if args.links:
        module.metadata["word_links"] = args.links
    if args.recommended_beam_size is not None:
        from nmt.types import RECOMMENDED_DECODING, recommended_options

        decoding = {**module.metadata.get(RECOMMENDED_DECODING, {}),
                    "beam_size": args.recommended_beam_size}
        recommended_options({RECOMMENDED_DECODING: decoding})  # ValueError if out of range
        module.metadata[RECOMMENDED_DECODING] = decoding
    if args.shortlist_corpus:
        from nmt.data.corpus import read_pairs
        from nmt.inference.shortlist import shortlist_from_pairs

        frequent, per_source = args.shortlist_size
        shortlist = shortlist_from_pairs(read_pairs(args.shortlist_corpus), module.tokenizers,
                                         frequent=frequent, per_source=per_source)
        module = module.with_shortlist(shortlist, Path(args.shortlist_corpus).name)
    elif args.no_shortlist:
        module = module.with_shortlist(None)
    path = export_saved_model(module, args.out, version, overwrite=args.overwrite)
    print(path)
    return 0


def _add_translate(sub) -> None:
    p = sub.add_parser("translate", help="translate sentences (arguments or stdin, one a line)")
    p.add_argument("sentences", nargs="*", help="English sentences; read from stdin if none")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--model", default=str(DEFAULT_MODEL_DIR),
                       help="SavedModel base or version directory (default: models/en-fr)")
    where.add_argument("--server", help="host:port of a running `nmt serve`")
    p.add_argument("--alignment", action="store_true", help="print the word alignment table")
    p.add_argument("--plot", help="write the attention heatmap of the first sentence (PNG)")
    p.add_argument("--format", choices=("sentences", "text", "html", "xml"), default="sentences",
                   help="sentences (default): one sentence a line; text, html or xml: one "
                        "document a line, split into sentences, tags carried across")
    p.add_argument("--placeholders", action=argparse.BooleanOptionalAction, default=True,
                   help="give placeholders (%%s, %%1$s, {0}, {name}, &amp;) back exactly, once "
                        "each, where the word links put them (default); --no-placeholders lets "
                        "the model read them as text (docs/documents.md)")
    add_glossary_arguments(p, "--alignment lists the terms applied")
    add_decode_options(p)
    add_precision_option(p)
    _add_link_options(p)
    p.set_defaults(func=_translate)


def _add_link_options(p) -> None:
    from nmt.alignment.word_links import DEFAULT_THRESHOLD, LINK_RULES

    p.add_argument("--links", choices=LINK_RULES,
                   help="how word links are read from the alignment matrix (default: the "
                        "model's, argmax); see nmt/alignment/word_links.py")
    p.add_argument("--link-threshold", type=float, default=DEFAULT_THRESHOLD,
                   help=f"least weight of a link for --links threshold|grow "
                        f"(default {DEFAULT_THRESHOLD})")


def _link_options(args) -> dict:
    """`links` and `link_threshold` for `Translator` and the clients."""
    if args.links is None:
        return {}
    return {"links": args.links, "link_threshold": args.link_threshold}


def _translate(args) -> int:
    local_precision(args)  # refuses a path with --server
    glossary = read_glossary_option(args)
    if args.format != "sentences":  # documents: nmt_cli/documents.py
        from nmt_cli.documents import translate_command

        return translate_command(args, glossary)
    sentences = args.sentences or [line.rstrip("\n") for line in sys.stdin]
    sentences = [s for s in sentences if s.strip()]
    if not sentences:
        raise ValueError("nothing to translate: give sentences as arguments or on stdin")
    if args.server:
        from nmt_api.client import TranslationClient

        with TranslationClient(args.server) as client:
            results = client.translate(sentences, client_decode_options(args, client),
                                       keep_placeholders=args.placeholders,
                                       **_link_options(args), **server_glossary(args, glossary))
    else:
        from documents.protection import translate_protected
        from nmt.inference.translator import Translator

        translator = Translator.load(args.model, args.precision)
        options = decode_options(args, translator.info.default_options)
        results = translate_protected(
            sentences, lambda read: translator.translate(read, options, **_link_options(args)),
            enabled=args.placeholders)
        if glossary is not None:
            from documents.terminology import apply_glossary

            results = [apply_glossary(r, glossary)[0] for r in results]
    _print_translations(results, args.alignment)
    if args.plot:
        from nmt.alignment.plots import save_attention_plot

        save_attention_plot(results[0], args.plot)
        print(f"attention heatmap written to {args.plot}", file=sys.stderr)
    return 0


def _print_translations(results, with_alignment: bool) -> None:
    from nmt.alignment.word_links import format_alignment_table

    for result in results:
        if len(result.nbest) > 1:
            for rank, hypothesis in enumerate(result.nbest, 1):
                print(f"{rank}\t{hypothesis.score:.3f}\t{hypothesis.text}")
        else:
            print(result.text)
        if with_alignment:
            print(format_alignment_table(result))
            for term in result.best.applied_terms:
                form = f", {term.form}" if term.form else ""
                matched = f" as {term.matched!r}" if term.matched != term.source else ""
                print(f"glossary: {term.source!r}{matched} {term.source_span[0]}:"
                      f"{term.source_span[1]} -> {term.target!r} {term.target_span[0]}:"
                      f"{term.target_span[1]} ({term.placement}{form})")
            print(f"pharaoh: {result.best.pharaoh()}\n")


def _add_align(sub) -> None:
    p = sub.add_parser(
        "align", help="word-align given sentence pairs with the model's attention (forced decoding)"
    )
    given = p.add_mutually_exclusive_group(required=True)
    given.add_argument("--tsv", help="pairs as English<TAB>French lines")
    given.add_argument("--source", help="English sentences, one a line (with --target)")
    p.add_argument("--target", help="French sentences, line-aligned with --source")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--model", default=str(DEFAULT_MODEL_DIR),
                       help="SavedModel base or version directory (default: models/en-fr)")
    where.add_argument("--server", help="host:port of a running `nmt serve`")
    p.add_argument("--alignment", action="store_true",
                   help="write JSON Lines with tokens, score, confidence, word and piece "
                        "log-probabilities and attention matrix instead of Pharaoh links")
    p.add_argument("--output", help="file to write (default: standard output)")
    p.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE,
                   help=f"pairs per model call (default {DEFAULT_BATCH_SIZE})")
    p.add_argument("--format", choices=("html", "xml"),
                   help="sources with markup, targets plain: write each target with the "
                        "source's tags put in place through the alignment")
    _add_link_options(p)
    p.set_defaults(func=_align)


def _align(args) -> int:
    import json

    pairs = _alignment_pairs(args)
    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be at least 1. Received: {args.batch_size}")
    align = _aligner(args)
    if args.format:  # tags projected onto the targets: nmt_cli/documents.py
        from nmt_cli.documents import align_command

        return align_command(args, pairs, align)
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    try:
        for start in range(0, len(pairs), args.batch_size):
            chunk = pairs[start:start + args.batch_size]
            results = align([s for s, _ in chunk], [t for _, t in chunk], **_link_options(args))
            for (source, target), result in zip(chunk, results, strict=True):
                if args.alignment:
                    out.write(json.dumps(_alignment_record(source, target, result),
                                         ensure_ascii=False) + "\n")
                else:
                    out.write(result.best.pharaoh() + "\n")
    finally:
        if args.output:
            out.close()
    return 0


def _alignment_pairs(args) -> list[tuple[str, str]]:
    """The pairs to align; a non-blank source with a blank target names its line."""
    from nmt.data.corpus import read_lines, read_pairs

    if args.tsv:
        if args.target:
            raise ValueError("--target goes with --source, not with --tsv")
        pairs = read_pairs(args.tsv)
        where = args.tsv
    else:
        if not args.target:
            raise ValueError("--source needs --target (the French file, line-aligned)")
        sources, targets = read_lines(args.source), read_lines(args.target)
        if len(sources) != len(targets):
            raise ValueError(f"{args.target} has {len(targets)} lines but {args.source} has "
                             f"{len(sources)}; they must be line-aligned")
        pairs = list(zip(sources, targets, strict=True))
        where = args.target
    for number, (source, target) in enumerate(pairs, start=1):
        if source.strip() and not target.strip():
            raise ValueError(f"{where}: pair {number} has a source but an empty target; "
                             "give the translation to align, or remove the pair")
    return pairs


def _aligner(args):
    """`(sources, targets) -> translations`, in-process or through `--server`."""
    if args.server:
        from nmt_api.client import TranslationClient

        client = TranslationClient(args.server)
        return client.align
    from nmt.inference.translator import Translator

    return Translator.load(args.model).align


def _alignment_record(source: str, target: str, result) -> dict:
    best = result.best
    return {
        "source": source, "target": target,
        "source_tokens": list(result.source_tokens), "target_tokens": list(best.target_tokens),
        "score": round(best.score, 4),
        "confidence": None if best.confidence is None else round(best.confidence, 4),
        "alignment": [[round(float(w), 4) for w in row] for row in best.alignment],
        "word_alignment": best.pharaoh(),
        **{name: [round(float(v), 4) for v in values]
           for name, values in (("word_scores", best.word_scores),
                                ("piece_scores", best.piece_scores)) if values is not None},
        **({} if best.attention is None else
           {"attention": [[round(float(w), 4) for w in row] for row in best.attention]}),
    }


def _add_evaluate(sub) -> None:
    p = sub.add_parser("evaluate", help="BLEU/chrF on a test set and AER on gold alignments")
    p.add_argument("--model", default=str(DEFAULT_MODEL_DIR), help="SavedModel base or version dir")
    p.add_argument("--test", help="TSV English<TAB>French (multi-reference by identical source)")
    p.add_argument("--source", help="source file, one sentence a line (with --reference)")
    p.add_argument("--reference", action="append", default=[],
                   help="reference file(s), line-aligned with --source; repeat for more")
    p.add_argument("--alibi", help="alibi-enfr-alignments directory, for AER")
    p.add_argument("--pharaoh", nargs=3, metavar=("SOURCE", "TARGET", "GOLD"),
                   help="tokenized source/target files and gold links (i-j sure, ipj possible)")
    p.add_argument("--limit", type=int, default=0, help="use only the first N test pairs")
    p.add_argument("--json", help="also write the results to this JSON file")
    add_decode_options(p)
    add_precision_option(p)
    _add_link_options(p)
    p.set_defaults(func=_evaluate)


def _evaluate(args) -> int:
    import json

    from nmt.evaluation import metrics, scoring
    from nmt.inference.translator import Translator

    if not (args.test or args.source or args.alibi or args.pharaoh):
        raise ValueError("give --test, --source/--reference, --alibi or --pharaoh")
    translator = Translator.load(args.model, args.precision)
    results: dict = {}
    pairs = _evaluation_pairs(args)
    if pairs:
        options = decode_options(args, translator.info.default_options)
        report = scoring.score_translations(translator, pairs, options)
        print(f"BLEU {report.scores.bleu:.2f}  chrF {report.scores.chrf:.2f}  "
              f"({report.sentences} sentences, {report.references_per_sentence:.2f} refs each, "
              f"{report.seconds:.0f}s)")
        print(f"  {report.scores.bleu_signature}\n  {report.scores.chrf_signature}")
        results["translation"] = {
            "bleu": round(report.scores.bleu, 2), "chrf": round(report.scores.chrf, 2),
            "bleu_signature": report.scores.bleu_signature,
            "chrf_signature": report.scores.chrf_signature,
            "sentences": report.sentences, "beam_size": options.beam_size,
        }
        domains = _domain_scores(pairs, report)
        if domains:
            results["translation"]["domains"] = domains
    gold = _gold_alignments(args, metrics)
    if gold:
        report = scoring.score_alignments(translator, gold, **_link_options(args))
        s = report.scores
        print(f"AER {s.aer:.3f}  precision {s.precision:.3f}  recall {s.recall:.3f}  "
              f"({report.sentences} pairs, {report.word_count_mismatches} word-count mismatches)")
        by_length = {label: round(b.aer, 4) for label, b in report.by_length.items()}
        print("  AER by source words: "
              + ", ".join(f"{label} {aer:.3f}" for label, aer in by_length.items()))
        results["alignment"] = {"aer": round(s.aer, 4), "precision": round(s.precision, 4),
                                "recall": round(s.recall, 4), "pairs": report.sentences,
                                "aer_by_source_words": by_length}
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


def _domain_scores(pairs, report) -> dict:
    """Each domain's scores where the test TSV names domains in a third column (the
    mixed dev.tsv of `nmt corpus`); printed, and returned for the JSON."""
    from nmt.evaluation.metrics import domains_of, group_references, scores_by_domain

    sources, references = group_references((source, ref) for source, ref, *_ in pairs)
    domains = domains_of(pairs, sources)
    if len(set(domains)) < 2:
        return {}
    result = {}
    for domain, scores in scores_by_domain(report.hypotheses, references, domains).items():
        count = domains.count(domain)
        print(f"  {domain or 'unnamed'}: BLEU {scores.bleu:.2f}  chrF {scores.chrf:.2f}  "
              f"({count} sentences)")
        result[domain or "unnamed"] = {"bleu": round(scores.bleu, 2),
                                       "chrf": round(scores.chrf, 2), "sentences": count}
    return result


def _evaluation_pairs(args) -> list[tuple[str, ...]]:
    """`(source, reference[, domain])` pairs of --test or --source/--reference."""
    from nmt.data.corpus import iter_pairs, read_lines

    if args.test:
        pairs = [(source, reference, domain) if domain else (source, reference)
                 for _, source, reference, domain in iter_pairs(args.test)]
    elif args.source:
        if not args.reference:
            raise ValueError("--source needs at least one --reference file")
        sources = read_lines(args.source)
        pairs = []
        for reference_file in args.reference:
            references = read_lines(reference_file)
            if len(references) != len(sources):
                raise ValueError(f"{reference_file} has {len(references)} lines but "
                                 f"{args.source} has {len(sources)}; they must be line-aligned")
            pairs.extend(zip(sources, references, strict=True))
    else:
        return []
    return pairs[: args.limit] if args.limit else pairs


def _gold_alignments(args, metrics) -> list:
    if args.alibi:
        return metrics.read_alibi(args.alibi)
    if args.pharaoh:
        from nmt.data.corpus import read_lines

        sources, targets = (read_lines(p) for p in args.pharaoh[:2])
        links = metrics.read_pharaoh_gold(args.pharaoh[2])
        if not len(sources) == len(targets) == len(links):
            raise ValueError("--pharaoh files must have the same number of lines")
        return [
            metrics.AlignedPair(tuple(s.split()), tuple(t.split()), frozenset(sure),
                                frozenset(possible))
            for s, t, (sure, possible) in zip(sources, targets, links, strict=True)
        ]
    return []


def _add_role_command(sub, name: str, add_parser) -> None:
    """`add_parser(sub)`; where it needs a role this install lacks, a `name` that says so.

    The serve command's options come from the server's modules, which a client
    install does not have: there `nmt serve [anything]` ends with the extra to
    install (see `main`), and every other command still works.
    """
    try:
        add_parser(sub)
    except ModuleNotFoundError as error:
        missing = error

        def fail(args) -> int:
            raise missing

        # No options: every argument (`--help` too) is taken as given, and the command fails.
        stand_in = sub.add_parser(name, add_help=False, prefix_chars="\0",
                                  help=f"not installed here: `nmt {name}` says what to install")
        stand_in.add_argument("arguments", nargs="*")
        stand_in.set_defaults(func=fail)


def quiet_framework_logs() -> None:
    """Keeps TensorFlow's, absl's and SentencePiece's start-up logs off the terminal.

    Those libraries write to file descriptor 2 from C++ (TF_CPP_MIN_LOG_LEVEL
    does not silence all of it, e.g. the cuInit error on a machine without a
    GPU). Descriptor 2 is pointed at /dev/null and Python's `sys.stderr`
    moves to a copy of the real stream, so the command's own messages and
    errors still show. Must run before TensorFlow is imported; only in a
    real process (not where a test harness has replaced `sys.stderr`).
    """
    global _quieted
    if _quieted or sys.stderr is not sys.__stderr__:
        return
    _quieted = True
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    sys.stderr.flush()
    real = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)
    sys.stderr = sys.__stderr__ = os.fdopen(real, "w", buffering=1, encoding="utf-8",
                                            errors="backslashreplace")
    warnings.simplefilter("ignore")  # framework deprecation notices, not the user's business
    for name in ("tensorflow", "absl", "h5py", "apache_beam"):
        logging.getLogger(name).setLevel(logging.ERROR)
    # Which precision path a loaded model runs (the server logs it in its own event).
    logging.getLogger("nmt.inference.translator").setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # Read before anything imports TensorFlow, and accepted anywhere on the line.
    verbose = "--verbose" in argv or os.environ.get(VERBOSE_ENV, "") not in ("", "0")
    argv = [arg for arg in argv if arg != "--verbose"]
    if verbose:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
    else:
        quiet_framework_logs()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    parser = argparse.ArgumentParser(prog="nmt", description=__doc__)
    parser.add_argument("--verbose", action="store_true",
                        help=f"show TensorFlow's own logs too (or set {VERBOSE_ENV}=1)")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_translate(sub)
    add_translate_file_parser(sub)
    _add_evaluate(sub)
    _add_align(sub)
    _add_train(sub)
    add_corpus_parser(sub)
    add_shards_parser(sub)
    _add_align_corpus(sub)
    _add_export(sub)
    _add_role_command(sub, "serve", add_serve_parser)
    add_keys_parser(sub)
    _add_role_command(sub, "batch", add_batch_parser)
    _add_role_command(sub, "distill", add_distill_parser)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # the reader went away (e.g. `| head`): not an error of ours
        sys.stdout = None
        return 0
    except (ValueError, FileNotFoundError) as error:
        print(f"nmt {args.command}: error: {error}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as error:  # a role this install lacks: say which extra adds it
        message = missing_extra_message(args.command, error.name or "",
                                        getattr(args, "server", None))
        if message is None:
            raise
        print(f"nmt {args.command}: error: {message}", file=sys.stderr)
        return 2
    except Exception as error:  # a server's answer (grpc.RpcError; grpc is not imported here)
        code, details = getattr(error, "code", None), getattr(error, "details", None)
        if not (callable(code) and callable(details) and hasattr(code(), "name")):
            raise
        print(f"nmt {args.command}: error: the server answered {code().name}: {details()}",
              file=sys.stderr)
        return 1


