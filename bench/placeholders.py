"""Do placeholders come back? The Godot editor's UI strings, translated with and without them kept.

Reads `more-enfr/godot-editor.tsv.gz` (English<TAB>French<TAB>origin), keeps
the strings whose English side has a placeholder (`documents.placeholders`:
printf, brace, ICU, entity) and translates each as a sentence twice:

- before: the string as it is (the model reads the placeholders as text);
- after: placeholders kept (`documents.protection`, what `nmt translate`,
  the server and the batch job do by default): the model reads the string
  without them and each is put back where the word links place it.

Printed for both: the strings whose output holds every placeholder of the
source exactly once and no other (`kept`), those whose printf-style
placeholders without position (`%s`, `%d`, `{}`) keep the source's order, and
chrF and BLEU against the French reference. Also checked, without the model:
that every string without a placeholder is read exactly as given.

`--tsv FILE...` reads other pairs instead (English<TAB>French first, gzip or
not), and `--kinds` chooses the kinds that select a string (default: all of
`KINDS`), e.g. the URLs and e-mail addresses of the corpus's held-out pairs:
`--tsv ../runs/corpus-en-fr-v10/dev-*.tsv --kinds url email`.

`--compare` adds the two designs measured against: the placeholders alone
taken out (`verbatim_pieces(words=False)`, where `'%s'?` leaves `''?` for the
model), and numbered stand-ins the model should copy (`7`, `8`... in place
of each placeholder; counted: strings whose stand-ins all come back once).

    python bench/placeholders.py [--model models/en-fr] [--data ../shared/data]
        [--tsv FILE...] [--kinds KIND...] [--limit N] [--batch-size 64] [--compare]
"""

from __future__ import annotations

import argparse
import functools
import gzip
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from unittest import mock

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.support.inputs import add_model_and_data_arguments, machine  # noqa: E402
from documents import markup  # noqa: E402
from documents.placeholders import KINDS, find_placeholders, verbatim_pieces  # noqa: E402
from documents.protection import protect, translate_protected  # noqa: E402
from nmt.evaluation.metrics import corpus_scores  # noqa: E402

GODOT = Path("more-enfr") / "godot-editor.tsv.gz"
STAND_IN = 7  # the k-th placeholder becomes STAND_IN + k (of 3, 7 and 101, 7 is copied most)


def read_strings(data: Path, paths: Sequence[Path] = ()) -> list[tuple[str, str]]:
    """Every `(English, French)` pair of `paths` (default: the Godot UI strings), in order."""
    paths = list(paths) or [data / GODOT]
    pairs = []
    for path in paths:
        if not path.is_file():
            raise SystemExit(f"No pairs at {path}; pass --data DIR or --tsv FILE")
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as lines:
            rows = [line.rstrip("\n").split("\t") for line in lines if line.strip()]
        pairs += [(row[0], row[1]) for row in rows if len(row) > 1]
    return pairs


def with_placeholders(pairs: Sequence[tuple[str, str]], limit: int = 0,
                      kinds: Sequence[str] = KINDS) -> list[tuple[str, str]]:
    """The pairs whose English side has a placeholder of `kinds`, the first `limit` of them
    (0: all)."""
    found = [(en, fr) for en, fr in pairs if any(p.kind in kinds for p in find_placeholders(en))]
    return found[:limit] if limit else found


def kept(source: str, output: str) -> bool:
    """Whether `output` holds each placeholder of `source` exactly once, and no other."""
    return (Counter(p.text for p in find_placeholders(output))
            == Counter(p.text for p in find_placeholders(source)))


def in_order(source: str, output: str) -> bool:
    """Whether the placeholders taking their arguments in order keep the source's order."""
    return ([p.text for p in find_placeholders(output) if p.ordered]
            == [p.text for p in find_placeholders(source) if p.ordered])


def batched(translate: Callable[[list[str]], Sequence], size: int
            ) -> Callable[[list[str]], list]:
    """`translate` called `size` sentences at a time."""
    def run(sentences: list[str]) -> list:
        return [r for start in range(0, len(sentences), size)
                for r in translate(sentences[start:start + size])]
    return run


def score(pairs: Sequence[tuple[str, str]], outputs: Sequence[str]) -> dict:
    """`kept` and `in_order` counts, chrF and BLEU of `outputs` against the references."""
    scores = corpus_scores(list(outputs), [[fr] for _, fr in pairs])
    return {"kept": sum(kept(en, out) for (en, _), out in zip(pairs, outputs, strict=True)),
            "in_order": sum(in_order(en, out)
                            for (en, _), out in zip(pairs, outputs, strict=True)),
            "chrf": scores.chrf, "bleu": scores.bleu}


