"""Does markup cost translation quality? BLEU with the tags stripped, XLIFF-tagged en-fr lines.

For each line of `markup-enfr/dev-{glossary,eurlex}.en` two translations are
scored against the French line with its tags stripped:

- tagged: the line translated as an XML document (`nmt translate --format
  xml`: tags taken out, sentences translated, tags put back), then its tags
  stripped;
- plain: the line with its tags stripped, translated as a plain-text
  document (`--format text`: the same sentence splitting, no tags).

Printed per set: both BLEU scores (sacrebleu, 13a) and their difference, the
lines whose sentences reached the model differently (tags that changed what
the model read), the lines whose translations differ, and malformed outputs
(never expected: `documents.markup` keeps every tag).

    python bench/markup_bleu.py [--model models/en-fr] [--data ../shared/data]
        [--sets glossary eurlex] [--limit N] [--batch-size 64]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.support.inputs import add_model_and_data_arguments, machine  # noqa: E402
from documents.markup import MarkupError, _parse, plan_document  # noqa: E402
from documents.sentences import join_documents, sentences_of  # noqa: E402
from nmt.evaluation.metrics import corpus_scores  # noqa: E402

SETS = ("glossary", "eurlex")


def strip_tags(text: str, format: str = "xml") -> str:
    """The text of a marked-up line without its tags (entities decoded, spaces collapsed).

    Raises:
        documents.markup.MarkupError: the line is not well-formed.
    """
    plain = "".join(item.plain for item in _parse(text, format) if item.kind == "text")
    return " ".join(plain.split())


def read_set(data: Path, name: str, limit: int = 0) -> list[tuple[str, str]]:
    """`(English, French)` tagged lines of `markup-enfr/dev-<name>`, the first `limit` (0: all)."""
    folder = data / "markup-enfr"
    if not folder.is_dir():
        raise SystemExit(f"No markup-enfr data at {folder}; pass --data DIR")
    english = (folder / f"dev-{name}.en").read_text(encoding="utf-8").splitlines()
    french = (folder / f"dev-{name}.fr").read_text(encoding="utf-8").splitlines()
    pairs = list(zip(english, french, strict=True))
    return pairs[:limit] if limit else pairs


def translate_documents(texts: Sequence[str], format: str,
                        translate: Callable[[list[str]], Sequence], batch_size: int) -> list:
    """Each text translated as one document in `format`, `batch_size` documents a call."""
    documents = []
    for start in range(0, len(texts), batch_size):
        plans = [plan_document(text, format) for text in texts[start:start + batch_size]]
        sentences = sentences_of(plans)
        results = list(translate(sentences)) if sentences else []
        documents += join_documents(plans, results)
    return documents


def compare(pairs: Sequence[tuple[str, str]], translate: Callable[[list[str]], Sequence],
            batch_size: int = 64) -> dict:
    """Both translations of the tagged lines, scored against the stripped references.

    Args:
        pairs: `(English, French)` lines with inline XML tags.
        translate: sentences -> results with `.text` and `.word_alignment`
            (e.g. `Translator.translate`).
        batch_size: documents per `translate` call.

    Returns:
        `tagged` and `plain` (`nmt.evaluation.metrics.Scores`), `lines`, `malformed`
        (tagged outputs that are not well-formed), `inputs_differ` (lines whose
        sentences reached the model differently) and `outputs_differ`.
    """
    english = [en for en, _ in pairs]
    plain_english = [strip_tags(en) for en in english]
    references = [[strip_tags(fr)] for _, fr in pairs]
    tagged = translate_documents(english, "xml", translate, batch_size)
    plain = translate_documents(plain_english, "text", translate, batch_size)
    stripped, malformed = [], 0
    for document in tagged:
        try:
            stripped.append(strip_tags(document.text))
        except MarkupError:
            malformed += 1
            stripped.append("")
    plain_text = [" ".join(document.text.split()) for document in plain]
    inputs_differ = sum(plan_document(a, "xml").sentences != plan_document(b, "text").sentences
                        for a, b in zip(english, plain_english, strict=True))
    return {
        "lines": len(pairs),
        "tagged": corpus_scores(stripped, references),
        "plain": corpus_scores(plain_text, references),
        "malformed": malformed,
        "inputs_differ": inputs_differ,
        "outputs_differ": sum(a != b for a, b in zip(stripped, plain_text, strict=True)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_and_data_arguments(parser)
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    parser.add_argument("--limit", type=int, default=0, help="first N lines of each set")
    parser.add_argument("--batch-size", type=int, default=64, help="documents per model call")
    args = parser.parse_args(argv)

    from nmt.inference.translator import Translator

    translator = Translator.load(args.model)
    print(f"model {translator.info.path}; {machine()}")
    for name in args.sets:
        pairs = read_set(args.data, name, args.limit)
        started = time.perf_counter()
        found = compare(pairs, translator.translate, args.batch_size)
        tagged, plain = found["tagged"], found["plain"]
        print(f"{name}: {found['lines']} lines, {time.perf_counter() - started:.0f} s")
        print(f"  BLEU tagged, tags stripped {tagged.bleu:6.2f}   plain {plain.bleu:6.2f}   "
              f"difference {tagged.bleu - plain.bleu:+.2f}   (chrF {tagged.chrf:.2f} / "
              f"{plain.chrf:.2f})")
        print(f"  lines whose model input differs {found['inputs_differ']}, whose translation "
              f"differs {found['outputs_differ']}, malformed outputs {found['malformed']}")
    print(f"BLEU signature: {tagged.bleu_signature}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
