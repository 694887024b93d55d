"""Subtitles: held-out sentences split over cues, translated over cues and cue by cue, scored.

../shared/data has no English–French subtitles, so a file is made: the first
`--limit` lines (consecutive, 200 by default) of a held-out set with French
references (`out-of-domain/newsdiscusstest2015`, news-discussion comments,
by default; `--set multi30k-test2017-flickr` for image captions), each split
over 1–3 cues at word boundaries (one cue per 8 words, rounded up, at most 3;
cut at near-equal word counts), a cue longer than 42 characters wrapped on
two lines at the space nearest its middle, cues 2 s apart. A line that ends
without a full stop runs on into the next line's cues, as in real subtitles.

It is translated by the shipped model (`documents.subtitles`) both ways:
sentences over cues translated whole and split back over their cues by the
word alignment (`merge_cues=True`, the default), and cue by cue
(`merge_cues=False`). Each line's cues are re-joined (line breaks as
spaces) and scored against its reference (chrF and BLEU, sacrebleu, as
`nmt.evaluation.metrics`); beside them the lines translated as plain-text
documents with no cue at all (`nmt translate --format text`).
Also printed: the length ratio (words of the translation over words of the
references), cues per second (the model loaded beforehand), cues left
without text, sentences the model read, and lines outside cue text that
changed (0 expected).

    python bench/subtitles.py [--model models/en-fr] [--data ../shared/data]
        [--set newsdiscusstest2015] [--limit 200] [--format srt|vtt] [--batch-size 64]
"""

from __future__ import annotations

import argparse
import html
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.support.inputs import add_model_and_data_arguments, machine  # noqa: E402
from documents.sentences import translate_documents  # noqa: E402
from documents.subtitles import (  # noqa: E402
    SubtitleOptions,
    read_subtitles,
    translate_subtitles,
)
from nmt.constants import DEFAULT_BATCH_SIZE  # noqa: E402
from nmt.evaluation.metrics import corpus_scores  # noqa: E402

SETS = ("newsdiscusstest2015", "multi30k-test2017-flickr")
WORDS_PER_CUE = 8
MAX_CUES = 3
LINE_CHARS = 42  # a cue line longer than this is wrapped (a common subtitle limit)


def cue_words(words: Sequence[str]) -> list[list[str]]:
    """A line's words over 1–MAX_CUES cues of near-equal word counts."""
    count = min(MAX_CUES, max(1, math.ceil(len(words) / WORDS_PER_CUE)), len(words))
    cuts = [round(k * len(words) / count) for k in range(count + 1)]
    return [list(words[cuts[k]:cuts[k + 1]]) for k in range(count)]


def wrapped(words: Sequence[str]) -> list[str]:
    """A cue's text lines: one, or two split at the space nearest the middle."""
    text = " ".join(words)
    if len(text) <= LINE_CHARS or len(words) < 2:
        return [text]
    ends = [len(" ".join(words[:k])) for k in range(1, len(words))]
    k = min(range(len(ends)), key=lambda i: abs(ends[i] - len(text) / 2)) + 1
    return [" ".join(words[:k]), " ".join(words[k:])]


def _time(seconds: float, format: str) -> str:
    millis = round(seconds * 1000)
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"{hours:02d}:{minutes:02d}:{rest // 1000:02d}{',' if format == 'srt' else '.'}" \
           f"{rest % 1000:03d}"


def subtitle_file(lines: Sequence[str], format: str = "srt") -> tuple[bytes, list[int]]:
    """The file made of `lines` (see the module docstring), and each line's number of cues.

    WebVTT text is escaped (`&amp; &lt; &gt;`); `rejoined` unescapes it.
    """
    blocks, counts = ["WEBVTT\n"] if format == "vtt" else [], []
    for line in lines:
        cues = cue_words(line.split())
        counts.append(len(cues))
        for words in cues:
            number = len(blocks) + (format == "srt")
            start = 2.0 * (number - 1)
            head = f"{number}\n" if format == "srt" else ""
            text = "\n".join(wrapped(words))
            text = html.escape(text, quote=False) if format == "vtt" else text
            blocks.append(f"{head}{_time(start, format)} --> {_time(start + 1.8, format)}\n"
                          f"{text}\n")
    return "\n".join(blocks).encode("utf-8"), counts


def rejoined(data: bytes, format: str, counts: Sequence[int]) -> list[str]:
    """Each line's cues of a (translated) file, joined with single spaces."""
    texts = [" ".join(cue.text.split()) for cue in read_subtitles(data, format).cues]
    texts = [html.unescape(text) for text in texts] if format == "vtt" else texts
    joined, start = [], 0
    for count in counts:
        joined.append(" ".join(text for text in texts[start:start + count] if text))
        start += count
    return joined


