"""`nmt translate-file IN OUT`: a whole file translated, its format kept.

Formats: gettext PO/POT, XLIFF 1.2/2.x, SRT and WebVTT subtitles, Word .docx, Markdown.

The format comes from IN's extension or `--format`. IN is never written: OUT
is written to a temporary file beside it, flushed to disk and renamed over
OUT, so OUT is either the old file or the whole new one. The input is read
and checked before the model loads, so a wrong file fails at once.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from nmt.atomic_write import write_atomically  # (nmt_cli.keys imports it from here too)
from nmt.constants import DEFAULT_BATCH_SIZE
from nmt.options import DEFAULT_MODEL_DIR, add_decode_options, add_precision_option

# Format -> the extensions that name it. PO: gettext catalogues and their templates; XLIFF
# 1.2 and 2.x; SubRip and WebVTT subtitles; Word documents (and macro-enabled ones, templates);
# Markdown (CommonMark with GFM tables).
FILE_FORMATS = {"po": (".po", ".pot"), "xliff": (".xlf", ".xliff"), "srt": (".srt",),
                "vtt": (".vtt",), "docx": (".docx", ".docm", ".dotx"),
                "markdown": (".md", ".markdown")}


def add_translate_file_parser(sub) -> None:
    """Adds `translate-file` to the `nmt` command's subparsers."""
    p = sub.add_parser("translate-file",
                       help="translate a whole file, keeping its format (gettext PO/POT, "
                            "XLIFF 1.2/2.x, SRT and WebVTT subtitles, Word .docx, Markdown)")
    p.add_argument("input", metavar="IN", help="the file to translate (.po, .pot, .xlf, "
                                               ".xliff, .srt, .vtt, .docx, .md or .markdown); "
                                               "never written")
    p.add_argument("output", metavar="OUT", help="the translated file to write (replaced "
                                                 "atomically if it exists)")
    p.add_argument("--format", choices=tuple(FILE_FORMATS),
                   help="the file's format (default: from IN's extension)")
    p.add_argument("--overwrite", action="store_true",
                   help="translate messages (XLIFF: segments) that have a translation too "
                        "(default: keep them; subtitles, .docx and Markdown are translated "
                        "whole)")
    p.add_argument("--no-fuzzy", dest="fuzzy", action="store_false",
                   help="do not mark machine translations for review: PO: not fuzzy (default: "
                        "fuzzy, so that msgfmt leaves them out until a translator has read "
                        "them); XLIFF 1.2: state translated rather than "
                        "needs-review-translation (XLIFF 2 marks them translated either way)")
    p.add_argument("--cue-by-cue", dest="merge_cues", action="store_false",
                   help="subtitles: translate each cue on its own (default: a sentence that "
                        "runs over several cues is translated whole and split back over them "
                        "by the word alignment)")
    p.add_argument("--placeholders", action=argparse.BooleanOptionalAction, default=True,
                   help="give placeholders (%%s, {0}, ...) back exactly, as `nmt translate` "
                        "does (default); --no-placeholders lets the model read them as text")
    p.add_argument("--model", default=str(DEFAULT_MODEL_DIR),
                   help="SavedModel base or version directory (default: models/en-fr)")
    p.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE,
                   help=f"sentences per model call (default {DEFAULT_BATCH_SIZE})")
    add_decode_options(p)
    add_precision_option(p)
    p.set_defaults(func=translate_file_command)


def file_format(path: Path, given: str | None) -> str:
    """`given`, else the format IN's extension names.

    Raises:
        ValueError: no `given` format and an extension no format has.
    """
    if given is not None:
        return given
    suffix = path.suffix.lower()
    for name, extensions in FILE_FORMATS.items():
        if suffix in extensions:
            return name
    supported = ", ".join(f"{ext} ({name})" for name, exts in FILE_FORMATS.items() for ext in exts)
    raise ValueError(f"cannot tell the format of {path} from its extension "
                     f"{suffix or '(none)'!r}: supported are {supported}; name one with "
                     f"--format {'|'.join(FILE_FORMATS)}")


def check_paths(source: Path, target: Path) -> None:
    """Raises FileNotFoundError or ValueError where IN cannot be read or OUT not written."""
    if not source.is_file():
        raise FileNotFoundError(f"no file at {source}" if not source.exists()
                                else f"{source} is not a file")
    if target.exists() and os.path.samefile(source, target):
        raise ValueError(f"OUT ({target}) is IN: write the translation to another file")
    if target.is_dir():
        raise ValueError(f"OUT ({target}) is a directory: name the file to write")
    if not target.parent.is_dir():
        raise FileNotFoundError(f"no directory {target.parent} to write {target.name} in")


