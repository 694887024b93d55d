"""A training corpus with a share of its pairs carrying inline term annotations.

A model that has seen sources like "were hospitalized ‽ hospitalisés ‽
yesterday" (`documents.term_annotation`) learns to write the marked target
where its term goes, in a sentence it builds around it (Dinu et al. 2019); the
glossary then only has to annotate the source. The terms come from the pairs
themselves: eflomal word alignments (Östling & Tiedemann 2016) of the pairs
chosen, and from each pair one or two phrase pairs that the alignment keeps
to themselves (no link leaves them), whose English side is one or two content
words and whose French side is one to three words, as the reference writes
them (inflected: the model learns to copy the form given, and the glossary
gives the form the English asks for).

    python -m training.term_annotation --corpus ../runs/corpus-en-fr-v10-anneal \
        --out ../runs/corpus-en-fr-v10-terms --share 0.25

writes a corpus directory (`train.tsv` with the annotated pairs in place of
their plain ones, `dev.tsv` and `manifest.json` as they were, `terms.json`
with the counts) that `nmt shards` reads like any other. eflomal is GPL-3.0:
an optional extra used here only (`pip install '.[align]'`).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

from documents.term_annotation import MARK, annotate
from nmt.data.corpus import iter_pairs
from training.corpus_alignment import run_eflomal, symmetrize

log = logging.getLogger(__name__)

Link = tuple[int, int]
Token = tuple[int, int]  # characters of a token in its sentence

_TOKEN = re.compile(r"\w+|[^\w\s]")
_ALPHA = re.compile(r"^[^\W\d_]+$")
# A term is whole words of running text: not part of markup, a placeholder, a path or a
# hyphenated word (`{ $error }`, `</strong>`, `Goûte-la`).
_BEFORE = re.compile(r"(?:^|[\s\"“«(])$")
_AFTER = re.compile(r"^(?:$|[\s.,!?:;\"”»)])")
_BEFORE_TARGET = re.compile(r"(?:^|[\s\"“«(’'])$")  # French: also after `l’`, `d'`
MAX_SOURCE_WORDS = 2
MAX_TARGET_WORDS = 3
# English words never annotated as a term on their own: what a glossary does not hold.
_FUNCTION_WORDS = frozenset("""a an the this that these those of to in on at by for with from
    as and or but not no nor is are was were be been being am do does did have has had will
    would shall should can could may might must it its it's he she they we you i me him her
    them us my your his our their what which who whom whose when where why how there here
    then than so if all any some each every one very also just only too more most such""".split())


def tokens(text: str) -> list[Token]:
    """The word and punctuation tokens of `text`, as character spans."""
    return [m.span() for m in _TOKEN.finditer(text)]


def phrase_pairs(source: str, target: str, source_tokens: Sequence[Token],
                 target_tokens: Sequence[Token], links: set[Link]) -> list[tuple[Token, Token]]:
    """Term candidates of one pair: `(source span, target span)` in characters.

    A candidate is one or two adjacent English tokens of letters, neither of them at an
    edge a function word, whose linked French tokens are one to three adjacent ones, with no link
    from inside either span to outside the other (a consistent phrase pair).
    """
    by_source: dict[int, set[int]] = {}
    by_target: dict[int, set[int]] = {}
    for i, j in links:
        by_source.setdefault(i, set()).add(j)
        by_target.setdefault(j, set()).add(i)
    found = []
    for first in range(len(source_tokens)):
        for last in range(first, min(first + MAX_SOURCE_WORDS, len(source_tokens))):
            words = [source[a:b] for a, b in source_tokens[first:last + 1]]
            if not all(_ALPHA.match(w) for w in words):
                break
            if words[0].lower() in _FUNCTION_WORDS or words[-1].lower() in _FUNCTION_WORDS \
                    or max(map(len, words)) < 3:
                continue  # as glossaries write terms: no `the`, `were` or `for` at the edges
            linked = set().union(*(by_source.get(i, set()) for i in range(first, last + 1)))
            if not linked or max(linked) - min(linked) >= MAX_TARGET_WORDS:
                continue
            span = range(min(linked), max(linked) + 1)
            if not any(_ALPHA.match(target[slice(*target_tokens[j])]) for j in span):
                continue
            if any(not by_target.get(j, set()) <= set(range(first, last + 1)) for j in span):
                continue
            term = (source_tokens[first][0], source_tokens[last][1])
            written = (target_tokens[span[0]][0], target_tokens[span[-1]][1])
            if _whole(source, term, _BEFORE, _AFTER) and \
                    _whole(target, written, _BEFORE_TARGET, _AFTER):
                found.append((term, written))
    return found


def _whole(text: str, span: Token, before: re.Pattern, after: re.Pattern) -> bool:
    return bool(before.search(text[:span[0]])) and bool(after.match(text[span[1]:]))


def annotated_pair(source: str, target: str, links: set[Link], rng: random.Random,
                   most: int = 2) -> str | None:
    """`source` with one to `most` of its term candidates annotated with the target's words
    (chosen at random, not overlapping); None when it has none."""
    source_tokens, target_tokens = tokens(source), tokens(target)
    candidates = phrase_pairs(source, target, source_tokens, target_tokens, links)
    if not candidates or MARK in source or MARK in target:
        return None
    rng.shuffle(candidates)
    wanted = rng.randint(1, most)
    chosen: list[tuple[Token, Token]] = []
    for s, t in candidates:
        if len(chosen) == wanted:
            break
        if all(s[1] <= c[0] or c[1] <= s[0] for c, _ in chosen) and \
                all(t[1] <= d[0] or d[1] <= t[0] for _, d in chosen):
            chosen.append((s, t))
    return annotate(source, [(s[0], s[1], target[t[0]:t[1]]) for s, t in chosen])[0]


def annotate_corpus(pairs: Sequence[tuple[str, str, str]], share: float, seed: int = 1,
                    ) -> tuple[list[tuple[str, str, str]], dict]:
    """The pairs with a `share` of them (drawn at random) annotated where they hold a term.

    Returns:
        The new pairs (same order and count) and counts for `terms.json`.
    """
    rng = random.Random(seed)
    chosen = sorted(rng.sample(range(len(pairs)), round(share * len(pairs))))
    lines = [[" ".join(text[a:b].lower() for a, b in tokens(text)) for text in pairs[k][:2]]
             for k in chosen]
    log.info("aligning %d pairs with eflomal", len(chosen))
    forward, reverse = run_eflomal([s for s, _ in lines], [t for _, t in lines])
    out = list(pairs)
    annotated = 0
    for k, fwd, rev in zip(chosen, forward, reverse, strict=True):
        source, target, name = pairs[k]
        text = annotated_pair(source, target, symmetrize(fwd, rev, "grow-diag-final-and"), rng)
        if text is not None:
            out[k] = (text, target, name)
            annotated += 1
    return out, {"pairs": len(pairs), "drawn": len(chosen), "annotated": annotated,
                 "share": share, "seed": seed, "mark": MARK}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True,
                        help="corpus directory (`nmt corpus`)")
    parser.add_argument("--out", type=Path, required=True, help="new corpus directory")
    parser.add_argument("--share", type=float, default=0.25,
                        help="share of the training pairs drawn for annotation (default 0.25)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if not 0 < args.share <= 1:
        parser.error(f"--share must be in (0, 1]. Received: {args.share}")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    pairs = [pair for _, *pair in iter_pairs(args.corpus / "train.tsv")]
    out, counts = annotate_corpus(pairs, args.share, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "train.tsv", "w", encoding="utf-8") as f:
        f.writelines("\t".join(pair) + "\n" for pair in out)
    for name in ("dev.tsv", "manifest.json"):
        shutil.copyfile(args.corpus / name, args.out / name)
    (args.out / "terms.json").write_text(json.dumps(counts, indent=1) + "\n", encoding="utf-8")
    log.info("annotated %d of %d pairs -> %s", counts["annotated"], len(pairs), args.out)


if __name__ == "__main__":
    main()
