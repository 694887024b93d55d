"""`bench/repetitions.py`: translations that write a word or a phrase three times in a row."""

from bench.repetitions import loops, main, repeated_unit


def test_a_unit_of_one_to_four_words_three_times_in_a_row():
    assert repeated_unit("à la fin de l'année de l'année de l'année .") == "de l'année"
    assert repeated_unit("(IAEA) (IAEA) (IAEA)") == "(IAEA)"
    assert repeated_unit("non, non, non !") == "non"
    assert repeated_unit("a b c d a b c d a b c d") == "a b c d"
    assert repeated_unit("de l'année de l'année") is None  # twice is allowed
    assert repeated_unit("a b c d e a b c d e a b c d e") is None  # five words: too long
    assert repeated_unit("") is None


def test_only_loops_the_source_does_not_have_count():
    sources = ["no, no, no.", "Yes, yes.", "The end of the year."]
    outputs = ["non, non, non.", "oui, oui, oui.", "La fin de l'année de l'année de l'année."]
    assert loops(sources, outputs) == [(1, "oui"), (2, "de l'année")]


def test_main_translates_with_each_export(tmp_path, tiny_model_dir, capsys):
    lines = tmp_path / "news.en"
    lines.write_text("I love you.\nThe cat is black.\nHello there.\n", encoding="utf-8")
    assert main([str(tiny_model_dir), "--sentences", str(lines), "--limit", "2",
                 "--label", "tiny"]) == 0
    out = capsys.readouterr().out
    assert f"{lines}: 2 lines" in out
    assert "  tiny: " in out and " of 2 translations repeat a unit three times in a row" in out
