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
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from nmt.documents.markup import MarkupError, _parse, plan_markup  # noqa: E402
from nmt.documents.offsets import word_spans  # noqa: E402
from nmt.documents.sentences import TextLinks  # noqa: E402
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


def evaluate(translator, pairs: list[tuple[str, str]], batch_size: int,
             **link_options) -> tuple[Score, Score]:
    model, baseline = Score(), Score()
    for start in range(0, len(pairs), batch_size):
        chunk = [(en, fr) for en, fr in pairs[start:start + batch_size]
                 if plan_words(en) and plan_words(fr)]  # a line of tags only: nothing to align
        if not chunk:
            continue
        plans = [plan_markup(en, "xml", split=False) for en, _ in chunk]
        plains = [" ".join(plan_words(fr)) for _, fr in chunk]
        results = translator.align([p.sentences[0] for p in plans], plains, **link_options)
        for plan, plain, result, (en, fr) in zip(plans, plains, results, chunk, strict=True):
            model.add(en, plan.join([TextLinks(plain, result.word_alignment)]).text, fr)
            links = proportional_links(len(plan.sentences[0].split()), len(plain.split()))
            baseline.add(en, plan.join([TextLinks(plain, links)]).text, fr)
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
    args = parser.parse_args()
    link_options = ({"links": args.links, "link_threshold": args.link_threshold}
                    if args.links else {})

    from nmt.inference.translator import Translator

    translator = Translator.load(args.model)
    print(f"model {translator.info.path}, links {args.links or translator.info.word_links}")
    for name in args.sets:
        pairs = read_set(args.data, name, args.limit)
        started = time.perf_counter()
        model, baseline = evaluate(translator, pairs, args.batch_size, **link_options)
        print(f"{name}: {len(pairs)} lines ({model.lines} with words on both sides), "
              f"{time.perf_counter() - started:.0f} s")
        print(model.line("model"))
        print(baseline.line("proportional"))


if __name__ == "__main__":
    main()
