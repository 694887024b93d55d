"""Subtitle files (SubRip `.srt`, WebVTT `.vtt`) translated: the text of every cue, the rest
kept byte for byte.

    document = read_subtitles(Path("film.srt").read_bytes(), "srt", "film.srt")
    translated = translate_subtitles(document, lambda s: translator.translate(s, options))
    Path("film.fr.srt").write_bytes(translated.data)       # nmt_cli/files.py writes atomically

What is kept byte for byte: cue numbers and identifiers, timing lines with
their settings (WebVTT `align:start line:0`, SRT `X1:` coordinates), the
WebVTT header and its NOTE, STYLE and REGION blocks, blank lines, every line
end (LF, CRLF or CR, as each line has it) and a byte-order mark. Only the
lines of cue text are written; the result is read back and compared with the
input outside them before it is given.

Sentences over several cues: a cue's text is split into sentences as markup
is (`documents.markup`: sentencex, line breaks inside a cue as spaces).
A cue's last sentence and the next cue's first are one sentence for the
model (up to `MAX_CUES_PER_SENTENCE` cues) where no sentence ends between
them: sentencex finds no boundary there; or, where an ellipsis closes the
cue or opens the next (`I was going to...` `...the market.`), the next opens
with one too or with a lower-case word (the ellipses stay where they are;
the model does not read them). A speaker's turn starts a sentence: a cue
opening with a dialogue dash (`- No.`), and inside a cue a line opening with
one or a WebVTT voice tag (`<v Ann>`), which stay where they are. The
sentence's translation is split back over its cues at the cuts that keep the
most word links inside their cue (`documents.cues.cue_boundaries`:
monotone, target words in their order, every cue at least one word where
the translation has as many words as there are cues, else a cue may be left
without a text line; ties go to cuts that do not open a cue with bare
punctuation, then to those nearest the source's proportion).
`SubtitleOptions(merge_cues=False)` translates cue by cue instead
(bench/subtitles.py measures both).

Line breaks inside a cue: one between two sentences is kept where it is; those
inside a sentence are layout: the sentence's translation in that cue is split
over as many lines as a sentence is over cues (by the word links, ties to
the source's proportion), lines kept to `MAX_LINE_CHARS` characters (42, or
the source's longest line) where they can be, each break with its own line
end.

Inline tags, carried through the word alignment by `documents.markup`'s
machinery (each cue is a marked-up text whose tags `documents.cues` finds):
- SRT: `<i> <b> <u> <s> <font color="...">` (any `<name ...>`...`</name>`)
  are elements; `{\\an8}`-style overrides are kept verbatim, standalone.
  Text is not escaped (SRT has no entities; `&amp;` is a placeholder).
- WebVTT: `<i> <b> <u> <c.class> <v Speaker> <lang en> <ruby> <rt>` are
  elements (the annotation, such as a speaker's name, is copied, not
  translated); `&amp; &lt; &gt; &nbsp;`... are decoded for the model and
  `& < >` escaped again in the translation; a timestamp `<00:00:01.500>` is
  kept verbatim, standalone, and timestamps keep their order.
- An element inside a sentence goes around the target words aligned to its
  words; one that encloses whole sentences, or a whole cue, stays where it
  is; a tag before a cue's first word or after its last stays there.
- A tag that cannot be carried as an element (a start tag never closed in its
  cue, as WebVTT allows for `<v Speaker>`; an end tag that closes nothing;
  tags that cross) is kept verbatim as a standalone piece at the target
  place of the word it follows; an element cut by a cue boundary is two such
  pieces, one in each cue.

Placeholders (`%s`, `{0}`; on by default) come back as `nmt translate
--format text` gives them. The distinct sentences of the whole file are
translated together, sorted by length, `batch_size` a call.

Reading: a small reader of the block structure (blank-line separated blocks,
timing lines by regex) rather than `srt` (3.5.3) or `webvtt-py` (0.6.0):
both parse into cue objects and write the file anew (`srt.compose` rewrites
every timestamp as `00:00:01,000`, renumbers and uses one line end for the
whole file; webvtt-py writes its own layout), so neither gives back what
was not translated byte for byte, and neither names the line of an error.
A malformed file raises `SubtitleError` (a `ValueError`) naming the line and
what to change: a timing line that does not parse or ends before it starts,
a WebVTT file without its `WEBVTT` line, a block that is neither a cue nor
NOTE, STYLE or REGION, text that is not UTF-8. A line of only whitespace
ends a block, as a blank line does.

Nothing here imports TensorFlow: `translate` is any sentences -> results with
`.text` and `.word_alignment` (`Translator.translate`, a client's `translate`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from documents.cues import (  # noqa: F401  (the MAX_ limits: part of this API)
    CUE_FORMATS,
    MAX_CUES_PER_SENTENCE,
    MAX_LINE_CHARS,
    cue_sentences,
    read_cue_text,
    render_cue_text,
    split_translation,
)
from documents.file_batches import FileOptions, Progress, translate_distinct
from documents.sentences import Translate

SUBTITLE_FORMATS = CUE_FORMATS

_BOM = "\ufeff"
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")  # lines as WebVTT counts them
_LINE_END = re.compile(r"\r\n|\r|\n")
_FINAL_LINE_END = re.compile(r"(?:\r\n|\r|\n)\Z")
_SRT_NUMBER = re.compile(r"[ \t]*\d+[ \t]*")
_SRT_TIME = r"(\d+):([0-5]\d):([0-5]\d)[,.](\d{1,3})"
_SRT_TIMING = re.compile(rf"[ \t]*{_SRT_TIME}[ \t]*-->[ \t]*{_SRT_TIME}(?:[ \t].*)?")
_VTT_TIME = r"(?:(\d{2,}):)?([0-5]\d):([0-5]\d)\.(\d{3})"
_VTT_TIMING = re.compile(rf"{_VTT_TIME}[ \t]+-->[ \t]+{_VTT_TIME}(?:[ \t].*)?")
_VTT_SIGNATURE = re.compile(r"WEBVTT(?:[ \t].*)?")
_VTT_OTHER_BLOCK = re.compile(r"(?:NOTE|STYLE|REGION)(?:[ \t].*)?")


class SubtitleError(ValueError):
    """A file that is not SRT or WebVTT as it says; the message names the file's line and
    what to change."""


@dataclasses.dataclass(frozen=True)
class SubtitleOptions(FileOptions):
    """How a subtitle file is translated (placeholders, batch_size: `FileOptions`).

    Attributes:
        merge_cues: translate a sentence that runs over several cues as one
            and split its translation over them (default); False: cue by cue.
    """

    merge_cues: bool = True


@dataclasses.dataclass(frozen=True)
class Cue:
    """One cue as read.

    Attributes:
        line: 1-based line of its timing line.
        identifier: its SRT number or WebVTT identifier as written ('' if it has none).
        start, end: its times in seconds.
        text_lines: `(first, end)`: its text's lines in `SubtitleDocument.lines`.
        text: its text as written, each line with its own line end but the last.
    """

    line: int
    identifier: str
    start: float
    end: float
    text_lines: tuple[int, int]
    text: str


@dataclasses.dataclass(frozen=True)
class SubtitleDocument:
    """A subtitle file as read.

    Attributes:
        name: for messages (the path).
        format: `srt` or `vtt`.
        bom: the file starts with a UTF-8 byte-order mark (not in `lines`).
        lines: the file's lines, line ends included.
        cues: in file order.
    """

    name: str
    format: str
    bom: bool
    lines: tuple[str, ...]
    cues: tuple[Cue, ...]

    @property
    def newline(self) -> str:
        found = _LINE_END.search(self.lines[0]) if self.lines else None
        return found.group() if found else "\n"


@dataclasses.dataclass(frozen=True)
class SubtitleReport:
    """What a translation did.

    Attributes:
        cues: cues of the file.
        translated: cues with text to translate (the others are as they were).
        sentences: distinct sentences the model read.
        merged: sentences that run over several cues (0 cue by cue).
    """

    cues: int
    translated: int
    sentences: int
    merged: int


@dataclasses.dataclass(frozen=True)
class SubtitleTranslation:
    """The translated file (`data`, UTF-8) and what was done."""

    data: bytes
    report: SubtitleReport


# ---------------------------------------------------------------------------------------------
# Reading: blocks of lines between blank lines.


def read_subtitles(data: bytes, format: str, name: str = "<subtitles>") -> SubtitleDocument:
    """Reads an SRT or WebVTT file.

    Args:
        data: the file's bytes (UTF-8, with or without a byte-order mark).
        format: `srt` or `vtt`.
        name: the file's name, for error messages.

    Raises:
        SubtitleError: not UTF-8, or malformed (the message names the line).
        ValueError: `format` is not one of `SUBTITLE_FORMATS`.
    """
    if format not in SUBTITLE_FORMATS:
        raise ValueError(f"format must be one of {SUBTITLE_FORMATS}. Received: {format!r}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SubtitleError(f"{name} is not UTF-8 text (byte {error.start}): convert it first, "
                            f"e.g. iconv -f WINDOWS-1252 -t UTF-8") from None
    bom = text.startswith(_BOM)
    lines = tuple(_LINE.findall(text[1:] if bom else text))
    reader = _read_srt if format == "srt" else _read_vtt
    return SubtitleDocument(name, format, bom, lines, tuple(reader(lines, name)))


def _body(line: str) -> str:
    return line.rstrip("\r\n")


def _blocks(lines: Sequence[str], start: int = 0) -> list[tuple[int, int]]:
    """`(first, end)` of each run of non-blank lines from `start`."""
    blocks, first = [], None
    for index in range(start, len(lines)):
        blank = not lines[index].strip()
        if first is None and not blank:
            first = index
        elif first is not None and blank:
            blocks.append((first, index))
            first = None
    if first is not None:
        blocks.append((first, len(lines)))
    return blocks


def _seconds(match: re.Match, group: int) -> float:
    hours, minutes, seconds, fraction = match.group(group, group + 1, group + 2, group + 3)
    return (int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)
            + int(fraction.ljust(3, "0")) / 1000)


def _timing(lines: Sequence[str], index: int, name: str, pattern: re.Pattern,
            example: str) -> tuple[float, float]:
    """The start and end of the timing line `lines[index]`; SubtitleError if it is none."""
    body = _body(lines[index])
    found = pattern.fullmatch(body)
    if found is None:
        hint = ("; a comma before the milliseconds is SRT's: WebVTT has a full stop"
                if pattern is _VTT_TIMING and re.search(r"\d,\d{3}", body) else "")
        raise SubtitleError(f"{name}:{index + 1}: {body!r} is not a timing line: write it as "
                            f"{example!r}{hint}")
    start, end = _seconds(found, 1), _seconds(found, 5)
    if end < start:
        raise SubtitleError(f"{name}:{index + 1}: the cue ends ({end:.3f} s) before it starts "
                            f"({start:.3f} s): correct its timing line")
    return start, end


def _cue(lines: Sequence[str], identifier: str, timing: int, end: int,
         times: tuple[float, float]) -> Cue:
    text = _FINAL_LINE_END.sub("", "".join(lines[timing + 1:end]))
    return Cue(timing + 1, identifier, *times, (timing + 1, end), text)


def _read_srt(lines: Sequence[str], name: str) -> list[Cue]:
    example = "00:00:01,000 --> 00:00:04,000"
    cues = []
    for first, end in _blocks(lines):
        timing, identifier = first, ""
        if _SRT_NUMBER.fullmatch(_body(lines[first])):
            timing, identifier = first + 1, _body(lines[first]).strip()
            if timing == end:
                raise SubtitleError(f"{name}:{first + 1}: cue {identifier} has no timing line: "
                                    f"add one such as {example!r} below its number")
        elif "-->" not in lines[first]:
            raise SubtitleError(f"{name}:{first + 1}: {_body(lines[first])!r} is neither a cue "
                                "number nor a timing line: is it an SRT file? (A blank line "
                                "inside a cue's text ends the cue: remove it.)")
        times = _timing(lines, timing, name, _SRT_TIMING, example)
        cues.append(_cue(lines, identifier, timing, end, times))
    if not cues:
        raise SubtitleError(f"{name} has no cue (a number, a timing line such as {example!r} "
                            "and text): is it an SRT file?")
    return cues


def _read_vtt(lines: Sequence[str], name: str) -> list[Cue]:
    example = "00:00:01.000 --> 00:00:04.000"
    if not lines or not _VTT_SIGNATURE.fullmatch(_body(lines[0])):
        found = _body(lines[0]) if lines else ""
        hint = (" (this looks like SRT: use .srt or --format srt)"
                if _SRT_NUMBER.fullmatch(found) or _SRT_TIMING.fullmatch(found) else "")
        raise SubtitleError(f"{name}:1: a WebVTT file starts with the line WEBVTT; found "
                            f"{found!r}: add WEBVTT as the first line{hint}")
    header = _blocks(lines)[0]
    for index in range(*header):
        if "-->" in lines[index]:
            raise SubtitleError(f"{name}:{index + 1}: a timing line in the header: put a blank "
                                "line between the header and the first cue")
    cues = []
    for first, end in _blocks(lines, header[1]):
        if _VTT_OTHER_BLOCK.fullmatch(_body(lines[first])):
            continue  # NOTE, STYLE, REGION: kept as they are
        if "-->" in lines[first]:
            timing, identifier = first, ""
        elif first + 1 < end and "-->" in lines[first + 1]:
            timing, identifier = first + 1, _body(lines[first])
        else:
            raise SubtitleError(f"{name}:{first + 1}: {_body(lines[first])!r} starts a block that "
                                f"is not a cue (no timing line such as {example!r} in its first "
                                "two lines) nor NOTE, STYLE or REGION: add the timing line, or "
                                "start the block with NOTE")
        times = _timing(lines, timing, name, _VTT_TIMING, example)
        cues.append(_cue(lines, identifier, timing, end, times))
    return cues


# ---------------------------------------------------------------------------------------------
# Writing: each cue's text with its sentences' translations, the rest as it was.


def _spliced(document: SubtitleDocument, texts: dict[int, str]) -> bytes:
    """The file with the text lines of each cue in `texts` replaced by its new text."""
    out, cursor = [], 0
    for index, text in sorted(texts.items()):
        first, end = document.cues[index].text_lines
        out += document.lines[cursor:first]
        ending = _FINAL_LINE_END.search(document.lines[end - 1])
        if text.strip():  # a cue left without a word (fewer target words than cues): no line
            out.append(text + (ending.group() if ending else ""))
        cursor = end
    out += document.lines[cursor:]
    return ((_BOM if document.bom else "") + "".join(out)).encode("utf-8")


def _frame(document: SubtitleDocument) -> list[str]:
    """The file's lines outside cue text, in order."""
    text = {i for cue in document.cues for i in range(*cue.text_lines)}
    return [line for i, line in enumerate(document.lines) if i not in text]


