"""Whole files through the server (`TranslateFile`, `POST /v1/files:translate`).

A file is read whole (`read_upload`: the header first, then its bytes, up to
`Limits.max_file_bytes`), then `FileJob` reads, translates and writes it with
`documents.file_formats`, as `nmt translate-file` does. Reading and writing a
file is CPU work and synchronous, so it runs in a worker thread of the job's
executor, never on the event loop; each call of the format's `translate` in that
thread runs a coroutine on the loop (`asyncio.run_coroutine_threadsafe`) that sends
the sentences through the server's own path: the batcher (so the translation
cache and the model calls other requests share), `Limits.max_sentences` a request,
one request after the other. The format hands its distinct sentences over in one
call (its batch size is above `max_file_sentences`), so the sentence limit and the
API key's characters (`serving.quotas.Meter`) are checked before the model
translates any. A glossary is applied in the worker thread, to each sentence's
translation, before the format puts the sentences back into the file.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import threading
from collections.abc import AsyncIterable, Iterator

from documents.file_formats import MEDIA_TYPES, FileResult, read_file, translated_name
from documents.terminology import translating_with_glossary
from nmt_api import protos
from serving.batching import Batcher
from serving.errors import InvalidArgument, LimitExceeded
from serving.quotas import Meter
from serving.validation import Limits, ParsedFileHeader, UndecodableRequest

pb2, _ = protos.load()

# Bytes of the translated file per response message (well under gRPC's 4 MiB default).
RESPONSE_CHUNK_BYTES = 1024 * 1024
# Files read, translated and written at once; more wait for a thread (their sentences
# share the batcher with everyone's either way).
FILE_WORKERS = 4


async def read_upload(requests: AsyncIterable, limits: Limits) -> tuple[object, bytes]:
    """`(header, file bytes)` of a `TranslateFileRequest` stream, read whole.

    Raises:
        InvalidArgument: no request, no header first, a header later, or a
            message that does not parse.
        LimitExceeded: more than `max_file_bytes` of file.
    """
    header, data, index = None, bytearray(), 0
    async for request in requests:
        if isinstance(request, UndecodableRequest):
            raise InvalidArgument(f"request {index} of the stream: {request.reason}")
        if (index == 0) != request.HasField("header"):
            raise InvalidArgument(
                "the first request of the stream carries the header (the file's name and "
                f"options) and only the first; request {index} "
                f"{'has none' if index == 0 else 'has one too'}")
        if index == 0:
            header = request.header
        data += request.data
        check_file_size(len(data), limits, exact=False)
        index += 1
    if header is None:
        raise InvalidArgument("the stream ended before its first request; send a header "
                              "(the file's name and options), then the file's bytes")
    return header, bytes(data)


def check_file_size(size: int, limits: Limits, exact: bool = True) -> None:
    """Raises LimitExceeded when `size` bytes (so far, unless `exact`) are over the limit."""
    if size > limits.max_file_bytes:
        received = f"{size} bytes" if exact else f"more than {limits.max_file_bytes} bytes"
        raise LimitExceeded(
            f"the file is larger than this server's limit of {limits.max_file_bytes} bytes "
            f"(--max-file-bytes). Received: {received}; split the file, or ask the operator "
            "for a larger limit.")


def file_responses(summary, data: bytes) -> Iterator:
    """The `TranslateFileResponse`s: the summary with the first chunk, then the rest."""
    yield pb2.TranslateFileResponse(summary=summary, data=data[:RESPONSE_CHUNK_BYTES])
    for start in range(RESPONSE_CHUNK_BYTES, len(data), RESPONSE_CHUNK_BYTES):
        yield pb2.TranslateFileResponse(data=data[start:start + RESPONSE_CHUNK_BYTES])


class FileJob:
    """One file: read, translated through the batcher, written; see the module's docstring.

    Args:
        batcher: the server's batching queue.
        limits: the server's limits.
        parsed: the file's validated header.
        deadline: loop time after which queued sentences are dropped; None: none.
        meter: charges the sentences' characters to the call's API key; None: no keys.
        glossary: the resolved glossary (`GlossaryStore.resolve`); None: none.
    """

    def __init__(self, batcher: Batcher, limits: Limits, parsed: ParsedFileHeader,
                 deadline: float | None = None, meter: Meter | None = None, glossary=None):
        self._batcher, self._limits, self._parsed = batcher, limits, parsed
        self._deadline, self._meter, self._glossary = deadline, meter, glossary
        self.sentences = self.source_chars = 0
        self.version: int | None = None

    async def run(self, data: bytes, executor: concurrent.futures.Executor | None = None):
        """`(FileSummary, translated bytes)`; the file's errors are raised (a ValueError
        for a file that cannot be read or written: INVALID_ARGUMENT)."""
        check_file_size(len(data), self._limits)
        loop = asyncio.get_running_loop()
        parsed = self._parsed
        settings = dataclasses.replace(parsed.settings,
                                       batch_size=self._limits.max_file_sentences + 1)
        run = await loop.run_in_executor(executor, read_file, parsed.format, data, parsed.name,
                                         settings)
        bridge = _ToTheLoop(loop, self._translate)
        translate = translating_with_glossary(bridge, self._glossary)
        try:
            result = await loop.run_in_executor(executor, run, translate)
        except asyncio.CancelledError:
            bridge.cancel()  # the worker thread stops at its next wait for the model
            raise
        return self._summary(result), result.data

    async def _translate(self, sentences: list[str]) -> list:
        """On the loop: the sentences checked, charged and translated through the batcher."""
        self.sentences += len(sentences)
        if self.sentences > self._limits.max_file_sentences:
            raise LimitExceeded(
                f"{self._parsed.name} has more sentences to translate than this server's limit "
                f"of {self._limits.max_file_sentences} a file (--max-file-sentences). "
                f"Received: {self.sentences} distinct sentences; split the file.")
        chars = sum(len(s) for s in sentences)
        if self._meter is not None:
            self._meter.charge(chars)
        self.source_chars += chars
        translations = []
        step = self._limits.max_sentences
        for start in range(0, len(sentences), step):
            done, version = await self._batcher.translate(
                sentences[start:start + step], self._parsed.options, self._deadline)
            translations += done
            self.version = version if version is not None else self.version
        return translations

    def _summary(self, result: FileResult):
        parsed = self._parsed
        return pb2.FileSummary(
            name=translated_name(parsed.name, parsed.format),
            format=pb2.FileFormat.Value(f"FILE_FORMAT_{parsed.format.upper()}"),
            media_type=MEDIA_TYPES[parsed.format], text=result.summary, counts=result.counts,
            size_bytes=len(result.data), source_chars=self.source_chars,
            model_version=self.version or 0, request_id=parsed.request_id)


class _ToTheLoop:
    """The format's `translate`, called in the worker thread: each call runs `translate`
    on the loop and waits for it. `cancel()` (from the loop)
    makes the waiting call, and any later one, raise `CancelledError`.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, translate):
        self._loop, self._translate = loop, translate
        self._lock = threading.Lock()
        self._cancelled = False
        self._future: concurrent.futures.Future | None = None

    def __call__(self, sentences) -> list:
        with self._lock:
            if self._cancelled:
                raise concurrent.futures.CancelledError()
            self._future = asyncio.run_coroutine_threadsafe(self._translate(list(sentences)),
                                                            self._loop)
        return self._future.result()

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._future is not None:
                self._future.cancel()
