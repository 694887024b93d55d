"""What a 10,000-entry glossary costs on the traffic mix, against no glossary.

Each sentence of `out-of-domain/traffic-mix.en` is translated once (kept with
`--cache`, as `bench/glossary.py` keeps them); then the glossary step alone,
matching and placing (`documents.terminology.apply_terms`), is timed on
every sentence's translation, plurals only (the earlier method) and as
it ships (every English form, French agreement, acronyms in capitals).

The glossary: `--entries` (10,000, `MAX_ENTRIES`) terms made of the most
frequent words and word pairs of the newstest2012 and newstest2013 English
sides, skipping the `--skip` most frequent words (function words), each
translated by a French-looking word (`-er` for a word the lexicon knows as a
verb only, so that verbs are read as verbs): a large glossary that matches
often, the step's worst case rather than its usual one.

    python bench/glossary_speed.py [--sentences FILE] [--entries 10000] [--cache FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.glossary import Translations  # noqa: E402
from bench.support.inputs import (  # noqa: E402
    TRAFFIC_MIX,
    add_model_and_data_arguments,
    machine,
    read_sentences,
)
from documents.english_forms import only_verb  # noqa: E402
from documents.glossary import MAX_ENTRIES, Glossary  # noqa: E402
from documents.terminology import apply_terms  # noqa: E402

NEWS = ("out-of-domain/newstest2012.en", "out-of-domain/newstest2013.en")
_WORD = re.compile(r"[A-Za-z]+")


def large_glossary(data: Path, entries: int = MAX_ENTRIES, skip: int = 100
                   ) -> list[tuple[str, str]]:
    """`entries` terms: the most frequent words (but the first `skip`) and word pairs of
    the news sets (see the module docstring)."""
    words, pairs = Counter(), Counter()
    for name in NEWS:
        for line in (data / name).read_text(encoding="utf-8").splitlines():
            found = [w.lower() for w in _WORD.findall(line)]
            words.update(found)
            pairs.update(zip(found, found[1:], strict=False))
    common = {w for w, _ in words.most_common(skip)}
    terms = [w for w, _ in words.most_common() if w not in common and len(w) > 2]
    terms += [f"{a} {b}" for (a, b), _ in pairs.most_common()
              if a not in common and b not in common]
    ranked = sorted(set(terms), key=lambda t: (-(words[t] if " " not in t
                                                 else pairs[tuple(t.split(" "))]), t))
    return [(term, _french(term)) for term in ranked[:entries]]


def _french(term: str) -> str:
    head = term.split(" ")[0]
    return f"{head}iser" if " " not in term and only_verb(head) else f"terme {term}"


def built(entries: list[tuple[str, str]]) -> tuple[Glossary, Glossary, dict[str, float]]:
    """The glossary of `entries` as it ships and plurals only, and the seconds
    checking and indexing took (`checked and indexed`), and indexing alone, each way (the
    English lexicon loaded before: once per process)."""
    Glossary.from_entries(entries[:10])
    seconds = {}
    started = time.perf_counter()
    glossary = Glossary.from_entries(entries)
    seconds["checked and indexed"] = time.perf_counter() - started
    started = time.perf_counter()
    dataclasses.replace(glossary)
    seconds["indexed"] = time.perf_counter() - started
    started = time.perf_counter()
    before = dataclasses.replace(glossary, forms=frozenset({"plural"}), acronym_case=False)
    seconds["indexed as before"] = time.perf_counter() - started
    return glossary, before, seconds


def timed(sentences, outputs, glossary: Glossary, **options) -> tuple[float, int]:
    """`(seconds, terms applied)` for the glossary step over every sentence."""
    started, applied = time.perf_counter(), 0
    for source, (text, links) in zip(sentences, outputs, strict=True):
        applied += len(apply_terms(source, text, links, glossary, **options).applied)
    return time.perf_counter() - started, applied


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_and_data_arguments(parser)
    parser.add_argument("--sentences", type=Path, default=TRAFFIC_MIX,
                        help="one English sentence a line (default: the traffic mix)")
    parser.add_argument("--entries", type=int, default=MAX_ENTRIES, help="glossary entries")
    parser.add_argument("--skip", type=int, default=100,
                        help="most frequent words left out of the glossary")
    parser.add_argument("--batch-size", type=int, default=32, help="sentences per model call")
    parser.add_argument("--cache", type=Path, help="JSON file keeping the model's translations")
    args = parser.parse_args(argv)

    sentences = read_sentences(args.sentences)
    translate = None
    if args.cache is None or not args.cache.exists():
        from nmt.inference.translator import Translator

        translator = Translator.load(args.model)
        translator.translate(["Warm up."])  # the first call traces the graph: not timed
        translate = translator.translate
    translations = Translations(translate, args.cache, args.batch_size)
    outputs = translations(sentences)
    per_sentence = translations.seconds(sentences) / len(sentences)
    print(f"{args.sentences.name}: {len(sentences)} sentences; {machine()}")
    entries = large_glossary(args.data, args.entries, args.skip)
    glossary, before, seconds = built(entries)
    print(f"  glossary: {len(glossary)} entries, checked and indexed in "
          f"{seconds['checked and indexed']:.2f} s (indexing {seconds['indexed']:.2f} s; "
          f"{seconds['indexed as before']:.2f} s with plurals only); "
          f"translation alone {1000 * per_sentence:.1f} ms a sentence "
          f"({1 / per_sentence:.2f} sentences/s)")
    for name, variant, options in (("plurals only", before, {"agree": False}),
                                   ("as it ships", glossary, {})):
        timed(sentences[:50], outputs[:50], variant, **options)  # warm the caches
        seconds, applied = timed(sentences, outputs, variant, **options)
        step = seconds / len(sentences)
        print(f"  {name:<20} {1000 * step:6.2f} ms a sentence for the glossary step "
              f"({applied / len(sentences):.2f} terms a sentence); with translation "
              f"{1 / (per_sentence + step):.2f} sentences/s against {1 / per_sentence:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
