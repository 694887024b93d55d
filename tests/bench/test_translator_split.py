"""`bench/translator_split.py`: a translator's time split between its signature and the rest."""

from bench import translator_split


def test_splits_each_models_time_between_the_signature_and_the_rest(tiny_model_dir, tmp_path,
                                                                   capsys):
    sentences = tmp_path / "mix.en"
    sentences.write_text("I like coffee.\nWhere is the station?\nThank you.\n" * 23)  # 2 batches
    assert translator_split.main([str(tiny_model_dir), str(tiny_model_dir), "--sentences",
                                  str(sentences), "--beams", "1,3", "--rounds", "2"]) == 0
    out = capsys.readouterr().out
    assert "69 lines of" in out and "batches of 64, file order" in out
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith("| 1 ")
            or line.startswith("| 2 ")]
    assert len(rows) == 2 * 2 * 2  # rounds x models x beams
    assert {row[4] for row in rows} == {"1", "3"}
    for row in rows:
        total, inside, rest = (float(cell.strip(" |")) for cell in row[5:8])
        assert 0 < inside <= total and abs(total - inside - rest) < 0.011


def test_the_signature_is_restored_after_timing(tiny_model_dir):
    from nmt.inference.translator import Translator

    translator = Translator.load(tiny_model_dir)
    signature = translator._translate
    total, inside = translator_split.time_translations(translator, [["Thank you."]], 1)
    assert translator._translate is signature and 0 < inside <= total
