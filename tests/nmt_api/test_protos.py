"""The generated modules: built from proto/, importable, and rebuilt when stale."""

import dataclasses
import os
import re

from nmt_api import protos


def test_generate_builds_the_three_modules_in_a_package(tmp_path):
    files = protos.generate(tmp_path)

    assert [f.name for f in files] == list(protos.GENERATED)
    assert all(f.stat().st_size > 0 for f in files)
    assert (tmp_path / "nmt_api" / "v1" / "__init__.py").exists()
    # The gRPC module imports its messages by the .proto file's path.
    assert "from nmt_api.v1 import translation_pb2" in files[1].read_text()
    assert not protos.is_stale(tmp_path)


def test_is_stale_when_missing_or_older_than_the_proto(tmp_path):
    assert protos.is_stale(tmp_path)
    files = protos.generate(tmp_path)
    source_time = (protos.PROTO_ROOT / protos.PROTO_FILE).stat().st_mtime
    os.utime(files[0], (source_time - 60, source_time - 60))

    assert protos.is_stale(tmp_path)


def test_the_service_has_its_six_rpcs():
    pb2, pb2_grpc = protos.load()

    assert pb2.DESCRIPTOR.package == "nmt.v1"
    assert pb2.__name__ == "nmt_api.v1.translation_pb2"
    service = pb2.DESCRIPTOR.services_by_name["TranslationService"]
    assert service.full_name == protos.SERVICE_NAME == "nmt.v1.TranslationService"
    assert {m.name for m in service.methods} == {
        "Translate", "TranslateStream", "Align", "GetModelInfo", "ListGlossaries",
        "TranslateFile"}
    align = service.methods_by_name["Align"]
    assert (align.input_type.name, align.output_type.name) == ("AlignRequest", "AlignResponse")
    assert align.output_type.fields_by_name["alignments"].message_type.name == "Translation"
    stream = service.methods_by_name["TranslateStream"]
    assert stream.client_streaming and stream.server_streaming
    files = service.methods_by_name["TranslateFile"]
    assert files.client_streaming and files.server_streaming
    assert hasattr(pb2_grpc, "TranslationServiceStub")


def test_decode_options_mirror_nmt_types():
    from nmt.types import DecodeOptions

    pb2, _ = protos.load()
    proto_fields = {f.name for f in pb2.DecodeOptions.DESCRIPTOR.fields}
    assert proto_fields == {f.name for f in dataclasses.fields(DecodeOptions)}


def bracketed_defaults(proto_text: str, message_name: str) -> dict[str, str]:
    """`{field: text in brackets}` of one message: the `[...]` ending each field's comment."""
    body = re.search(rf"\nmessage {message_name} {{\n(.*?)\n}}", proto_text, re.S).group(1)
    defaults, comment = {}, ""
    for line in body.splitlines():
        line = line.strip()
        if line.startswith("//"):
            comment += " " + line.removeprefix("//").strip()
            continue
        field = re.match(r"(?:optional |repeated )?\w+ (\w+) = \d+;", line)
        if field:
            bracket = re.search(r"\[([^\]]*)\]$", comment.strip())
            defaults[field.group(1)] = bracket.group(1) if bracket else None
            comment = ""
    return defaults


def test_proto_comments_state_the_decode_options_defaults():
    """Each DecodeOptions field's `[default]` in the .proto is `nmt.types.DecodeOptions()`'s."""
    from nmt.types import DecodeOptions

    text = (protos.PROTO_ROOT / protos.PROTO_FILE).read_text(encoding="utf-8")
    stated = bracketed_defaults(text, "DecodeOptions")
    default = DecodeOptions()
    assert set(stated) == {f.name for f in dataclasses.fields(DecodeOptions)}
    for name, text_value in stated.items():
        value = getattr(default, name)
        assert text_value is not None, f"the comment of {name} states no [default]"
        parsed = {"true": True, "false": False}.get(text_value) if isinstance(value, bool) \
            else type(value)(text_value)
        assert parsed == value, f"{name}: the proto says [{text_value}], DecodeOptions() {value!r}"


def test_the_file_formats_are_those_of_the_documents_library():
    from documents.file_formats import FILE_FORMATS

    pb2, _ = protos.load()
    names = [name for name, value in pb2.FileFormat.items() if value]
    assert [n.removeprefix("FILE_FORMAT_").lower() for n in names] == list(FILE_FORMATS)
    assert pb2.FileFormat.Name(0) == "FILE_FORMAT_UNSPECIFIED"
