"""Input files of a batch job: numbered raw lines, and the sentence each one holds.

Lines are read as bytes and decoded one at a time, so an undecodable line
becomes an error record instead of stopping the job. `parse_line` is shared
by `nmt batch` and the Beam pipeline, so both report the same errors.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, NamedTuple

from nmt.constants import DEFAULT_MAX_CHARS

INPUT_FORMATS = ("text", "tsv", "jsonl")
_BOM = b"\xef\xbb\xbf"


@dataclasses.dataclass(frozen=True)
class InputFormat:
    """Where the sentence is on each input line.

    Attributes:
        kind: `text` (the whole line), `tsv` (one tab-separated column) or
            `jsonl` (one string field of a JSON object per line).
        column: 0-based column for `tsv`.
        field: field name for `jsonl`.
        max_chars: longer sentences are recorded as errors, not translated.
    """

    kind: str = "text"
    column: int = 0
    field: str = "text"
    max_chars: int = DEFAULT_MAX_CHARS

    def __post_init__(self) -> None:
        if self.kind not in INPUT_FORMATS:
            raise ValueError(
                f"input format must be one of {', '.join(INPUT_FORMATS)}. Received: {self.kind!r}"
            )
        if self.column < 0:
            raise ValueError(f"column must be >= 0. Received: column={self.column!r}")
        if not self.field:
            raise ValueError(f"field must be a non-empty name. Received: field={self.field!r}")
        if self.max_chars < 1:
            raise ValueError(f"max_chars must be >= 1. Received: max_chars={self.max_chars!r}")


class SourceLine(NamedTuple):
    """One input line: 1-based line number, the sentence, and why it is not translated."""

    line: int
    text: str
    error: str | None = None


def detect_input_format(path: str | Path) -> str:
    """`tsv` for `.tsv`, `jsonl` for `.jsonl`/`.ndjson`/`.json`, else `text` (`.gz` ignored)."""
    name = str(path).lower().removesuffix(".gz")
    if name.endswith(".tsv"):
        return "tsv"
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    return "text"


def open_input(path: str | Path) -> BinaryIO:
    """Opens a file for binary reading, decompressing it when the name ends in `.gz`."""
    if str(path).endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def numbered_lines(lines: Iterable[bytes], skip: int = 0) -> Iterator[tuple[int, bytes]]:
    """Yields `(line_number, raw_line)`, 1-based, without line ending or byte-order mark.

    Args:
        lines: the raw lines of a file, e.g. the file opened in binary mode.
        skip: lines to pass over first (already done by an interrupted job).
    """
    for number, raw in enumerate(lines, start=1):
        if number <= skip:
            continue
        if number == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM):]
        yield number, raw.rstrip(b"\n").removesuffix(b"\r")


def parse_line(number: int, raw: bytes, fmt: InputFormat) -> SourceLine:
    """The sentence on one raw line, or the reason it cannot be translated."""
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return SourceLine(number, raw.decode("utf-8", errors="replace"),
                          f"undecodable: not valid UTF-8 at byte {error.start}")
    text, error = _extract(decoded, fmt)
    if error is None:
        error = _check_sentence(text, fmt.max_chars)
    return SourceLine(number, text, error)


def _extract(line: str, fmt: InputFormat) -> tuple[str, str | None]:
    if fmt.kind == "text":
        return line, None
    if fmt.kind == "tsv":
        columns = line.split("\t")
        if fmt.column >= len(columns):
            return line, f"no column {fmt.column}: the line has {len(columns)} column(s)"
        return columns[fmt.column], None
    return _extract_json(line, fmt.field)


def _extract_json(line: str, field: str) -> tuple[str, str | None]:
    if not line.strip():
        return "", "empty line"
    try:
        value = json.loads(line)
    except json.JSONDecodeError as error:
        return line, f"invalid JSON: {error.msg} at column {error.colno}"
    if not isinstance(value, dict) or field not in value:
        return line, f"no field {field!r} in the JSON object"
    if not isinstance(value[field], str):
        return line, f"field {field!r} is {type(value[field]).__name__}, not a string"
    return value[field], None


def _check_sentence(text: str, max_chars: int) -> str | None:
    # The model cannot translate a sentence with nothing in it (an all-blank
    # batch even fails as a whole), and control/format characters alone
    # tokenize to nothing, so they count as blank too.
    if all(ch.isspace() or unicodedata.category(ch).startswith("C") for ch in text):
        return "empty line"
    if len(text) > max_chars:
        return f"too long: {len(text)} characters, at most {max_chars} are translated"
    return None
