"""Request limits and the checks that turn a `TranslateRequest` into plain Python values.

Every rejection says which limit or field is at fault, the value received and
what to change.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from google.protobuf import descriptor_pb2, descriptor_pool, message, message_factory

from nmt.types import DecodeOptions
from serving.errors import InvalidArgument, LimitExceeded

OPTION_FIELDS = tuple(f.name for f in dataclasses.fields(DecodeOptions))
MAX_REQUEST_ID_CHARS = 128


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one request may ask for.

    Attributes:
        max_sentences: sentences per request.
        max_chars: characters (code points) per sentence; the model reads at
            most 256 subword tokens anyway.
        max_message_bytes: size of one request message (enforced by gRPC).
        max_beam_size: largest `beam_size` accepted.
    """

    max_sentences: int = 256
    max_chars: int = 1000
    max_message_bytes: int = 4 * 1024 * 1024
    max_beam_size: int = 16

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


@dataclasses.dataclass(frozen=True)
class ParsedRequest:
    """A validated request: what the batcher and the response builder need."""

    sentences: tuple[str, ...]
    options: DecodeOptions
    with_alignment: bool
    request_id: str


@dataclasses.dataclass(frozen=True)
class UndecodableRequest:
    """Stands in for a request that protobuf could not parse (see `lenient_deserializer`)."""

    reason: str
    sentences: tuple = ()


def parse_request(request, limits: Limits, index: int | None = None) -> ParsedRequest:
    """Validates a `TranslateRequest` against `limits`.

    Args:
        request: a `TranslateRequest`, or an `UndecodableRequest`.
        limits: the server's limits.
        index: the request's position in a stream, named in error messages.

    Raises:
        InvalidArgument: malformed text or options.
        LimitExceeded: over a limit.
    """
    where = "" if index is None else f"request {index} of the stream: "
    if isinstance(request, UndecodableRequest):
        raise InvalidArgument(where + request.reason)
    if len(request.sentences) > limits.max_sentences:
        raise LimitExceeded(
            f"{where}too many sentences: at most {limits.max_sentences} per request. "
            f"Received: {len(request.sentences)} sentences; split the request.")
    for i, sentence in enumerate(request.sentences):
        if len(sentence) > limits.max_chars:
            raise LimitExceeded(
                f"{where}sentence {i} is too long: at most {limits.max_chars} characters. "
                f"Received: {len(sentence)} characters; split it into shorter sentences.")
    if len(request.request_id) > MAX_REQUEST_ID_CHARS:
        raise InvalidArgument(
            f"{where}request_id is too long: at most {MAX_REQUEST_ID_CHARS} characters. "
            f"Received: {len(request.request_id)} characters.")
    with_alignment = request.with_alignment if request.HasField("with_alignment") else True
    return ParsedRequest(tuple(request.sentences), _options(request, limits, where),
                         with_alignment, request.request_id)


def _options(request, limits: Limits, where: str) -> DecodeOptions:
    given = {name: getattr(request.options, name) for name in OPTION_FIELDS
             if request.HasField("options") and request.options.HasField(name)}
    try:
        options = DecodeOptions(**given)
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
    not UTF-8: which sentence and where), which the servicer answers with
    INVALID_ARGUMENT.
    """
    as_bytes = _bytes_twin(message_class)

    def deserialize(data: bytes):
        try:
            return message_class.FromString(data)
        except message.DecodeError:
            return UndecodableRequest(_explain(as_bytes, data))

    return deserialize


def _bytes_twin(message_class):
    """The same message type with `sentences` as `bytes`, in a private descriptor pool."""
    file_proto = descriptor_pb2.FileDescriptorProto()
    message_class.DESCRIPTOR.file.CopyToProto(file_proto)
    for message_proto in file_proto.message_type:
        if message_proto.name == message_class.DESCRIPTOR.name:
            for field in message_proto.field:
                if field.name == "sentences":
                    field.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_proto)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName(message_class.DESCRIPTOR.full_name))


def _explain(as_bytes, data: bytes) -> str:
    try:
        request = as_bytes.FromString(data)
    except message.DecodeError:
        return "the request is not a valid TranslateRequest message; check the client's proto."
    for i, raw in enumerate(request.sentences):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as error:
            return (f"sentence {i} is not valid UTF-8 (byte {raw[error.start]:#04x} at offset "
                    f"{error.start}); send UTF-8 text, e.g. decode your input with "
                    "errors='replace'.")
    return "the request has a string field that is not valid UTF-8; send UTF-8 text."