def translate_file_command(args) -> int:
    """`nmt translate-file IN OUT`: reads and checks IN, translates, writes OUT."""
    source, target = Path(args.input), Path(args.output)
    reader = _READERS[file_format(source, args.format)]
    check_paths(source, target)
    translate_document = reader(args, source.read_bytes(), str(source))

    from nmt.inference.translator import Translator
    from nmt.options import decode_options

    translator = Translator.load(args.model, args.precision)
    decoding = decode_options(args, translator.info.default_options)
    started = time.perf_counter()
    with _Progress() as progress:
        data, summary = translate_document(lambda s: translator.translate(s, decoding), progress)
    write_atomically(target, data)
    print(f"{target}: {summary} in {time.perf_counter() - started:.1f} s")
    return 0


def _po_file(args, data: bytes, name: str):
    """Reads and checks a PO file; returns `(translate, progress) -> (bytes, summary)`."""
    from nmt.documents.po import PoOptions, read_po, translate_po

    options = PoOptions(overwrite=args.overwrite, fuzzy=args.fuzzy, **_file_options(args))

    def summary(report) -> str:
        marked = " (fuzzy)" if args.fuzzy and report.written else ""
        return (f"{report.written} of {report.messages} messages translated{marked}, "
                f"{report.kept} translations kept, {report.obsolete} obsolete entries left as "
                f"they were; {report.sentences} sentences")

    return _runner(translate_po, read_po(data, name), options, summary)


def _xliff_file(args, data: bytes, name: str):
    """Reads and checks an XLIFF file; returns `(translate, progress) -> (bytes, summary)`."""
    from nmt.documents.xliff import XliffOptions, read_xliff, translate_xliff

    options = XliffOptions(overwrite=args.overwrite, review=args.fuzzy, **_file_options(args))

    def summary(report) -> str:
        marked = " (for review)" if args.fuzzy and report.written else ""
        return (f"{report.written} of {report.segments} segments translated{marked}, "
                f"{report.kept} translations kept, {report.skipped} not to translate, "
                f"{report.wordless} without words; {report.sentences} sentences")

    return _runner(translate_xliff, read_xliff(data, name), options, summary)


def _subtitle_file(args, data: bytes, name: str):
    """Reads and checks an SRT or WebVTT file; returns `(translate, progress) -> (bytes,
    summary)`."""
    from nmt.documents.subtitles import SubtitleOptions, read_subtitles, translate_subtitles

    options = SubtitleOptions(merge_cues=args.merge_cues, **_file_options(args))
    document = read_subtitles(data, file_format(Path(name), args.format), name)

    def summary(report) -> str:
        return (f"{report.translated} of {report.cues} cues translated, {report.merged} "
                f"sentences over several cues; {report.sentences} sentences")

    return _runner(translate_subtitles, document, options, summary)


def _docx_file(args, data: bytes, name: str):
    """Reads and checks a Word document; returns `(translate, progress) -> (bytes, summary)`."""
    from nmt.documents.docx import DocxOptions, read_docx, translate_docx

    options = DocxOptions(**_file_options(args))

    def summary(report) -> str:
        return (f"{report.paragraphs} paragraphs translated in {report.written} of "
                f"{report.parts} parts (body, headers, footers, notes, comments); "
                f"{report.sentences} sentences")

    return _runner(translate_docx, read_docx(data, name), options, summary)


def _markdown_file(args, data: bytes, name: str):
    """Reads and checks a Markdown file; returns `(translate, progress) -> (bytes, summary)`."""
    from nmt.documents.markdown import MarkdownOptions, read_markdown, translate_markdown

    options = MarkdownOptions(**_file_options(args))

    def summary(report) -> str:
        return (f"{report.written} of {report.blocks} paragraphs, headings and table cells "
                f"translated, {report.left} texts left in English (their Markdown would not "
                f"read back the same); {report.sentences} sentences")

    return _runner(translate_markdown, read_markdown(data, name), options, summary)


# Format -> its reader: `(args, IN's bytes, IN's name) -> run`, where `run(translate,
# progress)` translates and returns `(OUT's bytes, summary)`. A reader imports its format's
# module only when called.
_READERS = {"po": _po_file, "xliff": _xliff_file, "srt": _subtitle_file, "vtt": _subtitle_file,
            "docx": _docx_file, "markdown": _markdown_file}


def _file_options(args) -> dict:
    """The options every format takes (`nmt.documents.file_batches.FileOptions`)."""
    return {"placeholders": args.placeholders, "batch_size": args.batch_size}


def _runner(translate_document: Callable, document, options, summary: Callable):
    """`run(translate, progress) -> (bytes, summary)` for a document read: it translates
    with `translate_document(document, translate, options, progress=progress)` and sums up
    the report with `summary(report)`."""

    def run(translate, progress) -> tuple[bytes, str]:
        translated = translate_document(document, translate, options, progress=progress)
        return translated.data, summary(translated.report)

    return run


class _Progress:
    """A progress bar of sentences on a terminal's stderr (tqdm), nothing elsewhere."""

    def __enter__(self):
        self._bar = None
        return self

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit="sentence", file=sys.stderr, leave=False,
                             disable=None)
        self._bar.update(done - self._bar.n)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.close()
