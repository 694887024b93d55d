"""`documents.subtitles`: SRT and WebVTT cues translated, everything else byte for byte."""

import pytest

from documents.sentences import TextLinks
from documents.subtitles import (
    MAX_CUES_PER_SENTENCE,
    SubtitleError,
    SubtitleOptions,
    read_subtitles,
    translate_subtitles,
)
from tests.documents.helpers import Recorder, shouting

# CRLF line ends, a byte-order mark, a sentence over cues 1 and 2 with tags in both, SRT
# coordinates, a dialogue cue of two lines, a start tag never closed.
SRT = (
    "\ufeff1\r\n"
    "00:00:01,000 --> 00:00:03,500\r\n"
    "{\\an8}<i>The old man walked</i>\r\n"
    'to the <font color="#ffff00">harbour</font>\r\n'
    "\r\n"
    "2\r\n"
    "00:00:03,600 --> 00:00:05,000 X1:100 X2:500 Y1:10 Y2:50\r\n"
    "every <b>morning</b>.\r\n"
    "\r\n"
    "3\r\n"
    "00:00:06,000 --> 00:00:08,000\r\n"
    "- Where are you going?\r\n"
    "- Home.\r\n"
    "\r\n"
    "4\r\n"
    "00:00:09,000 --> 00:00:10,000\r\n"
    "<i>Rain again.\r\n"
)

VTT = """WEBVTT - A walk
Kind: captions
Language: en

NOTE Made by hand,
over two lines.

STYLE
::cue(.loud) { color: yellow; }

REGION
id:left width:40%

intro
00:00:01.000 --> 00:00:02.500 align:start line:0
<v Roger Bingham>We walked to the <c.loud>harbour</c>
and waited

00:00:02.600 --> 00:00:04.000 region:left
for the boat. Tom &amp; Jerry <00:00:03.500>came too.

NOTE The end.

last
00:04.000 --> 00:05.000
<v.quiet Neil>Good night.</v>
"""


def echo(sentences):
    return [TextLinks(s, tuple((i, i) for i in range(len(s.split())))) for s in sentences]


def translated(text: str, format: str, translate=shouting, **options) -> str:
    document = read_subtitles(text.encode("utf-8"), format, f"test.{format}")
    return translate_subtitles(document, translate, SubtitleOptions(**options)).data.decode()


def cue_texts(text: str, format: str) -> list[str]:
    return [cue.text for cue in read_subtitles(text.encode("utf-8"), format).cues]


def frame(text: str, format: str) -> list[str]:
    """The lines outside cue text, line ends included."""
    document = read_subtitles(text.encode("utf-8"), format)
    inside = {i for cue in document.cues for i in range(*cue.text_lines)}
    return [line for i, line in enumerate(document.lines) if i not in inside]


# ---------------------------------------------------------------------------------------------
# Reading.


def test_an_srt_file_is_read_with_its_numbers_times_and_text():
    document = read_subtitles(SRT.encode(), "srt", "film.srt")

    assert document.bom and document.newline == "\r\n" and len(document.cues) == 4
    first, second = document.cues[:2]
    assert (first.identifier, first.line, first.start, first.end) == ("1", 2, 1.0, 3.5)
    assert first.text == ('{\\an8}<i>The old man walked</i>\r\n'
                          'to the <font color="#ffff00">harbour</font>')
    assert (second.start, second.end) == (3.6, 5.0)


def test_a_webvtt_file_is_read_past_its_header_notes_style_and_region():
    document = read_subtitles(VTT.encode(), "vtt")

    assert [cue.identifier for cue in document.cues] == ["intro", "", "last"]
    assert [cue.start for cue in document.cues] == [1.0, 2.6, 4.0]  # hours optional
    assert document.cues[2].text == "<v.quiet Neil>Good night.</v>"
    assert not document.bom and document.newline == "\n"


# ---------------------------------------------------------------------------------------------
# What is kept.


@pytest.mark.parametrize(("text", "format"), [(SRT, "srt"), (VTT, "vtt")])
@pytest.mark.parametrize("merge_cues", [True, False])
def test_a_translation_that_changes_nothing_gives_the_file_back_byte_for_byte(
        text, format, merge_cues):
    data = text.encode("utf-8")
    document = read_subtitles(data, format)

    assert translate_subtitles(document, echo, SubtitleOptions(merge_cues=merge_cues)
                               ).data == data


