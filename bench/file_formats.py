"""Files per second and sentences per second of `nmt translate-file`, for each whole-file format.

One benchmark file per format is built in memory, deterministically, from the
first `--sentences` sentences (400 by default, 600 at most) of
`bench/data/file_formats.en` (everyday, interface, report, dialogue and guide
sentences written for this benchmark), so every format reads the same
sentences and only the format's own work differs:

- gettext PO template: one message per 1–2 sentences, each with a reference;
- XLIFF 1.2: one trans-unit per 1–2 sentences, some with a `<g>` element around
  a word, some with a `<ph>` (native code) after one;
- SRT and WebVTT: each sentence over 1–3 cues (`bench/subtitles.py`'s
  `subtitle_file`: one cue per 8 words), so that many run over two cues;
- Word .docx (python-docx): a header and a footer, headings, paragraphs of
  2–4 sentences with a word in bold and one in italics, 2x2 tables;
- Markdown: headings, paragraphs with emphasis, strong emphasis, links and
  inline code (before a word, so the model reads the same sentence), bullet
  and numbered lists, block quotes, fenced code blocks.

Each file is translated exactly as `nmt translate-file` does it in-process
(`documents.file_formats`: `read_file(format, data, name,
FileSettings())`, then `run(translate)`), with `Translator.load(--model,
--precision)` and the model's default decoding, after a warm-up call. A run is
timed whole: reading and checking the file, translating, writing the
translated file's bytes (in memory, no disk); each file is read once
beforehand, untimed, so that its format's modules are imported. Each file is
run `--repeats` times; the table gives the median: units (PO messages, XLIFF segments, cues,
.docx paragraphs, Markdown blocks, as the format's report counts them),
sentences the model read (distinct ones), seconds, files/s, sentences/s, and
the share of the time spent outside `translate` calls: what the format's code
costs (parsing, sentence splitting, tags carried over by the alignment,
writing and the read-back check).

    python bench/file_formats.py [--model models/en-fr] [--formats po xliff srt vtt docx
        markdown] [--sentences 400] [--repeats 3] [--precision auto] [--json FILE]

Timings are comparable only within one run, on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import re
import statistics
import sys
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from xml.sax.saxutils import escape

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.subtitles import subtitle_file  # noqa: E402
from bench.support.inputs import machine  # noqa: E402
from documents.file_formats import FileSettings, read_file  # noqa: E402
from nmt.inference.precision import AUTO, LOAD_CHOICES  # noqa: E402
from nmt.options import DEFAULT_MODEL_DIR  # noqa: E402

SENTENCES = Path(__file__).resolve().parent / "data" / "file_formats.en"
DEFAULT_SENTENCES = 400
FORMATS = ("po", "xliff", "srt", "vtt", "docx", "markdown")
LABELS = {"po": "gettext PO", "xliff": "XLIFF 1.2", "srt": "SRT", "vtt": "WebVTT",
          "docx": "Word .docx", "markdown": "Markdown"}
NAMES = {"po": "bench.pot", "xliff": "bench.xlf", "srt": "bench.srt", "vtt": "bench.vtt",
         "docx": "bench.docx", "markdown": "bench.md"}
# Format -> its unit, as the format's report (`FileResult.counts`) names it.
UNITS = {"po": "messages", "xliff": "segments", "srt": "cues", "vtt": "cues",
         "docx": "paragraphs", "markdown": "blocks"}
# A word that may carry a mark: four letters or more, not part of a contraction.
_WORD = re.compile(r"(?<![\w'])[A-Za-z]{4,}(?![\w'])")
# 1980-01-01, the earliest zip date: every .docx member gets it, so the file's bytes
# do not depend on when it was built.
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def read_pool(count: int, path: Path = SENTENCES) -> list[str]:
    """The first `count` sentences of `path` (one a line).

    Raises:
        ValueError: `count` is not between 1 and the number of sentences.
    """
    pool = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    if not 1 <= count <= len(pool):
        raise ValueError(f"--sentences must be between 1 and {len(pool)} (the sentences of "
                         f"{path}). Received: {count}")
    return pool[:count]


def groups(sentences: Sequence[str], sizes: Sequence[int]) -> list[list[str]]:
    """Consecutive sentences in groups of sizes[0], sizes[1], ... (cycled); the last
    group holds what is left."""
    found, start = [], 0
    while start < len(sentences):
        size = sizes[len(found) % len(sizes)]
        found.append(list(sentences[start:start + size]))
        start += size
    return found


def runs(text: str, marks: dict[int, str]) -> list[tuple[str, str]]:
    """`text` cut into `(text, mark)` runs: word i of `_WORD` (counted modulo the number of
    words) alone with `marks[i]`, the rest with mark `""`."""
    words = list(_WORD.finditer(text))
    marked = {i % len(words): mark for i, mark in marks.items()} if words else {}
    pieces, at = [], 0
    for i, word in enumerate(words):
        if i in marked:
            pieces += [(text[at:word.start()], ""), (word.group(), marked[i])]
            at = word.end()
    return [piece for piece in [*pieces, (text[at:], "")] if piece[0]]


def written(text: str, marks: dict[int, str], syntax: dict[str, str], k: int) -> str:
    """`text` with its marked words written in `syntax[mark]` (`{text}` the word, `{k}`
    the group's number)."""
    return "".join(syntax[mark].format(text=piece, k=k) for piece, mark in runs(text, marks))


def _po_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def po_file(sentences: Sequence[str]) -> tuple[bytes, int]:
    """A gettext template of one message per 1–2 sentences, and its number of messages."""
    header = ('msgid ""\nmsgstr ""\n"Project-Id-Version: file-formats bench\\n"\n'
              '"MIME-Version: 1.0\\n"\n"Content-Type: text/plain; charset=UTF-8\\n"\n'
              '"Content-Transfer-Encoding: 8bit\\n"\n')
    entries = [f'#: src/bench.c:{10 * (k + 1)}\nmsgid "{_po_string(" ".join(group))}"\n'
               'msgstr ""\n' for k, group in enumerate(groups(sentences, (1, 2, 1)))]
    return "\n".join([header, *entries]).encode("utf-8"), len(entries)


XLIFF_SYNTAX = {"": "{text}", "g": '<g id="g{k}" ctype="bold">{text}</g>',
                "ph": '{text} <ph id="ph{k}">&lt;br/&gt;</ph>'}


def xliff_marks(k: int) -> dict[int, str]:
    """Every third unit has a `<g>` around its second word, every fourth a `<ph>` after
    its first."""
    return {**({1: "g"} if k % 3 == 1 else {}), **({0: "ph"} if k % 4 == 2 else {})}


def xliff_file(sentences: Sequence[str]) -> tuple[bytes, int]:
    """An XLIFF 1.2 file of one trans-unit per 1–2 sentences, and its number of units."""
    units = []
    for k, group in enumerate(groups([escape(s) for s in sentences], (1, 2, 1))):
        source = written(" ".join(group), xliff_marks(k), XLIFF_SYNTAX, k)
        units.append(f'      <trans-unit id="u{k + 1}">\n        <source>{source}</source>\n'
                     '      </trans-unit>\n')
    head = ('<?xml version="1.0" encoding="UTF-8"?>\n<xliff version="1.2" '
            'xmlns="urn:oasis:names:tc:xliff:document:1.2">\n  <file original="bench.html" '
            'source-language="en" target-language="fr" datatype="html">\n    <body>\n')
    return f"{head}{''.join(units)}    </body>\n  </file>\n</xliff>\n".encode(), len(units)


def subtitles(format: str) -> Callable[[Sequence[str]], tuple[bytes, int]]:
    """The builder of an SRT or WebVTT file: each sentence over 1–3 cues."""

    def build(sentences: Sequence[str]) -> tuple[bytes, int]:
        data, counts = subtitle_file(sentences, format)
        return data, sum(counts)

    return build


class Feed:
    """Sentences handed out in order, a few at a time."""

    def __init__(self, sentences: Sequence[str]):
        self.sentences, self.at = list(sentences), 0

    def take(self, count: int) -> list[str]:
        taken = self.sentences[self.at:self.at + count]
        self.at += len(taken)
        return taken

    @property
    def left(self) -> int:
        return len(self.sentences) - self.at


# The blocks of a .docx body and of a Markdown file, cycled: (kind, sentences).
DOCX_BLOCKS = (("heading", 1), ("paragraph", 3), ("paragraph", 2), ("table", 4),
               ("paragraph", 4))
MARKDOWN_BLOCKS = (("heading", 1), ("paragraph", 3), ("bullets", 3), ("code", 0),
                   ("paragraph", 2), ("numbered", 2), ("quote", 1), ("paragraph", 4))


def docx_file(sentences: Sequence[str]) -> tuple[bytes, int]:
    """A Word document (header, footer, then `DOCX_BLOCKS` until the sentences run out),
    and its number of paragraphs with text."""
    import docx

    document, feed = docx.Document(), Feed(sentences)
    section = document.sections[0]
    paragraphs = 0
    for part in (section.header, section.footer):
        text = " ".join(feed.take(1))
        part.paragraphs[0].text = text
        paragraphs += bool(text)
    k = 0
    while feed.left:
        kind, size = DOCX_BLOCKS[k % len(DOCX_BLOCKS)]
        paragraphs += _docx_block(document, kind, feed.take(size), k)
        k += 1
    return _dated(document), paragraphs


def _docx_block(document, kind: str, group: list[str], k: int) -> int:
    """Adds one block; returns its paragraphs with text."""
    if kind == "heading":
        document.add_heading(group[0], level=1 + k % 2)
        return 1
    if kind == "table":
        table = document.add_table(rows=2, cols=2)
        table.style = "Table Grid"
        cells = [cell for row in table.rows for cell in row.cells]
        for cell, sentence in zip(cells, group, strict=False):
            cell.text = sentence
        return len(group)
    paragraph = document.add_paragraph()
    for text, mark in runs(" ".join(group), {k: "bold", k + 2: "italic"}):
        run = paragraph.add_run(text)
        run.bold, run.italic = mark == "bold" or None, mark == "italic" or None
    return 1


def _dated(document) -> bytes:
    """The saved document, every zip member dated `_ZIP_DATE` (python-docx dates them now)."""
    saved, out = io.BytesIO(), io.BytesIO()
    document.save(saved)
    with zipfile.ZipFile(saved) as source, zipfile.ZipFile(out, "w") as target:
        for member in source.infolist():
            info = zipfile.ZipInfo(member.filename, _ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(info, source.read(member))
    return out.getvalue()


MARKDOWN_SYNTAX = {"": "{text}", "emphasis": "*{text}*", "strong": "**{text}**",
                   "code": "`--step={k}` {text}",
                   "link": "[{text}](https://example.org/guide/{k})"}
MARKDOWN_CODE = "```sh\nbench-tool --project garden-{k} --verbose\nbench-tool status\n```"


def markdown_file(sentences: Sequence[str]) -> tuple[bytes, int]:
    """A Markdown file (a title, then `MARKDOWN_BLOCKS` until the sentences run out), and
    its number of blocks with text (headings, paragraphs, list items, quotes)."""
    feed = Feed(sentences)
    blocks = [f"# {' '.join(feed.take(1))}"]
    count, k = 1, 0
    while feed.left:
        kind, size = MARKDOWN_BLOCKS[k % len(MARKDOWN_BLOCKS)]
        text, found = _markdown_block(kind, feed.take(size), k)
        blocks.append(text)
        count += found
        k += 1
    return ("\n\n".join(blocks) + "\n").encode("utf-8"), count


def _markdown_block(kind: str, group: list[str], k: int) -> tuple[str, int]:
    """One block's Markdown and its blocks with text."""
    marks = ({k: "emphasis", k + 2: "link", k + 4: "code", k + 6: "strong"}
             if kind == "paragraph" else {k: "code"})
    if kind == "code":
        return MARKDOWN_CODE.format(k=k), 0
    if kind == "heading":
        return f"## {group[0]}", 1
    if kind in ("bullets", "numbered"):
        items = [written(s, marks if i == 1 else {}, MARKDOWN_SYNTAX, k)
                 for i, s in enumerate(group)]
        bullets = [f"{i + 1}." if kind == "numbered" else "-" for i in range(len(items))]
        return "\n".join(f"{b} {item}" for b, item in zip(bullets, items, strict=True)), \
            len(items)
    prefix = "> " if kind == "quote" else ""
    return prefix + written(" ".join(group), marks, MARKDOWN_SYNTAX, k), 1


BUILDERS = {"po": po_file, "xliff": xliff_file, "srt": subtitles("srt"),
            "vtt": subtitles("vtt"), "docx": docx_file, "markdown": markdown_file}


def build(format: str, sentences: Sequence[str]) -> tuple[bytes, int]:
    """The benchmark file of `format` made of `sentences`, and its units as built."""
    return BUILDERS[format](sentences)


class Timed:
    """A `translate` that adds up the seconds spent inside its calls."""

    def __init__(self, translate: Callable):
        self.translate, self.seconds = translate, 0.0

    def __call__(self, sentences):
        started = time.perf_counter()
        try:
            return self.translate(sentences)
        finally:
            self.seconds += time.perf_counter() - started


def run_once(format: str, data: bytes, translate: Callable) -> dict:
    """One timed run as `nmt translate-file` does it: read and check, translate, write."""
    timed = Timed(translate)
    started = time.perf_counter()
    result = read_file(format, data, NAMES[format], FileSettings())(timed)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "outside": (seconds - timed.seconds) / seconds,
            "counts": result.counts, "bytes_out": len(result.data)}


def measure(format: str, data: bytes, translate: Callable, repeats: int) -> dict:
    """`repeats` runs of one file: the medians and the format's counts."""
    read_file(format, data, NAMES[format], FileSettings())  # imports the format's modules
    done = [run_once(format, data, translate) for _ in range(repeats)]
    seconds = statistics.median(run["seconds"] for run in done)
    counts = done[0]["counts"]
    return {"format": format, "name": NAMES[format], "bytes": len(data),
            "bytes_out": done[0]["bytes_out"], "unit": UNITS[format],
            "units": counts[UNITS[format]], "sentences": counts["sentences"],
            "seconds": seconds, "files_per_s": 1 / seconds,
            "sentences_per_s": counts["sentences"] / seconds,
            "outside_share": statistics.median(run["outside"] for run in done),
            "runs_seconds": [run["seconds"] for run in done], "counts": counts}


def benchmark(files: dict[str, bytes], translate: Callable, repeats: int) -> list[dict]:
    """Each file measured in turn (`format -> bytes`, in order)."""
    return [measure(format, data, translate, repeats) for format, data in files.items()]


def table(rows: Sequence[dict]) -> str:
    """The rows as a Markdown table."""
    lines = ["| format | file | units | sentences read | seconds | files/s | sentences/s | "
             "time outside the model |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {LABELS[row['format']]} | {row['bytes'] / 1024:,.1f} KiB | "
                     f"{row['units']:,} {row['unit']} | {row['sentences']:,} | "
                     f"{row['seconds']:.2f} | {row['files_per_s']:.3f} | "
                     f"{row['sentences_per_s']:.1f} | {100 * row['outside_share']:.1f}% |")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR,
                        help="exported model (base directory: its highest version)")
    parser.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    parser.add_argument("--sentences", type=int, default=DEFAULT_SENTENCES,
                        help=f"sentences in each file (default {DEFAULT_SENTENCES})")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each file (median)")
    parser.add_argument("--precision", choices=LOAD_CHOICES, default=AUTO,
                        help="the model's path (default auto: what nmt translate-file picks)")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be 1 or more. Received: {args.repeats}")
    try:
        sentences = read_pool(args.sentences)
    except ValueError as error:
        parser.error(str(error))
    files = {format: build(format, sentences)[0] for format in dict.fromkeys(args.formats)}

    from nmt.inference.translator import Translator

    translator = Translator.load(args.model, args.precision)
    info, options = translator.info, translator.info.default_options

    def translate(batch):
        return translator.translate(batch, options)

    translate(sentences[:8])  # warm-up, outside the timings
    rows = benchmark(files, translate, args.repeats)
    print(f"machine: {machine()}")
    print(f"model: {info.path} (beam {options.beam_size}); precision {info.precision} "
          f"({info.precision_reason})")
    print(f"files: the first {len(sentences)} sentences of {SENTENCES.relative_to(REPO)} in "
          f"each; translate-file's defaults; median of {args.repeats} runs\n")
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps({
            "machine": machine(), "model": info.path, "precision": info.precision,
            "precision_reason": info.precision_reason,
            "decoding": dataclasses.asdict(options), "sentences": len(sentences),
            "repeats": args.repeats, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