def stand_ins(source: str) -> tuple[str, list[str]]:
    """`source` with its k-th placeholder replaced by the number STAND_IN + k."""
    found = find_placeholders(source)
    numbers = [str(STAND_IN + k) for k in range(len(found))]
    for placeholder, number in zip(reversed(found), reversed(numbers), strict=True):
        source = source[:placeholder.start] + number + source[placeholder.end:]
    return source, numbers


def copied(output: str, numbers: Sequence[str]) -> bool:
    """Whether each stand-in number is in `output` exactly once, as a word of its own."""
    return all(len(re.findall(rf"(?<![\w.,]){n}(?![\w])", output)) == 1 for n in numbers)


def compare(pairs: Sequence[tuple[str, str]], translate: Callable[[list[str]], Sequence],
            batch_size: int = 64, designs: bool = False) -> dict:
    """Both translations of the strings (and, with `designs`, the alternatives), scored.

    Args:
        pairs: `(English, French)` strings with placeholders.
        translate: sentences -> results with `.text`, `.word_alignment` and
            `.nbest` (`Translator.translate`).
        batch_size: sentences per `translate` call.
        designs: also score the placeholders alone taken out, and stand-ins.

    Returns:
        `strings`, `placeholders` (a Counter by kind), `before` and `after`
        (see `score`), and with `designs` `alone` (also `score`) and
        `stand_ins_copied` (strings whose stand-ins all came back once).
    """
    run = batched(translate, batch_size)
    english = [en for en, _ in pairs]
    found = {
        "strings": len(pairs),
        "placeholders": Counter(p.kind for en in english for p in find_placeholders(en)),
        "before": score(pairs, [r.text for r in run(english)]),
        "after": score(pairs, [r.text for r in translate_protected(english, run)]),
    }
    if designs:
        alone = functools.partial(verbatim_pieces, words=False)
        with mock.patch.object(markup, "verbatim_pieces", alone):
            found["alone"] = score(pairs, [r.text for r in translate_protected(english, run)])
        replaced = [stand_ins(en) for en in english]
        outputs = run([text for text, _ in replaced])
        found["stand_ins_copied"] = sum(copied(r.text, numbers)
                                        for r, (_, numbers) in zip(outputs, replaced, strict=True))
    return found


def read_as_given(strings: Sequence[str]) -> int:
    """How many of `strings` (without placeholders) the model would read exactly as given."""
    return sum(a == b for a, b in zip(protect(strings).sentences, strings, strict=True))


def _line(name: str, scores: dict, strings: int) -> str:
    return (f"  {name:<28} {100 * scores['kept'] / strings:6.1f}%  "
            f"{100 * scores['in_order'] / strings:6.1f}%  {scores['chrf']:6.2f}  "
            f"{scores['bleu']:6.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_and_data_arguments(parser)
    parser.add_argument("--limit", type=int, default=0,
                        help="the first N strings with placeholders (default: all)")
    parser.add_argument("--batch-size", type=int, default=64, help="sentences per model call")
    parser.add_argument("--tsv", type=Path, nargs="+", default=[],
                        help="pairs to read instead of the Godot strings (English<TAB>French)")
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS,
                        help="the placeholder kinds that select a string (default: all)")
    parser.add_argument("--compare", action="store_true",
                        help="also the placeholders alone taken out, and numbered stand-ins")
    args = parser.parse_args(argv)

    from nmt.inference.translator import Translator

    translator = Translator.load(args.model)
    print(f"model {translator.info.path}; {machine()}")
    pairs = read_strings(args.data, args.tsv)
    plain = [en for en, _ in pairs if not find_placeholders(en)]
    print(f"{', '.join(map(str, args.tsv)) or GODOT}: {len(pairs)} strings; of the "
          f"{len(plain)} without placeholders, {read_as_given(plain)} read exactly as given")
    chosen = with_placeholders(pairs, args.limit, args.kinds)
    started = time.perf_counter()
    found = compare(chosen, translator.translate, args.batch_size, args.compare)
    strings, kinds = found["strings"], found["placeholders"]
    print(f"{strings} strings with {sum(kinds.values())} placeholders "
          f"({', '.join(f'{kind} {n}' for kind, n in kinds.most_common())}), "
          f"{time.perf_counter() - started:.0f} s")
    print(f"  {'':<28} {'kept':>7}  {'order':>7}  {'chrF':>6}  {'BLEU':>6}")
    print(_line("before (plain translation)", found["before"], strings))
    print(_line("after (placeholders kept)", found["after"], strings))
    if args.compare:
        print(_line("placeholders alone taken out", found["alone"], strings))
        print(f"  stand-ins {STAND_IN}, {STAND_IN + 1}...: all copied once in "
              f"{100 * found['stand_ins_copied'] / strings:.1f}% of the strings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
