"""`bench/subtitles.py`: a subtitle file made of held-out lines, translated both ways, scored."""

import pytest

from bench.subtitles import Memo, cue_words, main, rejoined, run, subtitle_file, wrapped
from documents.sentences import TextLinks
from documents.subtitles import read_subtitles

LINES = ["The cat sleeps.", "Tom & Jerry walked to the harbour every single morning of the "
         "long summer", "and nobody <3 saw them there again, not even once."]


def shouting(sentences):
    return [TextLinks(s.upper(), tuple((i, i) for i in range(len(s.split()))))
            for s in sentences]


def test_a_line_goes_over_one_cue_per_eight_words_at_most_three():
    assert [len(cue_words(["w"] * n)) for n in (1, 8, 9, 16, 17, 40)] == [1, 1, 2, 2, 3, 3]
    assert cue_words("a b c d e f g h i j".split()) == [list("abcde"), list("fghij")]


def test_a_long_cue_is_wrapped_at_the_space_nearest_its_middle():
    assert wrapped("short line".split()) == ["short line"]
    assert wrapped("a somewhat longer subtitle line that needs two rows".split()) == [
        "a somewhat longer subtitle", "line that needs two rows"]


@pytest.mark.parametrize("format", ["srt", "vtt"])
def test_the_file_reads_back_into_its_lines(format):
    data, counts = subtitle_file(LINES, format)

    assert counts == [1, 2, 2]
    assert len(read_subtitles(data, format).cues) == 5
    assert rejoined(data, format, counts) == LINES  # WebVTT escapes & and < and unescapes them


def test_both_ways_score_the_same_for_a_word_for_word_translator():
    data, counts = subtitle_file(LINES)
    references = [line.upper() for line in LINES]

    merged = run(data, "srt", counts, references, Memo(shouting), True, 64)
    cue_by_cue = run(data, "srt", counts, references, Memo(shouting), False, 64)

    assert merged["scores"].bleu == pytest.approx(100.0)
    assert cue_by_cue["scores"].bleu == pytest.approx(100.0)
    assert merged["report"].merged == 1 and merged["report"].sentences == 2  # 2nd runs on
    assert cue_by_cue["report"].sentences == 5
    assert merged["other_lines_changed"] == cue_by_cue["other_lines_changed"] == 0


def test_main_runs_on_a_small_set(tmp_path, tiny_model_dir, capsys):
    folder = tmp_path / "out-of-domain"
    folder.mkdir()
    (folder / "newsdiscusstest2015.en").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    (folder / "newsdiscusstest2015.fr").write_text("Le chat dort.\nTom et Jerry.\nEt personne."
                                                   "\n", encoding="utf-8")

    assert main(["--model", str(tiny_model_dir), "--data", str(tmp_path), "--limit", "3"]) == 0

    out = capsys.readouterr().out
    assert "newsdiscusstest2015: 3 lines over 5 cues (2 lines over several), srt" in out
    assert "sentences over cues" in out and "cue by cue" in out and "no cues (whole lines)" in out
    assert "0 other lines changed" in out
    with pytest.raises(SystemExit, match="No multi30k-test2017-flickr"):
        main(["--data", str(tmp_path), "--set", "multi30k-test2017-flickr"])
