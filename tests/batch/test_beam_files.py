"""The Beam pipeline over a directory of files (batch/beam_files.py), on the DirectRunner."""

from __future__ import annotations

import json
import re
from pathlib import Path

import apache_beam as beam
import pytest
from batch_fakes import FakeEngine

from batch.beam_files import (
    REPORT_NAME,
    TranslateFileFn,
    build_file_pipeline,
    file_format,
    main,
    relative_to,
)
from documents.file_formats import FileSettings
from documents.glossary import Glossary

PO = 'msgid ""\nmsgstr ""\n\nmsgid "Open the file"\nmsgstr ""\n'
FILES = {"app/messages.po": PO, "docs/guide.md": "# Saving\n\nClick *Save* now.\n",
         "talk.vtt": "WEBVTT\n\n00:01.000 --> 00:02.000\nHello there.\n",
         "notes.txt": "left out", ".cache/x.md": "# hidden",
         "app/broken.po": 'msgid "unterminated\n'}


@pytest.fixture
def source(tmp_path):
    for relative, text in FILES.items():
        path = tmp_path / "in" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "in"


def report(out: Path) -> dict[str, dict]:
    records = [json.loads(line) for shard in out.glob(f"{REPORT_NAME}-*.jsonl")
               for line in shard.read_text().splitlines()]
    return {record["path"]: record for record in records}


def run(source: Path, out: Path, **kwargs) -> dict[str, dict]:
    translate_fn = TranslateFileFn(FakeEngine, kwargs.pop("settings", FileSettings()),
                                   kwargs.pop("glossary", None), str(source), str(out), **kwargs)
    with beam.Pipeline("DirectRunner") as pipeline:
        build_file_pipeline(pipeline, str(source), str(out), translate_fn)
    return report(out)


@pytest.mark.parametrize("relative, expected", [
    ("a/b.po", "po"), ("x.POT", "po"), ("t.srt", "srt"), ("d.docx", "docx"),
    ("notes.txt", None), (".git/x.md", None), ("a/.draft.md", None)])
def test_file_format_by_extension_hidden_ones_left_out(relative, expected):
    assert file_format(relative) == expected


def test_relative_to_keeps_the_path_below_the_root():
    assert relative_to("gs://b/docs/a/x.md", "gs://b/docs/") == "a/x.md"
    assert relative_to("/tmp/in/x.md", "/tmp/in") == "x.md"
    with pytest.raises(ValueError, match="not under"):
        relative_to("/tmp/other/x.md", "/tmp/in")


def test_every_file_is_translated_at_its_place_and_reported(source, tmp_path):
    out = tmp_path / "out"
    records = run(source, out)
    assert set(records) == {"app/messages.po", "docs/guide.md", "talk.vtt", "app/broken.po"}
    assert 'msgstr "OPEN THE FILE"' in (out / "app/messages.po").read_text()
    assert (out / "docs/guide.md").read_text() == "# SAVING\n\nCLICK *SAVE* NOW.\n"
    assert "HELLO THERE." in (out / "talk.vtt").read_text()
    assert records["docs/guide.md"]["counts"]["sentences"] == 2
    assert records["app/broken.po"]["error"] and not (out / "app/broken.po").exists()
    assert not (out / "notes.txt").exists() and not (out / ".cache").exists()
    assert not list(out.rglob("*.tmp"))


def test_skip_existing_leaves_translated_files_alone(source, tmp_path):
    out = tmp_path / "out"
    (out / "docs").mkdir(parents=True)
    (out / "docs/guide.md").write_text("done before\n")
    records = run(source, out, skip_existing=True)
    assert records["docs/guide.md"]["summary"] == "already translated"
    assert (out / "docs/guide.md").read_text() == "done before\n"
    assert (out / "talk.vtt").exists()


def test_the_glossary_reaches_every_file(source, tmp_path):
    glossary = Glossary.parse(b"file\tfichier\n", "tsv", "terms.tsv")
    out = tmp_path / "out"
    run(source, out, glossary=glossary)
    assert 'msgstr "OPEN THE fichier"' in (out / "app/messages.po").read_text()


def test_main_equals_nmt_batch_on_a_directory(source, tmp_path, tiny_model_dir):
    from nmt_cli.main import main as nmt_main

    (source / "app/broken.po").unlink()
    common = ["--model", str(tiny_model_dir), "--beam-size", "1"]
    assert nmt_main(["batch", str(source), str(tmp_path / "batch"), "--no-progress",
                     *common]) == 0
    assert main(["--input", str(source), "--output", str(tmp_path / "beam"), *common,
                 "--runner", "DirectRunner"]) == 0
    assert b"PO-Revision-Date: " in (tmp_path / "batch" / "app/messages.po").read_bytes()
    for relative in ("app/messages.po", "docs/guide.md", "talk.vtt"):
        assert without_revision_date((tmp_path / "beam" / relative).read_bytes()) == \
            without_revision_date((tmp_path / "batch" / relative).read_bytes()), relative


def without_revision_date(data: bytes) -> bytes:
    """A file without a PO header's revision time: two runs may fall in two minutes."""
    return re.sub(rb'"PO-Revision-Date: [^"]*\\n"\n', b"", data)