def _check(document: SubtitleDocument, data: bytes) -> None:
    """Raises SubtitleError where `data` does not read back as `document` outside cue text."""
    try:
        written = read_subtitles(data, document.format, document.name)
    except SubtitleError:
        written = None
    if (written is None or written.bom != document.bom
            or len(written.cues) != len(document.cues) or _frame(written) != _frame(document)):
        raise SubtitleError(f"{document.name}: the translation would not read back with the "
                            "same cues and lines, so nothing was written; please report this "
                            "with the file")


def translate_subtitles(document: SubtitleDocument, translate: Translate,
                        options: SubtitleOptions = SubtitleOptions(), *,
                        progress: Progress | None = None) -> SubtitleTranslation:
    """Translates the text of every cue (see the module docstring).

    Args:
        document: from `read_subtitles`.
        translate: sentences -> one result per sentence (`.text`, `.word_alignment`).
        options: merge_cues, placeholders, batch size.
        progress: called with `(sentences done, sentences)` after each call of `translate`.

    Returns:
        The file's new bytes and a `SubtitleReport`.

    Raises:
        SubtitleError: the result would not read back as the file (a bug; nothing given).
    """
    cues = [read_cue_text(cue.text, document.format, options.placeholders)
            for cue in document.cues]
    sentences = cue_sentences(cues, options.merge_cues)
    texts = [" ".join(word for cue, index in sentence for word in cues[cue].units[index].words)
             for sentence in sentences]
    results = translate_distinct(texts, translate, options.batch_size, progress)
    parts: dict[tuple[int, int], tuple] = {}
    for sentence, text in zip(sentences, texts, strict=True):
        found = split_translation([cues[cue].units[index] for cue, index in sentence],
                                  results[text])
        parts.update(zip(sentence, found, strict=True))
    written = {}
    for index, (cue, read) in enumerate(zip(document.cues, cues, strict=True)):
        if read.units:
            own = [parts[(index, k)] for k in range(len(read.units))]
            written[index] = render_cue_text(cue.text, read.units, own,
                                             escape=document.format == "vtt")
    data = _spliced(document, written)
    _check(document, data)
    return SubtitleTranslation(data, SubtitleReport(
        cues=len(document.cues), translated=len(written), sentences=len(results),
        merged=sum(len(sentence) > 1 for sentence in sentences)))
