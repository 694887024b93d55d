"""How well are tags projected onto a given translation? XLIFF-tagged en-fr lines.

For each line of `markup-enfr/dev-{glossary,eurlex}.{en,fr}`: the French
tags are stripped, the English line's tags are projected onto the plain
French through the model's forced alignment (`Translator.align`, as
`nmt align --format xml` does), and the result is compared with the French
line's own tags. Printed per set, for the model and for a baseline that
puts tags at proportional positions (target word j linked to source word
floor(j * n / m)):

- well-formed: the output parses and holds exactly the source's tags;
- exact: paired tags (`<g>`) enclosing exactly the reference's French words;
- F1: word overlap of the paired tags with the reference's (micro-averaged);
- standalone exact: standalone tags (`<x/>`...) at the reference's word gap.

    python bench/markup_projection.py [--model models/en-fr] [--data ../shared/data]
        [--limit N] [--sets glossary eurlex] [--links RULE [--link-threshold T]]
        [--cache runs/markup-align.json]

`--cache FILE` keeps the model's alignment of each pair (its word links and
word matrix) as JSON: pairs found there are not aligned again, so a change to
the projection (pure Python) measures in seconds; `--links` rules are read from
the cached matrix. The cache belongs to one model: delete it for another.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from documents.markup import MarkupError, _parse, plan_markup  # noqa: E402
from documents.offsets import word_spans  # noqa: E402
from documents.sentences import TextLinks  # noqa: E402
from nmt.alignment.word_links import word_links  # noqa: E402
from nmt.options import DEFAULT_MODEL_DIR  # noqa: E402
from nmt.paths import data_dir  # noqa: E402


def tag_words(text: str) -> tuple[dict, dict, list[str]]:
    """Paired tags -> the plain words they enclose; standalone tags -> their word gap.

    Keys are the start tag as written plus its occurrence number; the last
    value is every tag of the line, sorted (for the well-formed check).
    """
    items = _parse(text, "xml")
    plain, offsets = "", []
    for item in items:
        offsets.append(len(plain))
        plain += item.plain if item.kind == "text" else ""
    spans = word_spans(plain)
    paired, standalone, opened, seen = {}, {}, {}, Counter()
    for item, at in zip(items, offsets, strict=True):
        raw = text[item.start:item.end]
        if item.kind == "open":
            seen[raw] += 1
            opened[id(item.element)] = ((raw, seen[raw]), at)
        elif item.kind == "close":
            key, start = opened[id(item.element)]
            paired[key] = frozenset(k for k, (a, b) in enumerate(spans) if a < at and b > start)
        elif item.kind == "point":
            seen[raw] += 1
            standalone[(raw, seen[raw])] = sum(a < at for a, _ in spans)
    tags = sorted(text[i.start:i.end] for i in items if i.kind != "text")
    return paired, standalone, tags


def proportional_links(n: int, m: int) -> tuple[tuple[int, int], ...]:
    """Target word j linked to source word floor(j * n / m): tags at proportional places."""
    return tuple((j * n // m, j) for j in range(m)) if n and m else ()


class Score:
    """Counts for one set and one method."""

    def __init__(self):
        self.lines = self.well_formed = 0
        self.paired = self.exact = self.standalone = self.standalone_exact = 0
        self.overlap = self.predicted = self.reference = 0

    def add(self, source: str, output: str, reference: str) -> None:
        self.lines += 1
        try:
            got, got_points, tags = tag_words(output)
        except MarkupError:
            return
        want, want_points, _ = tag_words(reference)
        self.well_formed += tags == tag_words(source)[2]
        for key, words in want.items():
            predicted = got.get(key, frozenset())
            self.paired += 1
            self.exact += predicted == words
            self.overlap += len(predicted & words)
            self.predicted += len(predicted)
            self.reference += len(words)
        for key, gap in want_points.items():
            self.standalone += 1
            self.standalone_exact += got_points.get(key) == gap

    def line(self, name: str) -> str:
        precision = self.overlap / max(self.predicted, 1)
        recall = self.overlap / max(self.reference, 1)
        f1 = 2 * precision * recall / max(precision + recall, 1e-9)
        return (f"  {name:<13} well-formed {self.well_formed / self.lines:6.1%}  "
                f"paired exact {self.exact / max(self.paired, 1):6.1%} of {self.paired}  "
                f"F1 {f1:.3f}  standalone exact "
                f"{self.standalone_exact / max(self.standalone, 1):6.1%} of {self.standalone}")


def read_set(data: Path, name: str, limit: int) -> list[tuple[str, str]]:
    folder = data / "markup-enfr"
    english = (folder / f"dev-{name}.en").read_text(encoding="utf-8").splitlines()
    french = (folder / f"dev-{name}.fr").read_text(encoding="utf-8").splitlines()
    pairs = list(zip(english, french, strict=True))
    return pairs[:limit] if limit else pairs


class AlignCache:
    """The model's word links and word matrix per (source, target) pair; JSON on disk.

    Without a path nothing is kept. `links` aligns the pairs not yet held
    through `aligner` (called only then), and reads each pair's links.
    """

    def __init__(self, path: Path | None = None):
        self.path = path
        self.pairs: dict[str, dict] = {}
        if path is not None and path.exists():
            self.pairs = json.loads(path.read_text(encoding="utf-8"))
        self.added = 0

    @staticmethod
    def _key(source: str, target: str) -> str:
        return f"{source}\t{target}"

    def links(self, sources: list[str], targets: list[str], aligner, rule: str | None = None,
              threshold: float = 0.3) -> list[TextLinks]:
        """Each pair's target with its links (the model's, or read by `rule` from its word
        matrix) and its word matrix."""
        missing = [(s, t) for s, t in zip(sources, targets, strict=True)
                   if self._key(s, t) not in self.pairs]
        if missing:
            results = aligner()([s for s, _ in missing], [t for _, t in missing])
            for (source, target), result in zip(missing, results, strict=True):
                matrix = result.nbest[0].word_matrix
                self.pairs[self._key(source, target)] = {
                    "links": [list(link) for link in result.word_alignment],
                    "matrix": None if matrix is None else matrix.round(5).tolist()}
            self.added += len(missing)
        found = []
        for source, target in zip(sources, targets, strict=True):
            held = self.pairs[self._key(source, target)]
            if rule is None:
                links = tuple(tuple(link) for link in held["links"])
            elif held["matrix"] is None:
                raise ValueError(f"link rule {rule!r} needs the word matrix, which the "
                                 "model did not return")
            else:
                links = tuple(word_links(held["matrix"], rule, threshold))
            found.append(TextLinks(target, links, held["matrix"]))
        return found

    def save(self) -> None:
        if self.path is not None and self.added:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(self.pairs), encoding="utf-8")
            self.added = 0


def evaluate(aligner, pairs: list[tuple[str, str]], batch_size: int,
             cache: AlignCache | None = None, rule: str | None = None,
             threshold: float = 0.3) -> tuple[Score, Score]:
    """Model and proportional scores; `aligner()` gives `align(sources, targets)`."""
    cache = cache or AlignCache()
    model, baseline = Score(), Score()
    for start in range(0, len(pairs), batch_size):
        chunk = [(en, fr) for en, fr in pairs[start:start + batch_size]
                 if plan_words(en) and plan_words(fr)]  # a line of tags only: nothing to align
        if not chunk:
            continue
        plans = [plan_markup(en, "xml", split=False) for en, _ in chunk]
        plains = [" ".join(plan_words(fr)) for _, fr in chunk]
        found = cache.links([p.sentences[0] for p in plans], plains, aligner, rule, threshold)
        for plan, plain, result, (en, fr) in zip(plans, plains, found, chunk, strict=True):
            model.add(en, plan.join([result]).text, fr)
            links = proportional_links(len(plan.sentences[0].split()), len(plain.split()))
            baseline.add(en, plan.join([TextLinks(plain, links)]).text, fr)
        cache.save()
    return model, baseline


def plan_words(text: str) -> list[str]:
    """The words of a tagged line with its tags stripped."""
    plan = plan_markup(text, "xml", split=False)
    return plan.sentences[0].split() if plan.sentences else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR,
                        help="exported model (base directory: its highest version)")
    parser.add_argument("--data", type=Path, default=data_dir(),
                        help="the shared data directory (NMT_DATA_DIR)")
    parser.add_argument("--sets", nargs="+", default=["glossary", "eurlex"],
                        choices=["glossary", "eurlex"])
    parser.add_argument("--limit", type=int, default=0, help="first N lines of each set")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--links",
                        help="word-link rule (nmt/alignment/word_links.py); default: the model's")
    parser.add_argument("--link-threshold", type=float, default=0.3)
    parser.add_argument("--cache", type=Path,
                        help="JSON of the model's alignments (e.g. runs/markup-align.json): "
                             "read, and written with the pairs not yet in it")
    args = parser.parse_args()
    cache = AlignCache(args.cache)
    translator = None

    def aligner():
        nonlocal translator
        if translator is None:
            from nmt.inference.translator import Translator

            translator = Translator.load(args.model)
            print(f"model {translator.info.path}, word links {translator.info.word_links}")
        return translator.align

    rule = args.links or "the model's"
    print(f"links {rule}"
          + (f", cache {args.cache} ({len(cache.pairs)} pairs)" if args.cache else ""))
    for name in args.sets:
        pairs = read_set(args.data, name, args.limit)
        started = time.perf_counter()
        model, baseline = evaluate(aligner, pairs, args.batch_size, cache, args.links,
                                   args.link_threshold)
        print(f"{name}: {len(pairs)} lines ({model.lines} with words on both sides), "
              f"{time.perf_counter() - started:.0f} s")
        print(model.line("model"))
        print(baseline.line("proportional"))


if __name__ == "__main__":
    main()
