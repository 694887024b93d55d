"""`bench/distill_table.py`: every export x decoding gets its BLEU, AER and speed, and the
row of each model's default decoding is marked."""

import json

import pytest

from bench import distill_table
from nmt.inference.export import export_saved_model
from tests.conftest import make_tiny_module


@pytest.mark.slow
def test_table_of_a_teacher_and_a_greedy_student(tiny_model_dir, tiny_tokenizers,
                                                 tiny_pairs_path, tmp_path, capsys):
    student = make_tiny_module(tiny_tokenizers)
    student.metadata["recommended_decoding"] = {"beam_size": 1}
    export_saved_model(student, tmp_path / "student", 1)
    (tmp_path / "src.txt").write_text("I like coffee .\nWe eat bread .\n")
    (tmp_path / "tgt.txt").write_text("J' aime le café .\nNous mangeons du pain .\n")
    (tmp_path / "gold.txt").write_text("0-0 1-1 2-3 3-4\n0-0 1-1 2-2 2p3 3-4\n")
    sentences = tmp_path / "mix.en"
    sentences.write_text("I like coffee.\nWhere is the station?\nThank you.\n")

    assert distill_table.main([
        str(tiny_model_dir), str(tmp_path / "student"), "--names", "teacher,student",
        "--beams", "1,5", "--batch", "2", "--precision", "float32",
        "--test", str(tiny_pairs_path), "--test-limit", "6",
        "--pharaoh", str(tmp_path / "src.txt"), str(tmp_path / "tgt.txt"),
        str(tmp_path / "gold.txt"), "--sentences", str(sentences),
        "--json", str(tmp_path / "table.json")]) == 0

    out = capsys.readouterr().out
    assert out.startswith("machine: ") and "bfloat16 units: " in out
    rows = [line for line in out.splitlines() if line.startswith(("| teacher", "| student"))]
    assert [row.split(" | ")[2] for row in rows] == [
        "greedy", "beam 5 (default)", "greedy (default)", "beam 5"]
    results = json.loads((tmp_path / "table.json").read_text())["results"]
    for result in results:
        assert 0 <= result["alibi_aer"] <= 1
        for row in result["rows"]:
            assert 0 <= row["test_bleu"] <= 100
            assert row["file_sentences_per_s"] > 0 and row["sorted_sentences_per_s"] > 0
    assert results[1]["default_options"]["beam_size"] == 1