def frame(data: bytes, format: str) -> list[str]:
    """The lines outside cue text."""
    document = read_subtitles(data, format)
    inside = {i for cue in document.cues for i in range(*cue.text_lines)}
    return [line for i, line in enumerate(document.lines) if i not in inside]


def run(data: bytes, format: str, counts: Sequence[int], references: Sequence[str],
        translate: Callable, merge_cues: bool, batch_size: int) -> dict:
    """One way of translating the file: scores, speed and what was kept."""
    document = read_subtitles(data, format, f"bench.{format}")
    started = time.perf_counter()
    result = translate_subtitles(document, translate, SubtitleOptions(
        merge_cues=merge_cues, batch_size=batch_size))
    seconds = time.perf_counter() - started
    cues = len(document.cues)
    texts = [cue.text for cue in read_subtitles(result.data, format).cues]
    hypotheses = rejoined(result.data, format, counts)
    return {"scores": corpus_scores(hypotheses, [[r] for r in references]),
            "length": length_ratio(hypotheses, references),
            "cues": cues, "seconds": seconds, "cues_per_second": cues / seconds,
            "empty": sum(not text.strip() for text in texts), "report": result.report,
            "other_lines_changed": sum(a != b for a, b in zip(frame(data, format),
                                                             frame(result.data, format),
                                                             strict=True))}


def length_ratio(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Words of the hypotheses over words of the references."""
    return sum(len(h.split()) for h in hypotheses) / sum(len(r.split()) for r in references)


class Memo:
    """`translate` remembering its results, so the ceiling reuses the runs' sentences."""

    def __init__(self, translate: Callable):
        self.translate = translate
        self.known: dict[str, object] = {}

    def __call__(self, sentences):
        todo = [s for s in dict.fromkeys(sentences) if s not in self.known]
        if todo:
            self.known.update(zip(todo, self.translate(todo), strict=True))
        return [self.known[s] for s in sentences]


def read_set(data_dir: Path, name: str, limit: int) -> tuple[list[str], list[str]]:
    folder = data_dir / "out-of-domain"
    english, french = folder / f"{name}.en", folder / f"{name}.fr"
    if not english.is_file() or not french.is_file():
        raise SystemExit(f"No {name}.en/.fr in {folder}; pass --data DIR")
    pairs = [(en.strip(), fr.strip()) for en, fr in zip(
        english.read_text(encoding="utf-8").splitlines(),
        french.read_text(encoding="utf-8").splitlines(), strict=True) if en.strip()]
    pairs = pairs[:limit] if limit else pairs
    return [en for en, _ in pairs], [fr for _, fr in pairs]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_and_data_arguments(parser)
    parser.add_argument("--set", default=SETS[0], choices=SETS, help="held-out set to use")
    parser.add_argument("--limit", type=int, default=200, help="first N lines (0: all)")
    parser.add_argument("--format", default="srt", choices=("srt", "vtt"))
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE,
                        help="sentences per model call")
    args = parser.parse_args(argv)
    english, french = read_set(args.data, args.set, args.limit)
    data, counts = subtitle_file(english, args.format)

    from nmt.inference.translator import Translator

    translator = Translator.load(args.model)
    options = translator.info.default_options
    print(f"model {translator.info.path} (beam {options.beam_size}); {machine()}")

    def translate(sentences):
        return translator.translate(sentences, options)

    translate(english[:4])  # warm-up, outside the timings
    print(f"{args.set}: {len(english)} lines over {sum(counts)} cues "
          f"({sum(c > 1 for c in counts)} lines over several), {args.format}")
    merged = Memo(translate)  # the whole lines reuse its sentences
    for label, memo, merge in (("sentences over cues", merged, True),
                               ("cue by cue", Memo(translate), False)):
        found = run(data, args.format, counts, french, memo, merge, args.batch_size)
        scores, report = found["scores"], found["report"]
        print(f"  {label:21s} chrF {scores.chrf:6.2f}  BLEU {scores.bleu:6.2f}  length "
              f"{found['length']:.2f}  {found['cues_per_second']:6.2f} cues/s "
              f"({found['seconds']:.1f} s; "
              f"{report.sentences} sentences read, {report.merged} over several cues, "
              f"{found['empty']} cues left without text, "
              f"{found['other_lines_changed']} other lines changed)")
    texts = [d.text for d in translate_documents(english, merged)]
    whole = corpus_scores(texts, [[r] for r in french])
    print(f"  {'no cues (whole lines)':21s} chrF {whole.chrf:6.2f}  BLEU {whole.bleu:6.2f}  "
          f"length {length_ratio(texts, french):.2f}  (each line a plain-text document)")
    print(f"BLEU signature: {whole.bleu_signature}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
