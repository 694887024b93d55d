"""The generated API reference says what the `.proto` file and the OpenAPI description say."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from nmt_api import protos
from serving.http_api import ENDPOINTS
from serving.openapi import proto_comments
from serving.validation import Limits

# The docs tools are scripts, not a package: imported as MkDocs does, with docs/ on the
# path (not from a conftest.py here: it would shadow tests/conftest.py's module name).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs"))
import gen_api  # noqa: E402


@pytest.fixture(scope="module")
def reference() -> str:
    return gen_api.render()


def test_every_rpc_message_field_and_enum_value_is_there(reference):
    # The compiled module, not the descriptor set the generator reads.
    pb2, _ = protos.load()
    service = pb2.DESCRIPTOR.services_by_name["TranslationService"]
    for method in service.methods:
        assert f"| `{method.name}` | " in reference, method.name
    for message in pb2.DESCRIPTOR.message_types_by_name.values():
        assert f"\n### {message.name}\n" in reference, message.name
        for field in message.fields:
            assert f"| `{field.name}` | `{field.json_name}` | {field.number} | " in reference, (
                f"{message.name}.{field.name}")
    for enum in pb2.DESCRIPTOR.enum_types_by_name.values():
        assert f"\n### {enum.name}\n" in reference
        for value in enum.values:
            assert f"| `{value.name}` | {value.number} | " in reference, value.name


def test_streaming_rpcs_are_marked(reference):
    row = next(line for line in reference.splitlines() if line.startswith("| `TranslateStream` |"))
    assert row.count("stream [`TranslateRequest`]") == 1
    assert row.count("stream [`TranslateResponse`]") == 1
    row = next(line for line in reference.splitlines() if line.startswith("| `Translate` |"))
    assert "stream" not in row.split("|")[2] + row.split("|")[3]


def test_comments_are_those_the_server_puts_into_its_openapi_description(reference):
    # serving.openapi reads the comments of messages and fields on its own.
    comments = proto_comments()
    assert comments, "protoc found no comments in the .proto file"
    for name, text in comments.items():
        assert gen_api.inline(text) in reference, name


def test_http_routes_come_from_the_openapi_description(reference):
    for endpoint in ENDPOINTS:
        assert f"\n### {endpoint.method} {endpoint.path}\n" in reference
        assert f"| `{endpoint.rpc}` |" in reference
    for path in ("/healthz", "/readyz"):
        assert f"\n### GET {path}\n" in reference
    limits = Limits()
    assert (f"| `TranslateRequest.sentences` | at most {limits.max_sentences} entries, "
            f"each at most {limits.max_chars} characters |") in reference
    assert f"| `DecodeOptions.beamSize` | at least 1, at most {limits.max_beam_size} |" in reference


def test_type_links_point_to_sections_that_exist(reference):
    anchors = {gen_api._anchor(line.lstrip("#").strip().replace("`", ""))
               for line in reference.splitlines() if line.startswith("#")}
    links = [part.split(")")[0] for part in reference.split("](#")[1:]]
    assert links
    assert set(links) <= anchors, set(links) - anchors


@pytest.mark.parametrize(("text", "expected"), [
    ("a | b", "a \\| b"),
    ("`a | b`", "`a | b`"),
    ("((5 + |Y|) / 6) ** alpha", "((5 + \\|Y\\|) / 6) \\*\\* alpha"),
    ("layout `<base>/<version>/`, and <b>", "layout `<base>/<version>/`, and &lt;b&gt;"),
    ("beam_size and _private_", "beam_size and \\_private\\_"),
    ("À « guillemets »", "À « guillemets »"),
    ("", ""),
])
def test_inline_escapes_outside_code_spans_only(text, expected):
    assert gen_api.inline(text) == expected


def test_two_headings_with_one_anchor_are_refused():
    with pytest.raises(ValueError, match="'Get Model' and 'get-model' share the anchor #get-model"):
        gen_api.check_anchors(["## Get Model", "text", "### get-model"])
    gen_api.check_anchors(["## TranslateRequest", "## Translate"])


def test_a_proto_with_nesting_maps_enums_and_streams(tmp_path):
    source = tmp_path / "toy" / "v1" / "toy.proto"
    source.parent.mkdir(parents=True)
    source.write_text(textwrap.dedent("""\
        syntax = "proto3";
        package toy.v1;

        // Echoes.
        service Echo {
          // Says it back.
          //
          // Second paragraph.
          rpc Say(stream Outer) returns (Outer.Inner);
        }

        // An outer message.
        message Outer {
          // An inner one.
          message Inner {
            repeated string words = 1;  // Trailing comment.
          }
          map<string, double> scores = 1;
          optional uint32 count = 2;
          Colour colour = 3;
          Inner inner = 4;
        }

        enum Colour {
          COLOUR_UNSPECIFIED = 0;
          // Red | not blue.
          COLOUR_RED = 1;
        }
        """), encoding="utf-8")
    file = gen_api.proto_descriptor(tmp_path, "toy/v1/toy.proto")
    text = "\n".join(gen_api.render_grpc(file))
    assert "## gRPC service `toy.v1.Echo`" in text
    assert ("| `Say` | stream [`Outer`](#outer) | [`Outer.Inner`](#outerinner) | "
            "Says it back. Second paragraph. |") in text
    assert "\n### Outer\n\nAn outer message.\n" in text
    assert "\n### Outer.Inner\n\nAn inner one.\n" in text
    assert "| `words` | `words` | 1 | repeated `string` | Trailing comment. |" in text
    assert "| `scores` | `scores` | 1 | `map<string, double>` |  |" in text
    assert "| `count` | `count` | 2 | optional `uint32` |  |" in text
    assert "| `colour` | `colour` | 3 | [`Colour`](#colour) |  |" in text
    assert "| `COLOUR_RED` | 1 | Red \\| not blue. |" in text
    assert "ScoresEntry" not in text  # a map's entry message is not a message of the API


def test_protoc_errors_name_the_file(tmp_path):
    (tmp_path / "bad.proto").write_text('syntax = "proto3";\nmessage {', encoding="utf-8")
    with pytest.raises(RuntimeError, match="protoc failed on .*bad.proto"):
        gen_api.proto_descriptor(tmp_path, "bad.proto")


def test_main_writes_the_reference(tmp_path, reference):
    out = tmp_path / "api.md"
    assert gen_api.main(["--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == reference
