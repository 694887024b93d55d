"""Does the search loop? Translations that write a word or a phrase three times in a row.

Far from its training data a model can fall into a loop ("de l'exécution de
l'exécution de l'exécution..."). Translates the lines of a sentences file
(default: the first 600 lines of `out-of-domain/newstest2012.en`, news, where
version 10 loops most) with each export at its default decoding, and counts
the translations where a unit of 1 to 4 words (`WORD_UNITS`) comes three
times in a row when it does not in the English, with a few of them.

    python bench/repetitions.py models/en-fr/10 ../runs/other/10
        [--sentences FILE] [--limit 600] [--label NAME --label NAME] [--show 5]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.support.inputs import (  # noqa: E402
    add_exports_arguments,
    export_labels,
    machine,
    read_sentences,
)
from nmt.paths import data_dir  # noqa: E402

NEWS = data_dir() / "out-of-domain" / "newstest2012.en"
WORD_UNITS = range(1, 5)


def repeated_unit(text: str) -> str | None:
    """The first unit of `WORD_UNITS` words that `text` writes three times in a row, or None;
    words compared without the punctuation after them ("l'année." is "l'année")."""
    words = [word.rstrip(".,;:!?") or word for word in text.split()]
    for size in WORD_UNITS:
        for start in range(len(words) - 3 * size + 1):
            unit = words[start:start + size]
            if words[start + size:start + 2 * size] == unit == words[start + 2 * size:
                                                                      start + 3 * size]:
                return " ".join(unit)
    return None


def loops(sources: list[str], outputs: list[str]) -> list[tuple[int, str]]:
    """`(line, unit)` of the outputs with a unit three times in a row that their source lacks."""
    found = []
    for line, (source, output) in enumerate(zip(sources, outputs, strict=True)):
        unit = repeated_unit(output)
        if unit is not None and repeated_unit(source) is None:
            found.append((line, unit))
    return found


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_exports_arguments(parser)
    parser.add_argument("--sentences", type=Path, default=NEWS,
                        help="one English sentence a line (default: newstest2012.en)")
    parser.add_argument("--limit", type=int, default=600, help="the first N lines (0: all)")
    parser.add_argument("--show", type=int, default=5, help="examples printed per export")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    labels = export_labels(parser, args)
    lines = read_sentences(args.sentences)
    lines = lines[:args.limit] if args.limit else lines

    from nmt.inference.translator import Translator

    print(f"{machine()}\n{args.sentences}: {len(lines)} lines")
    for label, model in zip(labels, args.models, strict=True):
        translator = Translator.load(model)
        outputs = [r.text for start in range(0, len(lines), 64)
                   for r in translator.translate(lines[start:start + 64])]
        found = loops(lines, outputs)
        print(f"  {label}: {len(found)} of {len(lines)} translations repeat a unit three times "
              f"in a row", flush=True)
        for line, unit in found[:args.show]:
            print(f"    line {line + 1}: {unit!r} in {outputs[line]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
