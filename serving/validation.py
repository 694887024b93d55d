"""Request limits and the checks that turn a `TranslateRequest` or an `AlignRequest`
into plain Python values.

Every rejection says which limit or field is at fault, the value received and
what to change.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from google.protobuf import descriptor_pb2, descriptor_pool, message, message_factory

from documents.file_formats import FileSettings, format_of
from documents.glossary import MAX_ENTRIES
from nmt.alignment import word_links
from nmt.constants import DEFAULT_MAX_CHARS
from nmt.types import DecodeOptions, options_over
from serving.errors import InvalidArgument, LimitExceeded

OPTION_FIELDS = tuple(f.name for f in dataclasses.fields(DecodeOptions))
MAX_REQUEST_ID_CHARS = 128
MAX_GLOSSARY_ID_CHARS = 128
MAX_FILE_NAME_CHARS = 255
# The repeated text fields of the request messages, and what one element is called in errors.
TEXT_FIELDS = {"sentences": "sentence", "sources": "source", "targets": "target"}


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one request may ask for.

    Attributes:
        max_sentences: sentences per `TranslateRequest`, (source, target)
            pairs per `AlignRequest`.
        max_chars: characters (code points) per sentence, source or target;
            the model reads at most `nmt.constants.MAX_SENTENCE_TOKENS`
            subword tokens anyway.
        max_message_bytes: size of one request message (enforced by gRPC).
        max_beam_size: largest `beam_size` accepted.
        max_glossary_entries: inline glossary entries per request
            (`Glossary.entries`), at most `documents.glossary.MAX_ENTRIES`;
            larger glossaries go on the server (`--glossaries`).
        max_file_bytes: size of one file for `TranslateFile` (and `POST
            /v1/files:translate`).
        max_file_sentences: distinct sentences one file may send to the model.
    """

    max_sentences: int = 256
    max_chars: int = DEFAULT_MAX_CHARS
    max_message_bytes: int = 4 * 1024 * 1024
    max_beam_size: int = 16
    max_glossary_entries: int = 1000
    max_file_bytes: int = 10 * 1024 * 1024
    max_file_sentences: int = 10_000

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"{field.name} must be a positive integer. Received: {field.name}={value!r}"
                )
        default_beam = DecodeOptions().beam_size
        if not default_beam <= self.max_beam_size <= 64:
            raise ValueError(
                f"max_beam_size must be between {default_beam} (the default beam) and 64. "
                f"Received: max_beam_size={self.max_beam_size!r}")
        if self.max_glossary_entries > MAX_ENTRIES:
            raise ValueError(
                f"max_glossary_entries must be at most {MAX_ENTRIES} (a glossary's limit). "
                f"Received: max_glossary_entries={self.max_glossary_entries!r}")


@dataclasses.dataclass(frozen=True)
class LinkChoice:
    """A request's word-link rule (`nmt.alignment.word_links`)."""

    rule: str
    threshold: float = word_links.DEFAULT_THRESHOLD


@dataclasses.dataclass(frozen=True)
class GlossaryRequest:
    """A request's glossary (`TranslateRequest.glossary`), counted but not yet read:
    `serving.glossaries.GlossaryStore.resolve` checks the entries and finds the name.

    Attributes:
        entries: inline `(source, target)` entries, as sent.
        exact_case: match terms only as written.
        glossary_id: the name of a server glossary; "" for none.
    """

    entries: tuple[tuple[str, str], ...] = ()
    exact_case: bool = False
    glossary_id: str = ""


@dataclasses.dataclass(frozen=True)
class ParsedRequest:
    """A validated request: what the batcher and the response builder need.

    `format` is None for sentences, else what the entries of `sentences` are
    (a document format of `documents.markup.DOCUMENT_FORMATS`);
    `keep_placeholders` whether placeholders come back exactly
    (`documents.protection`; unset in the request: true); `glossary`
    the request's glossary, None for none (unset, or no entry and no name).
    """

    sentences: tuple[str, ...]
    options: DecodeOptions
    with_alignment: bool
    request_id: str
    with_attention: bool = False
    links: LinkChoice | None = None
    format: str | None = None
    keep_placeholders: bool = True
    glossary: GlossaryRequest | None = None


