"""`nmt batch IN_DIR OUT_DIR` (batch/file_tree.py): a tree of files translated whole, resumable.

The engine upper-cases (tests/batch/batch_fakes.py), so a translated text reads as its source.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from batch_fakes import FakeEngine

from batch.file_tree import JOB_FILE, TreeConfig, find_files, translate_tree
from documents.file_formats import FileSettings
from documents.glossary import Glossary

PO = ('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
      'msgid "Open the file"\nmsgstr ""\n')
MARKDOWN = "# Saving\n\nClick *Save* to keep your changes.\n\n    code stays\n"
SRT = "1\n00:00:01,000 --> 00:00:02,000\nHello there.\n"


def tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return root


@pytest.fixture
def source(tmp_path):
    return tree(tmp_path / "in", {"app/messages.pot": PO, "docs/guide.md": MARKDOWN,
                                  "video/talk.srt": SRT, "notes.txt": "not a file format",
                                  ".git/config.md": "# hidden", "docs/.draft.md": "# hidden"})


def test_files_are_found_by_extension_and_hidden_ones_left_out(source):
    files, others = find_files(source)
    assert files == [("app/messages.pot", "po"), ("docs/guide.md", "markdown"),
                     ("video/talk.srt", "srt")]
    assert others == 1


def test_each_file_is_translated_at_its_place_in_its_format(source, tmp_path):
    out = tmp_path / "out"
    report = translate_tree(TreeConfig(source, out), FakeEngine())
    assert [path for path, _ in report.translated] == ["app/messages.pot", "docs/guide.md",
                                                       "video/talk.srt"]
    po = (out / "app/messages.pot").read_text()
    assert 'msgstr "OPEN THE FILE"' in po and "#, fuzzy" in po
    markdown = (out / "docs/guide.md").read_text()
    assert "# SAVING" in markdown and "*SAVE*" in markdown and "    code stays" in markdown
    assert "00:00:01,000 --> 00:00:02,000\nHELLO THERE." in (out / "video/talk.srt").read_text()
    assert not (out / "notes.txt").exists() and not (out / ".git").exists()
    assert json.loads((out / JOB_FILE).read_text())["engine"] == {"engine": "fake"}


def test_a_bad_file_is_reported_and_the_others_are_written(source, tmp_path):
    tree(source, {"app/broken.po": 'msgid "unterminated\n', "docs/latin1.md": "Café".encode(
        "latin-1")})
    out = tmp_path / "out"
    report = translate_tree(TreeConfig(source, out), FakeEngine())
    failed = dict(report.errors)
    assert set(failed) == {"app/broken.po", "docs/latin1.md"}
    assert "broken.po" in failed["app/broken.po"]
    assert not (out / "app/broken.po").exists() and not (out / "docs/latin1.md").exists()
    assert (out / "app/messages.pot").exists() and (out / "video/talk.srt").exists()


def test_a_rejected_sentence_leaves_its_file_out_only(source, tmp_path):
    report = translate_tree(TreeConfig(source, tmp_path / "out"), FakeEngine(reject="Hello"))
    assert [path for path, _ in report.errors] == ["video/talk.srt"]
    assert len(report.translated) == 2


def test_an_engine_failure_stops_the_job_and_resume_finishes_it(source, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="engine crashed"):
        translate_tree(TreeConfig(source, out), FakeEngine(fail_on_call=2))
    assert (out / "app/messages.pot").exists() and not (out / "docs/guide.md").exists()
    engine = FakeEngine()
    report = translate_tree(TreeConfig(source, out, resume=True), engine)
    assert report.skipped == ["app/messages.pot"]
    assert [path for path, _ in report.translated] == ["docs/guide.md", "video/talk.srt"]
    assert not any("Open the file" in s for call in engine.calls for s in call)


def test_a_written_directory_is_not_overwritten_without_resume(source, tmp_path):
    out = tmp_path / "out"
    translate_tree(TreeConfig(source, out), FakeEngine())
    with pytest.raises(ValueError, match="already holds translations.*--resume"):
        translate_tree(TreeConfig(source, out), FakeEngine())


def test_resume_refuses_a_job_with_other_settings(source, tmp_path):
    out = tmp_path / "out"
    translate_tree(TreeConfig(source, out), FakeEngine())
    changed = TreeConfig(source, out, FileSettings(review=False), resume=True)
    with pytest.raises(ValueError, match="cannot resume: settings changed"):
        translate_tree(changed, FakeEngine())


def test_the_glossary_is_written_into_every_file(source, tmp_path):
    glossary = Glossary.parse(b"file\tfichier\n", "tsv", "terms.tsv")
    out = tmp_path / "out"
    translate_tree(TreeConfig(source, out, glossary=glossary), FakeEngine())
    assert 'msgstr "OPEN THE fichier"' in (out / "app/messages.pot").read_text()


@pytest.mark.parametrize("output", ["in", "in/sub", "."])
def test_overlapping_directories_are_refused(source, tmp_path, monkeypatch, output):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="overlap"):
        TreeConfig(Path("in"), Path(output))


def test_a_missing_input_directory_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no directory"):
        TreeConfig(tmp_path / "nowhere", tmp_path / "out")


def _args(source, out, **given):
    values = {"input": source, "output": out, "format": None, "document_format": None,
              "input_format": None, "alignment": False, "overwrite": False, "fuzzy": True,
              "merge_cues": True, "placeholders": True, "batch_size": 32, "glossary": None,
              "glossary_exact_case": False, "resume": False, "no_progress": True}
    return argparse.Namespace(**{**values, **given})


def test_the_command_sums_up_and_fails_when_a_file_is_left_out(source, tmp_path, capsys):
    from batch.file_tree_cli import run_file_tree

    tree(source, {"app/broken.po": 'msgid "unterminated\n'})
    status = run_file_tree(_args(source, tmp_path / "out"), lambda args: FakeEngine())
    err = capsys.readouterr().err
    assert status == 1
    assert "app/broken.po: not translated:" in err
    assert "3 files translated, 1 with errors, 1 of other formats left out" in err


def test_line_file_flags_are_refused_for_a_directory(source, tmp_path):
    from batch.file_tree_cli import run_file_tree

    with pytest.raises(ValueError, match="--alignment is for a file of lines"):
        run_file_tree(_args(source, tmp_path / "out", alignment=True), lambda a: FakeEngine())
