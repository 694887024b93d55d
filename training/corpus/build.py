"""`nmt corpus`: builds a training corpus from a recipe (`training.corpus.spec`).

The build streams every source twice and holds only 64-bit keys, so its
memory grows with the number of distinct pairs (8 bytes each), not with the
text:

1. per source with `dev_pairs`, the pairs that pass the pair rules are
   counted per document, and whole documents are chosen for the held-out
   split (in an order fixed by the seed);
2. every pair goes through the pair rules (`training.corpus.filters`), the
   evaluation sets (`exclude`), exact and near duplicates, and then to the
   held-out file of its source or to a temporary training file;
3. training pairs that share a side with any held-out pair are dropped, and
   the rest are written `weight` times (a fixed sample below 1).

The output directory holds `train.tsv` (English, French, source name),
`dev-<source>.tsv` per source, `dev.tsv` (up to `dev_mix_pairs` of each
source's held-out pairs, the source name in the third column: what training
evaluates on, per domain), `recipe.yaml` (the recipe as given) and
`manifest.json` (pairs per source before and after each rule, licences and
attributions).
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from nmt.data.corpus import iter_pairs, read_lines
from training.corpus.filters import (
    PAIR_RULES,
    collapse_whitespace,
    drop_reason,
    fraction_of,
    near_key,
    pair_key,
    side_key,
)
from training.corpus.spec import CorpusSpec, SourceSpec

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
TRAIN_FILE = "train.tsv"
DEV_FILE = "dev.tsv"
# Rules applied across the corpus, after the pair rules, in this order.
CORPUS_RULES = ("evaluation_overlap", "duplicate", "near_duplicate", "dev_overlap")


def dev_file_name(source: str) -> str:
    return f"dev-{source}.tsv"


def evaluation_keys(files: list[Path]) -> set[int]:
    """`side_key`s of every sentence of the evaluation files."""
    keys: set[int] = set()
    for path in files:
        for line in read_lines(path):
            for text in _sentences_of_line(path, line):
                if text.strip():
                    keys.add(side_key(text))
    return keys


def _sentences_of_line(path: Path, line: str) -> list[str]:
    if path.suffix == ".jsonl":
        if not line.strip():
            return []
        record = json.loads(line)
        return [str(record.get(key, "")) for key in ("source", "reference")]
    if path.suffix == ".tsv":
        return line.split("\t")[:2]
    return [line]


def _clean_pairs(source: SourceSpec, spec: CorpusSpec,
                 counts: collections.Counter) -> Iterator[tuple[str, str, str]]:
    """The source's pairs that pass the pair rules, whitespace collapsed:
    `(english, french, document)`; `counts` gets `read` and one count per rule."""
    for _, english, french, origin in iter_pairs(source.path):
        counts["read"] += 1
        english, french = collapse_whitespace(english), collapse_whitespace(french)
        reason = drop_reason(english, french, spec.filters)
        if reason:
            counts[reason] += 1
            continue
        yield english, french, source.document_of(origin, english)


def choose_held_out(source: SourceSpec, spec: CorpusSpec) -> tuple[set[str], int]:
    """Whole documents of about `dev_pairs` clean pairs, in the seed's order.

    Returns:
        `(documents, documents in the source)`.
    """
    sizes: collections.Counter = collections.Counter()
    for _, _, document in _clean_pairs(source, spec, collections.Counter()):
        sizes[document] += 1
    order = sorted(sizes, key=lambda d: fraction_of(spec.seed, source.name, d))
    chosen, total = set(), 0
    # Documents of at most a tenth of the split first (so it spans ten or more), then
    # larger ones; none that would overshoot the split by a fifth.
    for largest in (max(1, source.dev_pairs // 10), None):
        for document in order:
            size = sizes[document]
            if total >= source.dev_pairs:
                break
            if document in chosen or (largest is not None and size > largest) or (
                    total + size > 1.2 * source.dev_pairs):
                continue
            chosen.add(document)
            total += size
    if len(chosen) == len(sizes):
        raise ValueError(f"sources[{source.name}]: dev_pairs={source.dev_pairs} would hold out "
                         "every document; lower dev_pairs")
    return chosen, len(sizes)


def build_corpus(spec: CorpusSpec, out_dir: str | Path, *, recipe: str | Path | None = None,
                 overwrite: bool = False) -> dict:
    """Builds the corpus of `spec` into `out_dir` and returns its manifest.

    Args:
        spec: the recipe.
        out_dir: the directory to write (created).
        recipe: the recipe file, copied into `out_dir` as `recipe.yaml`.
        overwrite: replace the files of an earlier build in `out_dir`.

    Raises:
        ValueError: `out_dir` holds a built corpus and `overwrite` is False.
        FileNotFoundError: a source, held-out or `exclude` file is missing.
    """
    out_dir = Path(out_dir)
    if (out_dir / MANIFEST).exists() and not overwrite:
        raise ValueError(f"{out_dir} already holds a corpus; pass --overwrite to rebuild it")
    for source in spec.sources:
        for path in (source.path, source.dev):
            if path and not Path(path).is_file():
                raise FileNotFoundError(f"sources[{source.name}]: {path} does not exist")
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    excluded = evaluation_keys(spec.excluded_files())
    log.info("%d distinct evaluation sentences excluded", len(excluded))
    staging = out_dir / ".staging"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    counts = {source.name: collections.Counter() for source in spec.sources}
    held_out_documents: dict[str, tuple[int, int]] = {}
    dev_keys: set[int] = set()
    seen_pairs: set[int] = set()
    seen_near: set[int] = set()
    for source in spec.sources:
        count = counts[source.name]
        held_out: set[str] = set()
        if source.dev_pairs:
            held_out, documents = choose_held_out(source, spec)
            held_out_documents[source.name] = (len(held_out), documents)
        with open(staging / dev_file_name(source.name), "w", encoding="utf-8") as dev, \
                open(staging / f"train-{source.name}.tsv", "w", encoding="utf-8") as train:
            if source.dev:
                count["dev"] += _copy_dev_file(source.dev, dev, dev_keys)
            for english, french, document in _clean_pairs(source, spec, count):
                if side_key(english) in excluded or side_key(french) in excluded:
                    count["evaluation_overlap"] += 1
                    continue
                exact = pair_key(english, french)
                if exact in seen_pairs:
                    count["duplicate"] += 1
                    continue
                seen_pairs.add(exact)
                if spec.filters.near_duplicates:
                    near = near_key(english, french)
                    if near in seen_near:
                        count["near_duplicate"] += 1
                        continue
                    seen_near.add(near)
                if document in held_out:
                    dev.write(f"{english}\t{french}\n")
                    dev_keys.update((side_key(english), side_key(french)))
                    count["dev"] += 1
                else:
                    train.write(f"{english}\t{french}\n")
        log.info("%s: %s", source.name, dict(count))
    del seen_pairs, seen_near
    with open(out_dir / TRAIN_FILE, "w", encoding="utf-8") as train:
        for source in spec.sources:
            _write_weighted(source, spec.seed, staging / f"train-{source.name}.tsv", train,
                            dev_keys, counts[source.name])
    for source in spec.sources:
        os.replace(staging / dev_file_name(source.name), out_dir / dev_file_name(source.name))
    _write_dev_mix(spec, out_dir)
    shutil.rmtree(staging)
    if recipe:
        shutil.copyfile(recipe, out_dir / "recipe.yaml")
    manifest = make_manifest(spec, counts, held_out_documents, len(excluded),
                             time.time() - started)
    write_manifest(out_dir / MANIFEST, manifest)
    return manifest


def write_manifest(path: str | Path, manifest: dict) -> None:
    """Writes a manifest as indented UTF-8 JSON, whole or not at all (a temporary file
    renamed over `path`)."""
    path = Path(path)
    partial = path.with_name(path.name + ".part")
    with open(partial, "w", encoding="utf-8") as out:
        out.write(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, path)


def _copy_dev_file(path: str, out, dev_keys: set[int]) -> int:
    written = 0
    for _, english, french, _ in iter_pairs(path):
        english, french = collapse_whitespace(english), collapse_whitespace(french)
        out.write(f"{english}\t{french}\n")
        dev_keys.update((side_key(english), side_key(french)))
        written += 1
    return written


def _write_weighted(source: SourceSpec, seed: int, staged: Path, out, dev_keys: set[int],
                    count: collections.Counter) -> None:
    """Writes the staged training pairs not sharing a side with a held-out pair,
    each `weight` times (whole copies, then a fixed sample for the fraction)."""
    whole, fraction = int(source.weight), source.weight - int(source.weight)
    for _, english, french, _ in iter_pairs(staged):
        if side_key(english) in dev_keys or side_key(french) in dev_keys:
            count["dev_overlap"] += 1
            continue
        count["train"] += 1
        copies = whole + (fraction_of(seed, source.name, english, french) < fraction)
        for _ in range(copies):
            out.write(f"{english}\t{french}\t{source.name}\n")
        count["train_written"] += copies


def _write_dev_mix(spec: CorpusSpec, out_dir: Path) -> None:
    with open(out_dir / DEV_FILE, "w", encoding="utf-8") as mix:
        for source in spec.sources:
            for number, (_, english, french, _) in enumerate(
                    iter_pairs(out_dir / dev_file_name(source.name))):
                if spec.dev_mix_pairs and number >= spec.dev_mix_pairs:
                    break
                mix.write(f"{english}\t{french}\t{source.name}\n")


def make_manifest(spec: CorpusSpec, counts: dict[str, collections.Counter],
                  held_out_documents: dict[str, tuple[int, int]], excluded: int,
                  seconds: float) -> dict:
    """What was built: per source, the pairs read, dropped by each rule, held out,
    kept and written; the filters; licences and attributions."""
    sources = []
    for source in spec.sources:
        count = counts[source.name]
        entry = {
            "name": source.name,
            "file": Path(source.path).name,
            "licence": source.licence,
            "attribution": source.attribution,
            "weight": source.weight,
            "read": count["read"],
            "dropped": {rule: count[rule] for rule in (*PAIR_RULES, *CORPUS_RULES)},
            "dev": count["dev"],
            "dev_file": dev_file_name(source.name),
            "train": count["train"],
            "train_written": count["train_written"],
        }
        if source.dev:
            entry["dev_from"] = Path(source.dev).name
        if source.name in held_out_documents:
            chosen, documents = held_out_documents[source.name]
            entry["held_out"] = {"by": source.hold_out, "units": chosen, "of": documents}
        sources.append(entry)
    return {
        "name": spec.name,
        "seed": spec.seed,
        "train_file": TRAIN_FILE,
        "train_pairs": sum(entry["train_written"] for entry in sources),
        "dev_file": DEV_FILE,
        "dev_mix_pairs": spec.dev_mix_pairs,
        "filters": {**dataclasses.asdict(spec.filters),
                    "char_ratio": list(spec.filters.char_ratio)},
        "excluded_files": [Path(p).name for p in spec.excluded_files()],
        "excluded_sentences": excluded,
        "sources": sources,
        "build_seconds": round(seconds, 1),
    }
