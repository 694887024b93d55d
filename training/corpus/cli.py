"""`nmt corpus` and `nmt corpus fetch`: the command line of `training.corpus.build` and
`training.corpus.fetch` (no TensorFlow import)."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path


def add_corpus_parser(sub) -> None:
    """Registers `nmt corpus` (and its `fetch`) on the `nmt` command's subparsers."""
    p = sub.add_parser(
        "corpus", help="build a training corpus from a recipe (sources, weights, filters)",
        description="Reads every source of the recipe, drops pairs by the recipe's filters, "
                    "evaluation text and duplicates, holds out whole documents per source, and "
                    "writes train.tsv, dev.tsv, dev-<source>.tsv and manifest.json into --out. "
                    "`nmt corpus fetch` first rebuilds the sources of en-fr-broad from their "
                    "public repositories.")
    p.add_argument("--recipe", type=Path,
                   help="the corpus recipe, e.g. training/corpora/en-fr-broad.yaml (required)")
    p.add_argument("--out", type=Path,
                   help="directory to write (keep it outside the work tree: it is large) "
                        "(required)")
    p.add_argument("--overwrite", action="store_true", help="rebuild a corpus already in --out")
    p.set_defaults(func=functools.partial(_corpus, parser=p))
    commands = p.add_subparsers(dest="corpus_command", metavar="{fetch}")
    _add_fetch_parser(commands)


def _add_fetch_parser(commands) -> None:
    from training.corpus.sources import SOURCES  # the standard library only

    names = ", ".join(f"{name} ({source.repository})" for name, source in SOURCES.items())
    p = commands.add_parser(
        "fetch", help="rebuild the laws, docs and UI sources from their public repositories",
        description="Downloads each source's repository archive from codeload.github.com at "
                    "its pinned commit (resumed, retried, into --cache), pairs English and "
                    f"French ({names}), collapses whitespace, drops exact duplicates and pairs "
                    "with a side in an evaluation file, and writes <file>.tsv.gz and "
                    "<file>.manifest.json into --out (docs/training.md).")
    p.add_argument("--out", required=True, type=Path,
                   help="directory of the files, e.g. ../shared/data/more-enfr (where "
                        "training/corpora/en-fr-broad.yaml reads them)")
    p.add_argument("--source", choices=(*SOURCES, "all"), default="all",
                   help="which source to rebuild (default: all three)")
    p.add_argument("--archive", action="append", default=[], metavar="[LABEL=]PATH",
                   help="use an archive already downloaded instead of downloading it (with "
                        "--source); the docs have one per branch: --archive 3.11=PATH")
    p.add_argument("--ref", action="append", default=[], metavar="[LABEL=]REF",
                   help="download another commit or branch than the pinned one (with "
                        "--source), e.g. --ref 3.13=5881a0f86c35")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="an evaluation file: pairs with a side in it are dropped (repeatable)")
    p.add_argument("--recipe", type=Path,
                   help="also drop pairs with a side in the evaluation files this corpus "
                        "recipe excludes (its `exclude` list)")
    p.add_argument("--cache", type=Path,
                   help="where archives are downloaded (default ~/.cache/nmt/corpus-sources)")
    caps = ", ".join(f"{name} {source.max_bytes / 2**30:g}" for name, source in SOURCES.items())
    p.add_argument("--max-bytes", type=int,
                   help=f"the largest archive to download, in bytes (default, GiB: {caps})")
    p.add_argument("--overwrite", action="store_true", help="replace files already in --out")
    p.set_defaults(func=_fetch)


def _corpus(args, parser) -> int:
    from training.corpus.build import MANIFEST, build_corpus
    from training.corpus.spec import load_spec

    if args.recipe is None or args.out is None:
        parser.error("the following arguments are required: --recipe, --out "
                     "(or `nmt corpus fetch` to download its sources)")
    manifest = build_corpus(load_spec(args.recipe), args.out, recipe=args.recipe,
                            overwrite=args.overwrite)
    print(f"{'source':<12} {'read':>9} {'dropped':>9} {'dev':>7} {'train':>9} {'written':>9}")
    for source in manifest["sources"]:
        print(f"{source['name']:<12} {source['read']:>9,} {sum(source['dropped'].values()):>9,} "
              f"{source['dev']:>7,} {source['train']:>9,} {source['train_written']:>9,}")
    print(f"{manifest['train_pairs']:,} training pairs -> {args.out / manifest['train_file']}; "
          f"per-rule counts in {args.out / MANIFEST}")
    if any(source["train"] == 0 for source in manifest["sources"]):
        print("warning: a source kept no training pair: "
              + json.dumps([s["name"] for s in manifest["sources"] if s["train"] == 0]))
    return 0


def _fetch(args) -> int:
    from training.corpus.download import DownloadError
    from training.corpus.fetch import fetch_source, manifest_name
    from training.corpus.sources import SOURCES
    from training.corpus.spec import excluded_files, load_spec

    if (args.archive or args.ref) and args.source == "all":
        raise ValueError("--archive and --ref name one source's archives: add --source "
                         f"({', '.join(SOURCES)})")
    patterns = list(args.exclude)
    if args.recipe is not None:
        patterns += load_spec(args.recipe).exclude
    exclude = excluded_files(patterns)
    if not exclude:
        print("warning: no evaluation file given (--recipe or --exclude): pairs that occur in "
              "evaluation sets are kept", file=sys.stderr)
    names = list(SOURCES) if args.source == "all" else [args.source]
    print(f"{'source':<6} {'read':>9} {'empty':>7} {'duplicate':>9} {'evaluation':>10} "
          f"{'written':>9}  file")
    for name in names:
        try:
            manifest = fetch_source(
                SOURCES[name], args.out, cache_dir=args.cache,
                archives={k: Path(v) for k, v in _labelled(args.archive).items()},
                refs=_labelled(args.ref), exclude=exclude, overwrite=args.overwrite,
                max_bytes=args.max_bytes)
        except DownloadError as error:
            print(f"nmt corpus fetch: error: {error}", file=sys.stderr)
            return 2
        dropped = manifest["dropped"]
        print(f"{name:<6} {manifest['read']:>9,} {dropped['empty']:>7,} "
              f"{dropped['duplicate']:>9,} {dropped['evaluation_overlap']:>10,} "
              f"{manifest['written']:>9,}  {args.out / manifest['file']}")
    print(f"counts, archives and commits in {args.out}/*{manifest_name('')}")
    return 0


def _labelled(values: list[str]) -> dict[str, str]:
    """`["3.11=a.tar.gz", "b.tar.gz"]` -> `{"3.11": "a.tar.gz", "": "b.tar.gz"}`."""
    labelled = {}
    for value in values:
        label, sep, rest = value.partition("=")
        label, rest = (label, rest) if sep and not label.startswith(("/", ".")) else ("", value)
        if label in labelled:
            raise ValueError(f"{label or 'the archive'} is given twice. Received: {values}")
        labelled[label] = rest
    return labelled
