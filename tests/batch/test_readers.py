import gzip
import io

import pytest

from batch.readers import (
    InputFormat,
    SourceLine,
    detect_input_format,
    numbered_lines,
    open_input,
    parse_line,
)

TEXT = InputFormat("text")


@pytest.mark.parametrize("name, expected", [
    ("in.txt", "text"), ("in", "text"), ("in.txt.gz", "text"), ("in.tsv", "tsv"),
    ("in.TSV.gz", "tsv"), ("in.jsonl", "jsonl"), ("in.ndjson.gz", "jsonl"), ("in.json", "jsonl"),
])
def test_detect_input_format_by_extension(name, expected):
    assert detect_input_format(name) == expected


def test_numbered_lines_strips_endings_and_bom_and_skips():
    data = b"\xef\xbb\xbffirst\r\nsecond\n\nlast without newline"
    assert list(numbered_lines(io.BytesIO(data))) == [
        (1, b"first"), (2, b"second"), (3, b""), (4, b"last without newline"),
    ]
    skipped = list(numbered_lines(io.BytesIO(data), skip=2))
    assert skipped == [(3, b""), (4, b"last without newline")]


def test_open_input_decompresses_gzip(tmp_path):
    path = tmp_path / "in.txt.gz"
    path.write_bytes(gzip.compress(b"un\ndeux\n"))
    with open_input(path) as stream:
        assert list(numbered_lines(stream)) == [(1, b"un"), (2, b"deux")]


def test_text_line_keeps_non_ascii():
    line = "L'été « chaud » — d’accord"
    assert parse_line(7, line.encode(), TEXT) == SourceLine(7, line, None)


@pytest.mark.parametrize("raw, error", [
    (b"", "empty line"),
    (b"  \t ", "empty line"),
    (b"\x00\x01", "empty line"),
    ("\u200b".encode(), "empty line"),  # zero-width space (format character)
    (b"x" * 11, "too long: 11 characters, at most 10 are translated"),
])
def test_text_line_errors(raw, error):
    assert parse_line(1, raw, InputFormat("text", max_chars=10)).error == error


def test_undecodable_line_is_an_error_with_a_readable_source():
    source = parse_line(3, b"caf\xe9 au lait", TEXT)
    assert source.error == "undecodable: not valid UTF-8 at byte 3"
    assert source.text == "caf\ufffd au lait"


def test_tsv_column():
    fmt = InputFormat("tsv", column=1)
    assert parse_line(1, b"id1\tHello there.\tBonjour.", fmt).text == "Hello there."
    missing = parse_line(2, b"only one column", fmt)
    assert missing.error == "no column 1: the line has 1 column(s)"
    assert parse_line(3, b"id3\t", fmt).error == "empty line"


@pytest.mark.parametrize("raw, text, error", [
    (b'{"text": "Good morning.", "id": 4}', "Good morning.", None),
    (b'{"text": "\\u00e9t\\u00e9"}', "été", None),
    (b'{"id": 4}', '{"id": 4}', "no field 'text' in the JSON object"),
    (b'["text"]', '["text"]', "no field 'text' in the JSON object"),
    (b'{"text": 5}', '{"text": 5}', "field 'text' is int, not a string"),
    (b'{"text": ', '{"text": ', "invalid JSON: Expecting value at column 10"),
    (b'{"text": "   "}', "   ", "empty line"),
    (b"", "", "empty line"),
])
def test_jsonl_field(raw, text, error):
    source = parse_line(1, raw, InputFormat("jsonl"))
    assert (source.text, source.error) == (text, error)


def test_jsonl_custom_field():
    fmt = InputFormat("jsonl", field="en")
    assert parse_line(1, b'{"en": "Hi.", "text": "x"}', fmt).text == "Hi."


@pytest.mark.parametrize("kwargs, message", [
    ({"kind": "csv"}, "Received: 'csv'"),
    ({"column": -1}, "column=-1"),
    ({"field": ""}, "field=''"),
    ({"max_chars": 0}, "max_chars=0"),
])
def test_input_format_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        InputFormat(**kwargs)
