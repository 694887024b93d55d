"""Engines: what a batch job translates with, in-process or through a server.

An engine turns a list of sentences into one `Translation` per sentence, in
order, batching as it sees fit. It raises `BadInputError` when the input
itself is rejected; any other exception means the engine failed (server
down, out of memory) and stops the job, which can then be resumed.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from nmt.constants import DEFAULT_BATCH_SIZE, MAX_SENTENCE_TOKENS
from nmt.inference.precision import AUTO
from nmt.types import DecodeOptions, Translation, options_over

log = logging.getLogger("nmt.batch")

# Sentences per model call (or per streamed request) unless the job says otherwise.


# What an engine is given to decode with: complete options, or the fields a user set.
EngineOptions = DecodeOptions | Mapping[str, Any] | None


class BadInputError(ValueError):
    """The engine rejected the sentences it was given (retrying will not help)."""


class Engine(Protocol):
    """Translates sentences; see the module docstring for the contract.

    Attributes:
        max_source_tokens: the model's source length limit in subword tokens
            (with EOS) when known, to flag truncated sentences; else None.
    """

    max_source_tokens: int | None

    def translate(self, sentences: Sequence[str]) -> list[Translation]: ...

    def settings(self) -> dict:
        """What decides this engine's output (model or server, batch size, options), as
        JSON-ready values: part of a job's fingerprint, so a resumed job uses the same."""
        ...


def batches(items: Sequence, size: int) -> Iterator[Sequence]:
    """Consecutive slices of `items` of at most `size` elements."""
    for start in range(0, len(items), size):
        yield items[start:start + size]


def translate_or_explain(engine: Engine, sentences: Sequence[str]) -> list[Translation | str]:
    """Translates, replacing each sentence the engine rejects by the reason.

    A rejected request is split in halves until the offending sentences are
    alone, so one bad sentence costs about log2(len(sentences)) extra calls.

    Returns:
        One `Translation`, or an error message, per sentence, in order.
    """
    if not sentences:
        return []
    try:
        return list(engine.translate(sentences))
    except BadInputError as error:
        if len(sentences) == 1:
            return [f"rejected by the model: {error}"]
    middle = len(sentences) // 2
    return (translate_or_explain(engine, sentences[:middle])
            + translate_or_explain(engine, sentences[middle:]))


def complete_options(options: DecodeOptions | Mapping[str, Any] | None,
                     model_defaults: Callable[[], DecodeOptions]) -> DecodeOptions:
    """The options an engine decodes with: `options` itself, or the fields it maps
    (None: none) over the model's default decoding (`nmt.types.options_over`).

    Args:
        options: complete options, or the fields a user set.
        model_defaults: returns the model's default decoding (its export's
            recommended one), called only when `options` is not complete.
    """
    if isinstance(options, DecodeOptions):
        return options
    return options_over(model_defaults(), options or {})


def _check_batch_size(batch_size: int) -> None:
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1. Received: batch_size={batch_size!r}")


class LocalEngine:
    """Translates in this process with `nmt.inference.translator.Translator`.

    Args:
        translator: a loaded `Translator`.
        options: decoding options, or the fields a user set (a mapping; None:
            none) over the model's default decoding (`complete_options`).
        batch_size: sentences per call to the model.
    """

    max_source_tokens: int | None = MAX_SENTENCE_TOKENS

    def __init__(self, translator, options: EngineOptions, batch_size: int = DEFAULT_BATCH_SIZE):
        _check_batch_size(batch_size)
        self.translator, self.batch_size = translator, batch_size
        self.options = complete_options(options, lambda: translator.info.default_options)

    @classmethod
    def load(cls, model: str | os.PathLike, options: EngineOptions,
             batch_size: int = DEFAULT_BATCH_SIZE, precision: str = AUTO) -> LocalEngine:
        """Loads `model` (see `Translator.load`, which reads `precision`)."""
        from nmt.inference.translator import Translator

        return cls(Translator.load(model, precision), options, batch_size)

    def translate(self, sentences: Sequence[str]) -> list[Translation]:
        import tensorflow as tf

        results: list[Translation] = []
        for batch in batches(sentences, self.batch_size):
            try:
                results.extend(self.translator.translate(batch, self.options))
            except tf.errors.InvalidArgumentError as error:
                raise BadInputError(error.message.splitlines()[0]) from error
        return results

    def settings(self) -> dict:
        info = self.translator.info
        settings = {"model": info.path, "batch_size": self.batch_size,
                    "options": dataclasses.asdict(self.options)}
        if len(info.precisions) > 1:  # the path changes the output; one-path exports as before
            settings["precision"] = info.precision
        return settings


