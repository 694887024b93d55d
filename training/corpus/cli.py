"""`nmt corpus`: the command line of `training.corpus.build` (no TensorFlow import)."""

from __future__ import annotations

import json
from pathlib import Path


def add_corpus_parser(sub) -> None:
    """Registers `nmt corpus` on the `nmt` command's subparsers."""
    p = sub.add_parser(
        "corpus", help="build a training corpus from a recipe (sources, weights, filters)",
        description="Reads every source of the recipe, drops pairs by the recipe's filters, "
                    "evaluation text and duplicates, holds out whole documents per source, and "
                    "writes train.tsv, dev.tsv, dev-<source>.tsv and manifest.json into --out.")
    p.add_argument("--recipe", required=True, type=Path,
                   help="the corpus recipe, e.g. training/corpora/en-fr-broad.yaml")
    p.add_argument("--out", required=True, type=Path,
                   help="directory to write (keep it outside the work tree: it is large)")
    p.add_argument("--overwrite", action="store_true", help="rebuild a corpus already in --out")
    p.set_defaults(func=_corpus)


def _corpus(args) -> int:
    from training.corpus.build import MANIFEST, build_corpus
    from training.corpus.spec import load_spec

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
