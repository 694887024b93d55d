"""`bench/side_by_side.py`: a column per export holding that export's own translations, its
labels, and `|` escaped in every cell, on the tiny model."""

import json
import re

import pytest

from bench import side_by_side
from nmt.inference.export import export_saved_model
from nmt.inference.translator import Translator
from tests.conftest import make_tiny_module

LINES = ["I like coffee.", "Yes | No", "Where is the station?"]


def _cells(row: str) -> list[str]:
    """The cells of a Markdown table row, split at its unescaped `|`."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]]


def _table(out: str) -> list[list[str]]:
    return [_cells(line) for line in out.splitlines() if line.startswith("|")]


@pytest.fixture
def sentences(tmp_path):
    path = tmp_path / "first_look.en"
    path.write_text("".join(f"{line}\n" for line in LINES), encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_column_per_export_of_its_translations_at_its_default_decoding(
        tiny_model_dir, tiny_tokenizers, sentences, tmp_path, capsys):
    student = make_tiny_module(tiny_tokenizers)
    student.metadata["recommended_decoding"] = {"beam_size": 1}
    export_saved_model(student, tmp_path / "student", 1)
    found = tmp_path / "side.json"

    assert side_by_side.main([str(tiny_model_dir), str(tmp_path / "student"), "--sentences",
                              str(sentences), "--precision", "float32",
                              "--json", str(found)]) == 0

    out = capsys.readouterr().out
    assert out.startswith("machine: ") and "bfloat16 units: " in out
    assert ", beam 5\n" in out and ", beam 1\n" in out
    header, rule, *rows = _table(out)
    assert header == ["English", "tiny/1", "student/1"] and rule == ["---"] * 3
    assert [row[0] for row in rows] == ["I like coffee.", "Yes \\| No", "Where is the station?"]
    teacher = [t.text for t in Translator.load(tiny_model_dir, "float32").translate(LINES)]
    greedy = [t.text for t in Translator.load(tmp_path / "student", "float32").translate(
        LINES, beam_size=1)]
    assert [row[1:] for row in rows] == [
        [side_by_side.escape(a).strip(), side_by_side.escape(b).strip()]
        for a, b in zip(teacher, greedy, strict=True)]
    saved = json.loads(found.read_text(encoding="utf-8"))
    assert [export["options"]["beam_size"] for export in saved["exports"]] == [5, 1]
    assert saved["rows"][1] == {"english": "Yes | No", "translations": [teacher[1], greedy[1]]}


def test_labels_and_the_beam_size_apply_to_every_export(tiny_model_dir, sentences, capsys):
    assert side_by_side.main([str(tiny_model_dir), str(tiny_model_dir), "--sentences",
                              str(sentences), "--label", "ship|it", "--label", "greedy",
                              "--beam-size", "1", "--precision", "float32"]) == 0

    header, _, *rows = _table(capsys.readouterr().out)
    assert header == ["English", "ship\\|it", "greedy"]
    greedy = Translator.load(tiny_model_dir, "float32").translate(LINES, beam_size=1)
    for row, translation in zip(rows, greedy, strict=True):
        assert row[1] == row[2] == side_by_side.escape(translation.text).strip()


def test_every_pipe_is_escaped_so_each_row_keeps_its_columns():
    table = side_by_side.table(["a | b", "c"], ["x/1", "y|2"], [["1|2", "3"], ["", "|"]])

    assert table.splitlines() == [
        "| English | x/1 | y\\|2 |",
        "|---|---|---|",
        "| a \\| b | 1\\|2 |  |",
        "| c | 3 | \\| |",
    ]
    assert all(len(_cells(line)) == 3 for line in table.splitlines())


def test_labels_must_name_every_export_or_none(tiny_model_dir, capsys):
    with pytest.raises(SystemExit):
        side_by_side.main([str(tiny_model_dir), str(tiny_model_dir), "--label", "only-one"])
    assert "give --label once per export, or not at all" in capsys.readouterr().err