def test_a_last_cue_without_a_final_line_end_keeps_every_line():
    text = "1\r00:00:01,000 --> 00:00:02,000\rGood\rnight."  # old Mac line ends, no last one

    assert cue_texts(text, "srt") == ["Good\rnight."]
    assert translated(text, "srt", echo) == text
    assert translated(text, "srt") == "1\r00:00:01,000 --> 00:00:02,000\rGOOD\rNIGHT."


@pytest.mark.parametrize(("text", "format"), [(SRT, "srt"), (VTT, "vtt")])
def test_only_cue_text_changes(text, format):
    out = translated(text, format)

    assert frame(out, format) == frame(text, format)
    assert out.startswith("\ufeff1\r\n") if format == "srt" else out.startswith("WEBVTT - A")
    assert out.count("\r\n") == text.count("\r\n") and out.count("\n") == text.count("\n")
    assert "NOTE Made by hand,\nover two lines.\n" in out if format == "vtt" else True


def test_srt_tags_are_carried_and_overrides_stay_first():
    texts = cue_texts(translated(SRT, "srt"), "srt")

    assert texts[0] == ('{\\an8}<i>THE OLD MAN WALKED</i>\r\n'
                        'TO THE <font color="#ffff00">HARBOUR</font>')
    assert texts[1] == "EVERY <b>MORNING</b>."
    assert texts[3] == "<i>RAIN AGAIN."  # never closed: kept where it was


def test_webvtt_voices_classes_and_timestamps_are_carried_and_text_escaped():
    texts = cue_texts(translated(VTT, "vtt"), "vtt")

    assert texts[0] == "<v Roger Bingham>WE WALKED TO THE <c.loud>HARBOUR</c>\nAND WAITED"
    assert texts[1] == "FOR THE BOAT. TOM &amp; JERRY <00:00:03.500>CAME TOO."
    assert texts[2] == "<v.quiet Neil>GOOD NIGHT.</v>"  # the speaker's name is not translated


def test_webvtt_entities_are_decoded_for_the_model_and_escaped_again():
    recorder = Recorder({"Tom & Jerry came too.": ("Tom & Jerry <3.", ((0, 0), (1, 1),
                                                                       (2, 2)))})
    out = translated(VTT, "vtt", recorder)

    assert "Tom & Jerry came too." in recorder.read
    assert "Tom &amp; Jerry <00:00:03.500>&lt;3." in out


def test_an_element_inside_a_sentence_follows_its_aligned_word():
    text = "1\n00:00:01,000 --> 00:00:02,000\nThe <i>red</i> car stops.\n"
    known = {"The red car stops.": ("La voiture rouge s'arrête.", ((0, 0), (1, 2), (2, 1),
                                                                    (3, 3)))}

    assert cue_texts(translated(text, "srt", Recorder(known)), "srt") == [
        "La voiture <i>rouge</i> s'arrête."]


# ---------------------------------------------------------------------------------------------
# Sentences over cues.


def test_a_sentence_over_two_cues_is_one_sentence_for_the_model():
    recorder = Recorder()
    translated(SRT, "srt", recorder)

    assert "The old man walked to the harbour every morning." in recorder.read
    assert "- Where are you going?" in recorder.read and "- Home." in recorder.read


def test_cue_by_cue_reads_each_cue_alone():
    recorder = Recorder()
    document = read_subtitles(SRT.encode(), "srt")
    result = translate_subtitles(document, recorder, SubtitleOptions(merge_cues=False))

    assert {"The old man walked to the harbour", "every morning."} <= set(recorder.read)
    assert result.report.merged == 0
    assert translate_subtitles(document, shouting).report.merged == 1


def test_the_translation_is_split_over_the_cues_by_the_alignment():
    text = ("1\n00:00:01,000 --> 00:00:02,000\nI went to the\n\n"
            "2\n00:00:02,000 --> 00:00:03,000\nmarket yesterday.\n")
    # I went to the | market yesterday. -> Hier je suis allé au marché.
    links = ((5, 0), (0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5))
    recorder = Recorder({"I went to the market yesterday.": ("Hier je suis allé au marché.",
                                                             links)})

    assert cue_texts(translated(text, "srt", recorder), "srt") == [
        "Hier je suis allé au", "marché."]
    assert recorder.read == ["I went to the market yesterday."]


