"""Words with characters the vocabulary lacks: do they come back as written?

The shipped vocabulary has no `[ ] < > # _ = | { } ~ ^ * \\`` (each reads as
an unknown piece), so "[Save]", "#urgent" or "user_name" reach the model with
unknown pieces in them, and the export puts characters back where the model
writes unknown pieces (`nmt.alignment.from_attention.replace_unknown`).

Reads English<TAB>French pairs (`--tsv`, gzip or not), keeps the strings
whose English, as the model reads it (placeholders taken out, as every
interface does by default: `documents.protection`), has an unknown piece,
and translates them with each export, at its default decoding, placeholders
kept. Counted per export, over the English words holding an unknown
character (trailing `.,;:!?` and enclosing quotes or brackets taken off
only where the French reference holds the word so) that the reference holds
as written, which a translation should copy:

- `copied`: the word is in the output as written;
- `repeated`: the output holds it more often than the English does (the
  word written twice, or once per unknown piece);
- `exact`: copied, and not repeated;

and chrF and BLEU of the strings against their references.

    python bench/unknown_characters.py models/en-fr/10 ../runs/other/10
        --tsv ../runs/corpus-en-fr-v10/dev-*.tsv [--label NAME --label NAME]
        [--limit N] [--batch-size 64]
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.placeholders import batched, read_strings  # noqa: E402
from bench.support.inputs import add_exports_arguments, export_labels, machine  # noqa: E402
from documents.protection import protect, translate_protected  # noqa: E402
from nmt.data.subwords import PlainTokenizer  # noqa: E402
from nmt.data.tokenizer import UNK_ID  # noqa: E402
from nmt.evaluation.metrics import corpus_scores  # noqa: E402

# What may stand around a word in a sentence without belonging to it.
_AROUND = "\"'()"
_AFTER = ".,;:!?"


@functools.cache
def _unknown(tokenizer: PlainTokenizer, character: str) -> bool:
    return not character.isspace() and UNK_ID in tokenizer.tokenize([character])[0]


def unknown_characters(tokenizer: PlainTokenizer, text: str) -> set[str]:
    """The characters of `text` that `tokenizer` reads as unknown pieces."""
    return {c for c in set(text) if _unknown(tokenizer, c)}


def words_to_copy(english: str, french: str, unknown: set[str]) -> list[str]:
    """The words of `english` holding a character of `unknown` that `french` holds as written.

    A word is taken as written when `french` holds it so; else without its
    trailing sentence punctuation, then without enclosing quotes or brackets.
    """
    found = []
    for word in english.split():
        if not unknown & set(word):
            continue
        for form in (word, word.rstrip(_AFTER), word.rstrip(_AFTER).strip(_AROUND)):
            if form and unknown & set(form) and form in french:
                found.append(form)
                break
    return found


def select(pairs: Sequence[tuple[str, str]], tokenizer: PlainTokenizer, limit: int = 0
           ) -> list[tuple[str, str, list[str]]]:
    """`(English, French, words to copy)` of the pairs whose English, as the model reads it
    (placeholders out), has an unknown piece; the first `limit` (0: all)."""
    protected = protect([en for en, _ in pairs])
    chosen = []
    for (english, french), plan in zip(pairs, protected.plans, strict=True):
        text = " ".join(plan.sentences) if plan is not None else english
        unknown = unknown_characters(tokenizer, text)
        if unknown:
            chosen.append((english, french, words_to_copy(text, french, unknown)))
    return chosen[:limit] if limit else chosen


def score(chosen: Sequence[tuple[str, str, list[str]]], outputs: Sequence[str]) -> dict:
    """`words`, `copied`, `repeated` and `exact` counts, chrF and BLEU of `outputs`."""
    words = copied = repeated = exact = 0
    for (english, _, to_copy), output in zip(chosen, outputs, strict=True):
        for word in to_copy:
            words += 1
            found, too_many = word in output, output.count(word) > english.count(word)
            copied += found
            repeated += too_many
            exact += found and not too_many
    scores = corpus_scores(list(outputs), [[fr] for _, fr, _ in chosen])
    return {"words": words, "copied": copied, "repeated": repeated, "exact": exact,
            "chrf": scores.chrf, "bleu": scores.bleu}


def translate_chosen(chosen: Sequence[tuple[str, str, list[str]]],
                     translate: Callable[[list[str]], Sequence], batch_size: int = 64
                     ) -> list[str]:
    """The translations of the chosen strings, placeholders kept (the default)."""
    run = batched(translate, batch_size)
    return [r.text for r in translate_protected([en for en, _, _ in chosen], run)]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_exports_arguments(parser)
    parser.add_argument("--tsv", type=Path, nargs="+", required=True,
                        help="English<TAB>French pairs (gzip or not)")
    parser.add_argument("--limit", type=int, default=0,
                        help="the first N strings with unknown characters (default: all)")
    parser.add_argument("--batch-size", type=int, default=64, help="sentences per model call")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    labels = export_labels(parser, args)

    from nmt.inference.translator import Translator

    translators = [Translator.load(model) for model in args.models]
    vocabulary = Path(translators[0].info.path) / "assets" / "en.spm.model"
    if not vocabulary.is_file():
        raise SystemExit(f"No source vocabulary at {vocabulary}; give an export's version "
                         "directory")
    tokenizer = PlainTokenizer.from_file(vocabulary, "en")
    pairs = read_strings(Path(), args.tsv)
    chosen = select(pairs, tokenizer, args.limit)
    to_copy = sum(len(words) for _, _, words in chosen)
    print(f"{machine()}\n{', '.join(map(str, args.tsv))}: {len(pairs)} strings, "
          f"{len(chosen)} with an unknown character as the model reads them; "
          f"{to_copy} of their words are in the reference as written")
    print(f"  {'export':<28} {'copied':>8} {'repeated':>9} {'exact':>7} {'chrF':>7} "
          f"{'BLEU':>7}")
    for label, translator in zip(labels, translators, strict=True):
        found = score(chosen, translate_chosen(chosen, translator.translate, args.batch_size))
        words = max(found["words"], 1)
        print(f"  {label:<28} {100 * found['copied'] / words:7.1f}% "
              f"{100 * found['repeated'] / words:8.1f}% {100 * found['exact'] / words:6.1f}% "
              f"{found['chrf']:7.2f} {found['bleu']:7.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
