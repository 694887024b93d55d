"""`bench/head_cost.py`: the head's parts timed on an export with a head and a reader."""

import pytest

from bench import head_cost
from nmt.inference.export import export_saved_model
from tests.conftest import make_tiny_module


def test_times_the_translation_the_head_and_its_reader(tiny_tokenizers, tmp_path, capsys):
    module = make_tiny_module(tiny_tokenizers, alignment_head="general",
                              alignment_head_context=4)
    export_saved_model(module, tmp_path / "headed", 1)
    sentences = tmp_path / "mix.en"
    sentences.write_text("I like coffee.\nWhere is the station?\nThank you.\n" * 23)  # 2 batches
    assert head_cost.main(["--model", str(tmp_path / "headed"), "--sentences", str(sentences),
                           "--beams", "1,3", "--rounds", "1", "--precision", "float32"]) == 0
    out = capsys.readouterr().out
    assert "float32 path (asked for); 69 lines" in out
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith("| 1 ")
            or line.startswith("| 3 ")]
    assert len(rows) == 2
    for row in rows:
        translate, head, reader = (float(cell) for cell in row[1:4])
        assert translate > 0 and head > 0 and reader > 0
        assert row[4].endswith("% |")


def test_an_export_without_a_head_is_refused(tiny_model_dir, tmp_path):
    sentences = tmp_path / "mix.en"
    sentences.write_text("Thank you.\n")
    with pytest.raises(SystemExit, match="has no alignment head"):
        head_cost.main(["--model", str(tiny_model_dir), "--sentences", str(sentences),
                        "--precision", "float32"])
