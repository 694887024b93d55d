"""Whole files, whatever their format: which format a file is, and one way to translate it.

The formats are those of `nmt translate-file` and of the server's file route (gettext
PO/POT, XLIFF 1.2/2.x, SRT and WebVTT subtitles, Word .docx, Markdown); each has its
module (`documents.po`, `.xliff`, `.subtitles`, `.docx`, `.markdown`). Both sides
read a file here, so that they check it, translate it and sum it up alike:

    format = format_of("messages.pot")                     # "po"
    run = read_file(format, data, "messages.pot", FileSettings(review=False))
    result = run(translator_translate)                     # FileResult
    result.data, result.summary                            # bytes, "2 of 3 messages ..."

`read_file` reads and checks the file at once (a bad file fails before any model
call); `run(translate, progress)` translates it. Nothing here imports TensorFlow.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import PurePath

from documents.file_batches import Progress
from documents.sentences import TARGET_LANGUAGE, Translate
from nmt.constants import DEFAULT_BATCH_SIZE

# Format -> the extensions that name it. PO: gettext catalogues and their templates; XLIFF
# 1.2 and 2.x; SubRip and WebVTT subtitles; Word documents (and macro-enabled ones, templates);
# Markdown (CommonMark with GFM tables).
FILE_FORMATS = {"po": (".po", ".pot"), "xliff": (".xlf", ".xliff"), "srt": (".srt",),
                "vtt": (".vtt",), "docx": (".docx", ".docm", ".dotx"),
                "markdown": (".md", ".markdown")}
# Format -> the media type of its files (the HTTP route's Content-Type).
MEDIA_TYPES = {
    "po": "text/x-gettext-translation; charset=utf-8", "xliff": "application/xliff+xml",
    "srt": "application/x-subrip; charset=utf-8", "vtt": "text/vtt; charset=utf-8",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "markdown": "text/markdown; charset=utf-8"}


@dataclasses.dataclass(frozen=True)
class FileSettings:
    """How a whole file is translated, whatever its format.

    Attributes:
        overwrite: PO and XLIFF: translate messages (segments) that have a
            translation too; the other formats are translated whole.
        review: mark machine translations for review: PO `fuzzy`, XLIFF 1.2
            `needs-review-translation`.
        merge_cues: subtitles: a sentence over several cues is translated whole
            and split back over them; False: cue by cue.
        placeholders: give placeholders (`%s`, `{0}`) back exactly.
        batch_size: sentences per call of `translate`.
        rest: PO: give reStructuredText's roles and literals (`` :func:`len` ``)
            back exactly too; None: when the file's references name `.rst`
            files (`documents.po.is_restructuredtext`).
    """

    overwrite: bool = False
    review: bool = True
    merge_cues: bool = True
    placeholders: bool = True
    batch_size: int = DEFAULT_BATCH_SIZE
    rest: bool | None = None


@dataclasses.dataclass(frozen=True)
class FileResult:
    """A translated file.

    Attributes:
        data: the translated file's bytes.
        summary: what was done, as `nmt translate-file` prints it (after `OUT: `),
            e.g. "2 of 3 messages translated (fuzzy), 1 translations kept, ...;
            3 sentences".
        counts: the format's report as numbers, e.g. `{"messages": 3, "written":
            2, ..., "sentences": 3}` (`sentences`: distinct sentences the model read).
    """

    data: bytes
    summary: str
    counts: dict[str, int]


# `run(translate, progress=None) -> FileResult`: what `read_file` returns.
FileRun = Callable[..., FileResult]


def format_of(name: str, given: str | None = None, hint: str | None = None) -> str:
    """`given`, else the format the file name's extension names.

    Args:
        name: the file's name or path.
        given: a format of `FILE_FORMATS` the caller chose, or None.
        hint: how the caller names a format, for the error; None: `--format
            po|xliff|...` (the command line's flag).

    Raises:
        ValueError: an unknown `given` format, or no `given` format and an
            extension no format has.
    """
    hint = hint or f"--format {'|'.join(FILE_FORMATS)}"
    if given is not None:
        if given not in FILE_FORMATS:
            raise ValueError(f"unknown file format {given!r}: name one with {hint}")
        return given
    suffix = PurePath(name).suffix.lower()
    for format, extensions in FILE_FORMATS.items():
        if suffix in extensions:
            return format
    supported = ", ".join(f"{ext} ({f})" for f, exts in FILE_FORMATS.items() for ext in exts)
    raise ValueError(f"cannot tell the format of {name} from its extension "
                     f"{suffix or '(none)'!r}: supported are {supported}; name one with {hint}")


def translated_name(name: str, format: str) -> str:
    """The name of the file's French translation: `guide.md` -> `guide.fr.md`, a PO
    template `messages.pot` -> `messages.fr.po`; only the file name, never a directory."""
    path = PurePath(PurePath(name.replace("\\", "/")).name or "file")
    suffix = ".po" if path.suffix.lower() == ".pot" else path.suffix
    if not suffix:
        suffix = FILE_FORMATS[format][0]
    return f"{path.stem}.{TARGET_LANGUAGE}{suffix}"


def read_file(format: str, data: bytes, name: str, settings: FileSettings) -> FileRun:
    """Reads and checks a file; returns `run(translate, progress=None) -> FileResult`.

    Args:
        format: a format of `FILE_FORMATS` (see `format_of`).
        data: the file's bytes.
        name: its name, for messages.
        settings: how to translate it.

    Raises:
        ValueError: the file is not of its format, or cannot take a French
            translation (the message names the file, its line where it helps,
            and what to change).
    """
    return _READERS[format](data, name, settings, format)


def _common(settings: FileSettings) -> dict:
    """The options every format takes (`documents.file_batches.FileOptions`)."""
    return {"placeholders": settings.placeholders, "batch_size": settings.batch_size}


def _po(data: bytes, name: str, settings: FileSettings, format: str) -> FileRun:
    from documents.po import PoOptions, read_po, translate_po

    options = PoOptions(overwrite=settings.overwrite, fuzzy=settings.review, rest=settings.rest,
                        **_common(settings))

    def summary(report) -> str:
        marked = " (fuzzy)" if settings.review and report.written else ""
        return (f"{report.written} of {report.messages} messages translated{marked}, "
                f"{report.kept} translations kept, {report.obsolete} obsolete entries left as "
                f"they were; {report.sentences} sentences")

    return _runner(translate_po, read_po(data, name), options, summary)


def _xliff(data: bytes, name: str, settings: FileSettings, format: str) -> FileRun:
    from documents.xliff import XliffOptions, read_xliff, translate_xliff

    options = XliffOptions(overwrite=settings.overwrite, review=settings.review,
                           **_common(settings))

    def summary(report) -> str:
        marked = " (for review)" if settings.review and report.written else ""
        return (f"{report.written} of {report.segments} segments translated{marked}, "
                f"{report.kept} translations kept, {report.skipped} not to translate, "
                f"{report.wordless} without words; {report.sentences} sentences")

    return _runner(translate_xliff, read_xliff(data, name), options, summary)


def _subtitles(data: bytes, name: str, settings: FileSettings, format: str) -> FileRun:
    from documents.subtitles import SubtitleOptions, read_subtitles, translate_subtitles

    options = SubtitleOptions(merge_cues=settings.merge_cues, **_common(settings))

    def summary(report) -> str:
        return (f"{report.translated} of {report.cues} cues translated, {report.merged} "
                f"sentences over several cues; {report.sentences} sentences")

    return _runner(translate_subtitles, read_subtitles(data, format, name), options, summary)


def _docx(data: bytes, name: str, settings: FileSettings, format: str) -> FileRun:
    from documents.docx import DocxOptions, read_docx, translate_docx

    def summary(report) -> str:
        return (f"{report.paragraphs} paragraphs translated in {report.written} of "
                f"{report.parts} parts (body, headers, footers, notes, comments); "
                f"{report.sentences} sentences")

    return _runner(translate_docx, read_docx(data, name), DocxOptions(**_common(settings)),
                   summary)


def _markdown(data: bytes, name: str, settings: FileSettings, format: str) -> FileRun:
    from documents.markdown import MarkdownOptions, read_markdown, translate_markdown

    def summary(report) -> str:
        return (f"{report.written} of {report.blocks} paragraphs, headings and table cells "
                f"translated, {report.left} texts left in English (their Markdown would not "
                f"read back the same); {report.sentences} sentences")

    return _runner(translate_markdown, read_markdown(data, name),
                   MarkdownOptions(**_common(settings)), summary)


# Format -> its reader. A reader imports its format's module only when called.
_READERS = {"po": _po, "xliff": _xliff, "srt": _subtitles, "vtt": _subtitles, "docx": _docx,
            "markdown": _markdown}


def _runner(translate_document: Callable, document, options, summary: Callable) -> FileRun:
    """`run(translate, progress=None) -> FileResult` for a document read: it translates with
    `translate_document(document, translate, options, progress=progress)` and sums up the
    report with `summary(report)`."""

    def run(translate: Translate, progress: Progress | None = None) -> FileResult:
        translated = translate_document(document, translate, options, progress=progress)
        report = translated.report
        return FileResult(translated.data, summary(report), dataclasses.asdict(report))

    return run