@dataclasses.dataclass(frozen=True)
class ParsedAlignRequest:
    """A validated `AlignRequest`: as many targets as sources.

    `format` is None for plain pairs, else what the sources are (`text`,
    `html` or `xml`): their tags are projected onto the targets.
    """

    sources: tuple[str, ...]
    targets: tuple[str, ...]
    with_alignment: bool
    request_id: str
    with_attention: bool = False
    links: LinkChoice | None = None
    format: str | None = None


@dataclasses.dataclass(frozen=True)
class ParsedFileHeader:
    """A validated `FileHeader`: the file's name and format, and how to translate it.

    `settings.batch_size` is the default; the servicer sets its own.
    """

    name: str
    format: str
    settings: FileSettings
    options: DecodeOptions
    request_id: str
    glossary: GlossaryRequest | None = None


@dataclasses.dataclass(frozen=True)
class UndecodableRequest:
    """Stands in for a request that protobuf could not parse (see `lenient_deserializer`)."""

    reason: str
    sentences: tuple = ()


def parse_request(request, limits: Limits, index: int | None = None,
                  defaults: DecodeOptions | None = None) -> ParsedRequest:
    """Validates a `TranslateRequest` against `limits`.

    Args:
        request: a `TranslateRequest`, or an `UndecodableRequest`.
        limits: the server's limits.
        index: the request's position in a stream, named in error messages.
        defaults: the decoding of the options the request leaves unset: the
            served model's (`ModelInfo.default_options`); None: `DecodeOptions()`.

    Raises:
        InvalidArgument: malformed text or options.
        LimitExceeded: over a limit.
    """
    where = "" if index is None else f"request {index} of the stream: "
    if isinstance(request, UndecodableRequest):
        raise InvalidArgument(where + request.reason)
    format = _format(request, where)
    noun = "sentence" if format is None else "document"
    if len(request.sentences) > limits.max_sentences:
        raise LimitExceeded(
            f"{where}too many {noun}s: at most {limits.max_sentences} per request. "
            f"Received: {len(request.sentences)} {noun}s; split the request.")
    _check_lengths(request.sentences, noun, limits, where)
    _check_request_id(request.request_id, where)
    return ParsedRequest(tuple(request.sentences),
                         _options(request, limits, where, defaults or DecodeOptions()),
                         _with_alignment(request), request.request_id,
                         request.with_attention, _links(request, where), format,
                         _keep_placeholders(request), _glossary(request, limits, where))


def _glossary(request, limits: Limits, where: str = "") -> GlossaryRequest | None:
    """The request's glossary, counted against `max_glossary_entries`; None for none."""
    if not request.HasField("glossary"):
        return None
    given = request.glossary
    if not given.entries and not given.glossary_id:
        return None
    if len(given.entries) > limits.max_glossary_entries:
        raise LimitExceeded(
            f"{where}too many glossary entries: at most {limits.max_glossary_entries} per "
            f"request (max_glossary_entries). Received: {len(given.entries)} entries; put the "
            "glossary on the server (nmt serve --glossaries DIR) and send its glossary_id, "
            "or split the request.")
    if len(given.glossary_id) > MAX_GLOSSARY_ID_CHARS:
        raise InvalidArgument(
            f"{where}glossary_id is too long: at most {MAX_GLOSSARY_ID_CHARS} characters. "
            f"Received: {len(given.glossary_id)} characters; send a name that "
            "ListGlossaries lists.")
    return GlossaryRequest(tuple((e.source, e.target) for e in given.entries),
                           given.exact_case, given.glossary_id)


def _keep_placeholders(request) -> bool:
    return request.keep_placeholders if request.HasField("keep_placeholders") else True