def _status_name(error: Exception) -> str | None:
    # grpc.RpcError carries a status code; read by name so that this module
    # does not need grpc (the in-process path never imports it).
    code = getattr(error, "code", None)
    return getattr(code() if callable(code) else None, "name", None)


# Statuses a busy or restarting server answers with; the call is retried.
RETRIED_STATUSES = ("UNAVAILABLE", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED")


class ServerEngine:
    """Translates through a running `nmt serve` with `TranslateStream`.

    All batches of one `translate` call go through one stream, so the
    client sends the next batch while the server decodes the previous one.
    The server reads the sentences as they are (`keep_placeholders` off): the
    job has taken the placeholders out already, or was asked not to.
    INVALID_ARGUMENT becomes `BadInputError`; a busy or restarting server
    (UNAVAILABLE, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED) is retried with
    exponential backoff, and the job stops if it stays so.

    Args:
        client: an `nmt_api.client.TranslationClient` (or anything with its
            `translate_stream(batches, options)`, and `default_options()` when
            `options` is not complete).
        options: as for `LocalEngine`; the served model's default decoding
            comes from the server (`GetModelInfo`).
        batch_size: sentences per streamed request (at most the server's
            `max_sentences`).
        target: the server address, recorded in the job's checkpoint.
        retries: attempts after the first for retried statuses.
        backoff_s: wait before the first retry, doubled at each retry.
    """

    # The server runs the same export, which truncates sentences at this limit.
    max_source_tokens: int | None = MAX_SENTENCE_TOKENS

    def __init__(self, client, options: EngineOptions, batch_size: int = DEFAULT_BATCH_SIZE,
                 target: str = "", *, retries: int = 5, backoff_s: float = 1.0):
        _check_batch_size(batch_size)
        self.client, self.batch_size = client, batch_size
        self.options = complete_options(options, lambda: client.default_options())
        self.target, self.retries, self.backoff_s = target, retries, backoff_s

    @classmethod
    def connect(cls, target: str, options: EngineOptions, batch_size: int = DEFAULT_BATCH_SIZE, *,
                timeout: float | None = None, root_certificates: bytes | None = None,
                token: str | None = None) -> ServerEngine:
        from nmt_api.client import TranslationClient

        client = TranslationClient(target, timeout=timeout, root_certificates=root_certificates,
                                   token=token)
        return cls(client, options, batch_size, target)

    def translate(self, sentences: Sequence[str]) -> list[Translation]:
        requests = [list(batch) for batch in batches(sentences, self.batch_size)]
        for attempt in range(self.retries + 1):
            try:
                replies = self.client.translate_stream(requests, self.options,
                                                       keep_placeholders=False)
                results = [t for reply in replies for t in reply]
                break
            except Exception as error:
                status = _status_name(error)
                if isinstance(error, ValueError) or status == "INVALID_ARGUMENT":
                    raise BadInputError(_message(error)) from error
                if status not in RETRIED_STATUSES or attempt == self.retries:
                    raise
                log.warning("server answered %s (%s); retrying", status, _message(error))
                time.sleep(self.backoff_s * 2 ** attempt)
        if len(results) != len(sentences):
            raise RuntimeError(
                f"the server returned {len(results)} translations for {len(sentences)} sentences"
            )
        return results

    def settings(self) -> dict:
        return {"server": self.target, "batch_size": self.batch_size,
                "options": dataclasses.asdict(self.options)}

    def close(self) -> None:
        close = getattr(self.client, "close", None)
        if callable(close):
            close()


def _message(error: Exception) -> str:
    details = getattr(error, "details", None)
    return str(details() if callable(details) else error)
