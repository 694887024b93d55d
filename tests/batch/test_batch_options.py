"""`batch.options`: the flags `nmt batch` and the Beam pipeline share, with one set of defaults."""

import argparse

import pytest

from batch.engines import DEFAULT_BATCH_SIZE
from batch.options import (
    add_document_format_option,
    add_glossary_options,
    add_input_options,
    add_translation_options,
    input_format,
    read_glossary,
)
from batch.readers import InputFormat
from documents.glossary import GlossaryError
from nmt.options import decode_options
from nmt.types import DecodeOptions


def parse(argv):
    parser = argparse.ArgumentParser()
    add_input_options(parser)
    add_document_format_option(parser)
    add_translation_options(parser)
    return parser.parse_args(argv)


def test_defaults_are_those_of_the_job_types():
    args = parse([])
    assert input_format(args, "in.txt") == InputFormat()
    assert (args.batch_size, args.alignment) == (DEFAULT_BATCH_SIZE, False)
    assert decode_options(args) == DecodeOptions()


def test_input_format_follows_the_flags_else_the_file_name():
    args = parse(["--column", "2", "--max-chars", "80", "--beam-size", "2"])
    assert input_format(args, "in.tsv.gz") == InputFormat("tsv", column=2, max_chars=80)
    assert input_format(parse(["--input-format", "text"]), "in.tsv").kind == "text"
    assert decode_options(args).beam_size == 2


def test_bad_values_name_the_value():
    with pytest.raises(ValueError, match="column=-1"):
        input_format(parse(["--column", "-1"]), "in.tsv")


def test_document_format_defaults_to_sentences_and_takes_the_document_formats(capsys):
    assert parse([]).document_format is None
    assert parse(["--document-format", "xml"]).document_format == "xml"
    with pytest.raises(SystemExit):
        parse(["--document-format", "pdf"])
    assert "invalid choice: 'pdf'" in capsys.readouterr().err


def test_read_glossary_reads_tsv_and_csv_and_refuses_what_is_not_one(tmp_path):
    parser = argparse.ArgumentParser()
    add_glossary_options(parser)
    (tmp_path / "terms.tsv").write_text("flu\tgrippe\n", encoding="utf-8")
    (tmp_path / "terms.csv").write_text("source,target\n\"mask, face\",masque\n",
                                        encoding="utf-8")
    (tmp_path / "bad.tsv").write_text("flu\tgrippe\nmask\n", encoding="utf-8")

    assert read_glossary(parser.parse_args([])) is None
    tsv = read_glossary(parser.parse_args(["--glossary", str(tmp_path / "terms.tsv"),
                                           "--glossary-exact-case"]))
    assert [(e.source, e.target) for e in tsv.entries] == [("flu", "grippe")] and tsv.exact_case
    csv = read_glossary(parser.parse_args(["--glossary", "gs://b/terms.csv"]),
                        read_bytes=lambda path: (tmp_path / "terms.csv").read_bytes())
    assert [e.source for e in csv.entries] == ["mask, face"]
    with pytest.raises(GlossaryError, match=r"bad.tsv, line 2: expected 2 columns"):
        read_glossary(parser.parse_args(["--glossary", str(tmp_path / "bad.tsv")]))
    with pytest.raises(ValueError, match="--glossary-exact-case goes with --glossary FILE"):
        read_glossary(parser.parse_args(["--glossary-exact-case"]))