def _format(request, where: str = "") -> str | None:
    """The request's document format (`TEXT_FORMAT_HTML` -> `html`), or None for sentences."""
    enum = request.DESCRIPTOR.fields_by_name["format"].enum_type
    value = enum.values_by_number.get(request.format)
    if value is None:  # a number this server's proto does not know
        raise InvalidArgument(f"{where}format must be one of {', '.join(enum.values_by_name)}. "
                              f"Received: format={request.format}")
    return None if value.number == 0 else value.name.removeprefix("TEXT_FORMAT_").lower()


def parse_align_request(request, limits: Limits) -> ParsedAlignRequest:
    """Validates an `AlignRequest` against `limits` (`max_sentences` counts pairs).

    Args:
        request: an `AlignRequest`, or an `UndecodableRequest`.
        limits: the server's limits.

    Raises:
        InvalidArgument: malformed text, not one target per source, or (for
            plain pairs) a blank target for a source that is not blank; with
            a format, the servicer checks that on the source's words, once
            its markup is parsed.
        LimitExceeded: over a limit.
    """
    if isinstance(request, UndecodableRequest):
        raise InvalidArgument(request.reason)
    format = _format(request)
    sources, targets = tuple(request.sources), tuple(request.targets)
    if len(sources) != len(targets):
        raise InvalidArgument(
            "sources and targets must pair up: one target per source. "
            f"Received: {len(sources)} sources and {len(targets)} targets.")
    if len(sources) > limits.max_sentences:
        raise LimitExceeded(
            f"too many sentence pairs: at most {limits.max_sentences} per request. "
            f"Received: {len(sources)} pairs; split the request.")
    _check_lengths(sources, "source", limits)
    _check_lengths(targets, "target", limits)
    for i, (source, target) in enumerate(zip(sources, targets, strict=True)):
        if format is None and source.strip() and not target.strip():
            raise InvalidArgument(blank_target(i))
    _check_request_id(request.request_id)
    return ParsedAlignRequest(sources, targets, _with_alignment(request), request.request_id,
                              request.with_attention, _links(request), format)


def parse_file_header(header, limits: Limits,
                      defaults: DecodeOptions | None = None) -> ParsedFileHeader:
    """Validates a `FileHeader` (`TranslateFileRequest.header`) against `limits`.

    Args:
        header: a `FileHeader`.
        limits: the server's limits.
        defaults: the served model's decoding of unset options, as for `parse_request`.

    Raises:
        InvalidArgument: no name, a name too long, a format this server does
            not know or cannot tell from the name, bad options.
        LimitExceeded: over a limit (beam size, glossary entries).
    """
    if not header.name:
        raise InvalidArgument("the header has no file name; set name, e.g. \"messages.pot\" "
                              "(its extension gives the format unless format is set)")
    if len(header.name) > MAX_FILE_NAME_CHARS:
        raise InvalidArgument(
            f"the file name is too long: at most {MAX_FILE_NAME_CHARS} characters. "
            f"Received: {len(header.name)} characters; send the file's own name.")
    _check_request_id(header.request_id)
    settings = FileSettings(
        overwrite=header.overwrite, review=_optional(header, "review", True),
        merge_cues=not header.cue_by_cue,
        placeholders=_optional(header, "keep_placeholders", True))
    return ParsedFileHeader(header.name, _file_format(header), settings,
                            _options(header, limits, "", defaults or DecodeOptions()),
                            header.request_id, _glossary(header, limits))


def _file_format(header) -> str:
    """The header's format (`FILE_FORMAT_PO` -> `po`), else the one of its name's extension."""
    enum = header.DESCRIPTOR.fields_by_name["format"].enum_type
    names = "|".join(name for name, value in enum.values_by_name.items() if value.number)
    value = enum.values_by_number.get(header.format)
    if value is None:  # a number this server's proto does not know
        raise InvalidArgument(f"format must be one of {names}. Received: format={header.format}")
    given = None if value.number == 0 else value.name.removeprefix("FILE_FORMAT_").lower()
    try:
        return format_of(header.name, given, hint=f"format {names}")
    except ValueError as error:
        raise InvalidArgument(str(error)) from None


def _optional(message, field: str, default: bool) -> bool:
    return getattr(message, field) if message.HasField(field) else default


