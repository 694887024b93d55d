"""Whole files over `TranslateFile`: the request stream a client sends, and the file and
summary it gets back (`TranslationClient.translate_file` and its async twin).

    requests = file_requests(data, "messages.pot", overwrite=True)
    data, summary = file_from_responses(stub.TranslateFile(requests))

Needs neither TensorFlow nor a model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

from nmt.types import DecodeOptions
from nmt_api import convert, protos

pb2, _ = protos.load()

# Bytes of the file per request message: far below any server's message limit.
REQUEST_CHUNK_BYTES = 64 * 1024
# The formats `translate_file` takes and their `FileFormat` values: {"po": 1, "xliff": 2, ...}.
FILE_FORMATS = {name.removeprefix("FILE_FORMAT_").lower(): value
                for name, value in pb2.FileFormat.items() if value}
_FORMAT_NAMES = {value: name for name, value in FILE_FORMATS.items()}


@dataclasses.dataclass(frozen=True)
class FileSummary:
    """What the server did with a file (`FileSummary` of the `.proto`).

    Attributes:
        name: a name for the translated file, e.g. "messages.fr.po".
        format: the file's format, e.g. "po" (a key of `FILE_FORMATS`).
        media_type: the translated file's media type.
        text: one line, as `nmt translate-file` prints it after the file's name.
        counts: the same as numbers, by the format's own names (e.g. "written").
        size_bytes: the translated file's size.
        source_chars: characters of the sentences the model read (what an API key
            is charged).
        model_version: the version that translated it (0: no sentence needed the model).
        request_id: the request id sent with the file.
    """

    name: str
    format: str
    media_type: str
    text: str
    counts: dict[str, int]
    size_bytes: int
    source_chars: int
    model_version: int
    request_id: str = ""


def file_requests(data: bytes, name: str, *, format: str | None = None, overwrite: bool = False,
                  review: bool = True, cue_by_cue: bool = False, keep_placeholders: bool = True,
                  options: DecodeOptions | None = None, glossary=None,
                  glossary_exact_case: bool | None = None,
                  request_id: str = "") -> Iterator:
    """The `TranslateFileRequest`s of a file: its header, then its bytes in chunks.

    Arguments as `TranslationClient.translate_file`.

    Raises:
        TypeError: `data` is not bytes, or `glossary` is not a glossary.
        ValueError: `format` is not a key of `FILE_FORMATS`.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"data must be the file's bytes. Received: {type(data).__name__}; "
                        "read the file with Path.read_bytes()")
    header = pb2.FileHeader(
        name=name, format=_file_format(format), overwrite=overwrite, review=review,
        cue_by_cue=cue_by_cue, keep_placeholders=keep_placeholders,
        options=convert.options_to_proto(options), request_id=request_id)
    if glossary is not None:
        header.glossary.CopyFrom(convert.glossary_to_proto(glossary, glossary_exact_case))
    return _chunks(header, bytes(data))  # checked above, at once: not when gRPC sends them


def _chunks(header, data: bytes) -> Iterator:
    yield pb2.TranslateFileRequest(header=header, data=data[:REQUEST_CHUNK_BYTES])
    for start in range(REQUEST_CHUNK_BYTES, len(data), REQUEST_CHUNK_BYTES):
        yield pb2.TranslateFileRequest(data=data[start:start + REQUEST_CHUNK_BYTES])


def _file_format(format: str | None) -> int:
    if format is None:
        return pb2.FILE_FORMAT_UNSPECIFIED
    if format not in FILE_FORMATS:
        raise ValueError(f"format must be one of {tuple(FILE_FORMATS)}, or None for the "
                         f"one of the name's extension. Received: format={format!r}")
    return FILE_FORMATS[format]


def summary_from_proto(message) -> FileSummary:
    """A `FileSummary` message as a `FileSummary`."""
    return FileSummary(
        name=message.name, format=_FORMAT_NAMES.get(message.format, ""),
        media_type=message.media_type, text=message.text,
        counts={key: int(value) for key, value in message.counts.items()},
        size_bytes=message.size_bytes, source_chars=message.source_chars,
        model_version=message.model_version, request_id=message.request_id)


def file_from_responses(responses: Iterable) -> tuple[bytes, FileSummary]:
    """`(translated file, summary)` from the `TranslateFileResponse`s, in order."""
    chunks, summary = [], None
    for response in responses:
        summary = _take(response, chunks, summary)
    return _finish(chunks, summary)


async def file_from_async_responses(responses) -> tuple[bytes, FileSummary]:
    """`file_from_responses` over an async iterable (a `grpc.aio` call)."""
    chunks, summary = [], None
    async for response in responses:
        summary = _take(response, chunks, summary)
    return _finish(chunks, summary)


def _take(response, chunks: list[bytes], summary):
    chunks.append(response.data)
    return summary if summary is not None or not response.HasField("summary") else (
        summary_from_proto(response.summary))


def _finish(chunks: list[bytes], summary: FileSummary | None) -> tuple[bytes, FileSummary]:
    if summary is None:
        raise ValueError("the server's answer carried no summary: is it an nmt server with "
                         "the TranslateFile RPC?")
    return b"".join(chunks), summary