def test_a_cue_of_two_sentences_keeps_the_first_and_shares_the_second():
    text = ("1\n00:00:01,000 --> 00:00:02,000\nYes. I went to\n\n"
            "2\n00:00:02,000 --> 00:00:03,000\nthe market.\n")
    recorder = Recorder({"I went to the market.": ("Je suis allé au marché.",
                                                   ((0, 0), (1, 1), (1, 2), (2, 3), (3, 3),
                                                    (4, 4)))})

    # "au" is linked to "to" and to "the": a tie, which the source's proportion breaks.
    assert cue_texts(translated(text, "srt", recorder), "srt") == [
        "YES. Je suis allé", "au marché."]


def test_a_dialogue_dash_starts_a_sentence_and_ellipses_join_cues():
    text = ("1\n00:00:01,000 --> 00:00:02,000\nWait for\n\n"
            "2\n00:00:02,000 --> 00:00:03,000\n- No!\n\n"
            "3\n00:00:03,000 --> 00:00:04,000\nI was going to...\n\n"
            "4\n00:00:04,000 --> 00:00:05,000\n...the market.\n\n"
            "5\n00:00:05,000 --> 00:00:06,000\nI don't know...\n\n"
            "6\n00:00:06,000 --> 00:00:07,000\nMaybe tomorrow.\n")
    recorder = Recorder()
    out = translated(text, "srt", recorder)

    assert sorted(recorder.read) == ["- No!", "I don't know", "I was going to the market.",
                                     "Maybe tomorrow.", "Wait for"]
    assert cue_texts(out, "srt")[2:5] == ["I WAS GOING TO...", "...THE MARKET.",
                                          "I DON'T KNOW..."]  # the ellipses kept


def test_a_speakers_turn_ends_a_sentence_and_stays_where_it_is():
    voices = "WEBVTT\n\n00:01.000 --> 00:02.000\n<v Bob>Hi <b>you</b>\n<v Ann>there\n"
    dashes = "1\n00:00:01,000 --> 00:00:02,000\n<i>- Hi there\n- Bye now</i>\n"
    recorder = Recorder()

    assert cue_texts(translated(voices, "vtt", recorder), "vtt") == [
        "<v Bob>HI <b>YOU</b>\n<v Ann>THERE"]
    assert cue_texts(translated(dashes, "srt", recorder), "srt") == [
        "<i>- HI THERE\n- BYE NOW</i>"]
    assert sorted(recorder.read) == ["- Bye now", "- Hi there", "Hi you", "there"]


def test_a_sentence_runs_over_at_most_max_cues_per_sentence():
    cues = MAX_CUES_PER_SENTENCE + 2
    text = "".join(f"{k}\n00:00:0{k},000 --> 00:00:0{k},900\nand on\n\n" for k in range(1, cues))
    recorder = Recorder()
    translated(text, "srt", recorder)

    assert sorted(recorder.read) == ["and on", " ".join(["and on"] * MAX_CUES_PER_SENTENCE)]


def test_line_breaks_inside_a_sentence_split_it_by_the_alignment():
    text = "1\n00:00:01,000 --> 00:00:02,000\nThe cat sleeps\non the warm roof.\n"
    known = {"The cat sleeps on the warm roof.": (
        "Le chat dort sur le toit bien chaud.", ((0, 0), (1, 1), (2, 2), (3, 3), (4, 4),
                                                 (5, 6), (6, 5)))}

    assert cue_texts(translated(text, "srt", Recorder(known)), "srt") == [
        "Le chat dort\nsur le toit bien chaud."]


def test_fewer_target_words_than_cues_leaves_a_cue_without_text_and_the_file_readable():
    text = ("1\n00:00:01,000 --> 00:00:02,000\nOh\n\n"
            "2\n00:00:02,000 --> 00:00:03,000\nwell\n\n"
            "3\n00:00:03,000 --> 00:00:04,000\n- Bye.\n")
    recorder = Recorder({"Oh well": ("Bof", ((0, 0), (1, 0)))})
    out = translated(text, "srt", recorder)

    assert cue_texts(out, "srt") == ["Bof", "", "- BYE."]
    assert out.startswith("1\n00:00:01,000 --> 00:00:02,000\nBof\n\n2\n00:00:02,000 --> "
                          "00:00:03,000\n\n3\n")


# ---------------------------------------------------------------------------------------------
# Calls of the model.