def blank_target(pair: int) -> str:
    """The error for a blank target whose source has words."""
    return (f"pair {pair}: the target is empty but the source is not; send the source's "
            "translation, or leave both empty.")


def _check_lengths(texts, noun: str, limits: Limits, where: str = "") -> None:
    for i, text in enumerate(texts):
        if len(text) > limits.max_chars:
            raise LimitExceeded(
                f"{where}{noun} {i} is too long: at most {limits.max_chars} characters. "
                f"Received: {len(text)} characters; split it into shorter {noun}s.")


def _check_request_id(request_id: str, where: str = "") -> None:
    if len(request_id) > MAX_REQUEST_ID_CHARS:
        raise InvalidArgument(
            f"{where}request_id is too long: at most {MAX_REQUEST_ID_CHARS} characters. "
            f"Received: {len(request_id)} characters.")


def _with_alignment(request) -> bool:
    return request.with_alignment if request.HasField("with_alignment") else True


def _links(request, where: str = "") -> LinkChoice | None:
    """The request's `word_links`, or None for the model's default rule."""
    if not request.HasField("word_links") or not request.word_links.rule:
        return None
    given = request.word_links
    threshold = given.threshold if given.HasField("threshold") else word_links.DEFAULT_THRESHOLD
    try:
        word_links.check_rule(given.rule, threshold)
    except ValueError as error:
        raise InvalidArgument(f"{where}invalid word_links: {error}") from error
    return LinkChoice(given.rule, threshold)


def _options(request, limits: Limits, where: str, defaults: DecodeOptions) -> DecodeOptions:
    """The fields the request sets over `defaults` (`nmt.types.options_over`)."""
    given = {name: getattr(request.options, name) for name in OPTION_FIELDS
             if request.HasField("options") and request.options.HasField(name)}
    try:
        options = options_over(defaults, given)
    except ValueError as error:
        raise InvalidArgument(f"{where}invalid options: {error}") from error
    if options.beam_size > limits.max_beam_size:
        raise LimitExceeded(
            f"{where}beam_size is over this server's limit of {limits.max_beam_size}. "
            f"Received: beam_size={options.beam_size}; ask for a smaller beam.")
    return options


def lenient_deserializer(message_class) -> Callable[[bytes], object]:
    """A request deserializer that answers unparseable input instead of failing the call.

    gRPC answers a deserialization failure with a bare INTERNAL error; this
    one returns an `UndecodableRequest` naming the problem (for text that is
    not UTF-8: which field, which element and where), which the servicer
    answers with INVALID_ARGUMENT.

    Args:
        message_class: a request message with text in `TEXT_FIELDS`, e.g.
            `TranslateRequest` or `AlignRequest`.
    """
    as_bytes = _bytes_twin(message_class)

    def deserialize(data: bytes):
        try:
            return message_class.FromString(data)
        except message.DecodeError:
            return UndecodableRequest(_explain(as_bytes, data, message_class))

    return deserialize


def _bytes_twin(message_class):
    """The same message type with its `TEXT_FIELDS` as `bytes`, in a private descriptor pool."""
    file_proto = descriptor_pb2.FileDescriptorProto()
    message_class.DESCRIPTOR.file.CopyToProto(file_proto)
    for message_proto in file_proto.message_type:
        if message_proto.name == message_class.DESCRIPTOR.name:
            for field in message_proto.field:
                if field.name in TEXT_FIELDS:
                    field.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_proto)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName(message_class.DESCRIPTOR.full_name))


def _explain(as_bytes, data: bytes, message_class) -> str:
    try:
        request = as_bytes.FromString(data)
    except message.DecodeError:
        return (f"the request is not a valid {message_class.DESCRIPTOR.name} message; check the "
                "client's proto.")
    for field, noun in TEXT_FIELDS.items():
        for i, raw in enumerate(getattr(request, field, ())):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as error:
                return (f"{noun} {i} is not valid UTF-8 (byte {raw[error.start]:#04x} at "
                        f"offset {error.start}); send UTF-8 text, e.g. decode your input with "
                        "errors='replace'.")
    return "the request has a string field that is not valid UTF-8; send UTF-8 text."
