"""`POST /v1/files:translate`: a file uploaded as multipart/form-data, and the answer.

The form: a `file` part (its filename is the file's name unless a `name` field
says otherwise) and any other field of `FileHeader` by its JSON or proto name:
scalars as text (`overwrite=true`, `format=po` or `FILE_FORMAT_PO`), message
fields as JSON (`options={"beamSize": 2}`, `glossary={"glossaryId": "medical"}`):

    curl -F file=@messages.pot -F review=false -OJ localhost:8080/v1/files:translate

The answer is the translated file: its media type, `Content-Disposition:
attachment` with its name (`FileSummary.name`), and the `FileSummary` as JSON
(the proto3 mapping, ASCII) in the `X-Nmt-Summary` header.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable

from aiohttp import BodyPartReader, hdrs, web
from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor

from documents.file_formats import FILE_FORMATS
from nmt_api import protos
from serving.calls import Call
from serving.errors import InvalidArgument, LimitExceeded
from serving.files import check_file_size
from serving.validation import Limits

pb2, _ = protos.load()

SUMMARY_HEADER = "X-Nmt-Summary"
FILE_FIELD = "file"
_FIELDS = {name: field for field in pb2.FileHeader.DESCRIPTOR.fields
           for name in (field.name, field.json_name)}
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")
_EXAMPLE = "curl -F file=@messages.pot -F overwrite=true <server>/v1/files:translate"


async def read_form(request: web.Request, limits: Limits) -> tuple[object, bytes]:
    """`(FileHeader, file bytes)` of the form; InvalidArgument says what is wrong.

    Raises:
        InvalidArgument: not multipart/form-data, no file, an unknown field or
            a bad value.
        LimitExceeded: a file over `max_file_bytes`, other fields over
            `max_message_bytes` in all.
    """
    if request.content_type != "multipart/form-data":
        raise InvalidArgument(
            "send the file as multipart/form-data: a `file` part, and options as form fields "
            f"(see /v1/openapi.json). Received: Content-Type {request.content_type!r}; e.g. "
            f"{_EXAMPLE}")
    fields, data, filename, other_bytes = {}, None, "", 0
    async for part in await request.multipart():
        if not isinstance(part, BodyPartReader) or not part.name:
            raise InvalidArgument("each part of the form must be a named field; nested "
                                  f"multipart is not read. e.g. {_EXAMPLE}")
        if part.name == FILE_FIELD:
            data = await _read_part(part, limits.max_file_bytes,
                                    lambda size: check_file_size(size, limits, exact=False))
            filename = part.filename
            continue
        value = await _read_part(part, limits.max_message_bytes - other_bytes, _fields_too_large)
        other_bytes += len(value)
        fields[part.name] = value
    if data is None:
        raise InvalidArgument(f"the form has no `{FILE_FIELD}` part: upload the file as it, "
                              f"e.g. {_EXAMPLE}")
    return file_header(fields, filename or ""), data


async def _read_part(part: BodyPartReader, limit: int, refuse: Callable[[int], None]) -> bytes:
    """The part's bytes; `refuse(size)` raises as soon as they pass `limit`."""
    data = bytearray()
    while chunk := await part.read_chunk():
        data += chunk
        if len(data) > limit:
            refuse(len(data))
    return bytes(data)


def _fields_too_large(size: int) -> None:
    raise LimitExceeded(
        "the form's fields other than the file are larger than this server's limit of "
        "--max-message-bytes in all; send a shorter glossary, or put it on the server and "
        "send its glossaryId.")


def file_header(fields: dict[str, bytes], filename: str):
    """The `FileHeader` of the form's fields (`name` from `filename` unless a field sets it)."""
    value = {}
    for key, raw in fields.items():
        field = _FIELDS.get(key)
        if field is None:
            raise InvalidArgument(
                f"unknown form field {key!r}: the fields are {FILE_FIELD}, "
                f"{', '.join(f.json_name for f in pb2.FileHeader.DESCRIPTOR.fields)}")
        value[field.json_name] = _field_value(field, _text(key, raw))
    value.setdefault("name", filename)
    try:
        return json_format.ParseDict(value, pb2.FileHeader())
    except json_format.ParseError as error:
        raise InvalidArgument(f"the form is not a valid FileHeader: {error}") from None


def _text(key: str, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidArgument(f"form field {key!r} is not UTF-8 (byte {error.start}); send "
                              "UTF-8 text") from None


def _field_value(field: FieldDescriptor, text: str):
    """A form field's text as the proto3 JSON value of `field`."""
    if field.type == FieldDescriptor.TYPE_BOOL:
        if text.strip().lower() in _TRUE + _FALSE:
            return text.strip().lower() in _TRUE
        raise InvalidArgument(f"form field {field.json_name!r} must be true or false. "
                              f"Received: {text[:40]!r}")
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise InvalidArgument(
                f"form field {field.json_name!r} must be a JSON {field.message_type.name}: "
                f"{error.msg} at column {error.colno}; e.g. options={{\"beamSize\": 2}}"
            ) from None
    if field.type == FieldDescriptor.TYPE_ENUM and text.strip().lower() in FILE_FORMATS:
        return f"FILE_FORMAT_{text.strip().upper()}"
    return text


async def file_response(answer: tuple, call: Call) -> web.Response:
    """The translated file, named, with its summary in `SUMMARY_HEADER`."""
    summary, data = answer
    as_json = json_format.MessageToDict(summary, always_print_fields_with_no_presence=True)
    return web.Response(body=data, headers={
        hdrs.CONTENT_TYPE: summary.media_type,
        hdrs.CONTENT_DISPOSITION: content_disposition(summary.name),
        SUMMARY_HEADER: json.dumps(as_json, ensure_ascii=True),
        "X-Request-Id": call.id})


def content_disposition(name: str) -> str:
    """`attachment` with `name` (RFC 6266: an ASCII fallback, and the UTF-8 name)."""
    fallback = "".join(c if c.isascii() and c.isprintable() and c not in '"\\' else "_"
                       for c in name)
    return (f'attachment; filename="{fallback}"; '
            f"filename*=UTF-8''{urllib.parse.quote(name, safe='')}")