def test_all_sentences_of_the_file_go_in_few_calls_sorted_by_length_and_once():
    text = SRT + "\r\n5\r\n00:00:11,000 --> 00:00:12,000\r\n- Home.\r\n"
    recorder = Recorder()
    document = read_subtitles(text.encode(), "srt")
    result = translate_subtitles(document, recorder, SubtitleOptions(batch_size=2))

    assert [len(call) for call in recorder.calls] == [2, 2]
    assert recorder.read == sorted(recorder.read, key=lambda s: (len(s), s))
    assert result.report.sentences == 4 and result.report.cues == result.report.translated == 5


def test_placeholders_come_back_as_written():
    text = "1\n00:00:01,000 --> 00:00:02,000\nDelete %s now?\n"
    recorder = Recorder()

    assert cue_texts(translated(text, "srt", recorder), "srt") == ["DELETE %s NOW?"]
    assert recorder.read == ["Delete now?"]
    translated(text, "srt", recorder, placeholders=False)
    assert recorder.read[-1] == "Delete %s now?"


def test_a_cue_without_words_is_kept_as_it_is():
    text = ("WEBVTT\n\n00:01.000 --> 00:02.000\n<i></i>\n\n"
            "00:02.000 --> 00:03.000\n\n00:03.000 --> 00:04.000\nHi.\n")
    out = translated(text, "vtt")

    assert out == text.replace("Hi.", "HI.")


def test_batch_size_is_checked():
    with pytest.raises(ValueError, match="batch_size must be at least 1. Received: 0"):
        SubtitleOptions(batch_size=0)


# ---------------------------------------------------------------------------------------------
# Errors.


@pytest.mark.parametrize(("data", "format", "message"), [
    (b"Hello.\n", "srt", r"bad:1: 'Hello.' is neither a cue number nor a timing line"),
    (b"1\n00:00:01,000 -> 00:00:02,000\nHi.\n", "srt",
     r"bad:2: '00:00:01,000 -> 00:00:02,000' is not a timing line"),
    (b"1\n00:00:01,000 --> 00:00:02\nHi.\n", "srt",
     r"bad:2: '00:00:01,000 --> 00:00:02' is not a timing line: write it as "
     r"'00:00:01,000 --> 00:00:04,000'"),
    (b"1\n00:00:05,000 --> 00:00:02,000\nHi.\n", "srt",
     r"bad:2: the cue ends \(2.000 s\) before it starts \(5.000 s\)"),
    (b"1\n00:00:01,000 --> 00:00:02,000\nHi.\n\nthere.\n", "srt",
     r"bad:5: 'there.' is neither a cue number nor a timing line.*blank line inside"),
    (b"7\n", "srt", r"bad:1: cue 7 has no timing line"),
    (b"\n\n", "srt", r"bad has no cue"),
    (b"\xff\xfe1\n", "srt", r"bad is not UTF-8 text \(byte 0\)"),
    (b"00:01.000 --> 00:02.000\nHi.\n", "vtt",
     r"bad:1: a WebVTT file starts with the line WEBVTT; found '00:01.000 --> 00:02.000': add "
     r"WEBVTT as the first line$"),
    (b"1\n00:00:01,000 --> 00:00:02,000\nHi.\n", "vtt",
     r"bad:1: .*found '1'.*this looks like SRT: use .srt or --format srt"),
    (b"", "vtt", r"bad:1: a WebVTT file starts with the line WEBVTT"),
    (b"WEBVTT\n\n00:00:01,000 --> 00:00:02,000\nHi.\n", "vtt",
     r"bad:3: .* is not a timing line.*a comma before the milliseconds is SRT's"),
    (b"WEBVTT\n\nHello\nthere\n", "vtt",
     r"bad:3: 'Hello' starts a block that is not a cue.*start the block with NOTE"),
    (b"WEBVTT\n00:01.000 --> 00:02.000\nHi.\n", "vtt",
     r"bad:2: a timing line in the header: put a blank line"),
])
def test_a_malformed_file_is_refused_with_its_line(data, format, message):
    with pytest.raises(SubtitleError, match=message):
        read_subtitles(data, format, "bad")
    assert issubclass(SubtitleError, ValueError)


def test_an_unknown_format_is_refused():
    with pytest.raises(ValueError, match=r"format must be one of \('srt', 'vtt'\). "
                                         r"Received: 'ass'"):
        read_subtitles(b"", "ass")
