"""`documents.file_formats`: a file's format from its name, its translation's name, and
one way to read, translate and sum up every format."""

import pytest

from documents.file_formats import (
    FILE_FORMATS,
    MEDIA_TYPES,
    FileSettings,
    format_of,
    read_file,
    translated_name,
)
from tests.documents.helpers import Recorder

TEMPLATE = '''msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"

msgid "I like green tea."
msgstr ""

msgid "Thank you."
msgstr "Merci."
'''
SRT = """1
00:00:01,000 --> 00:00:02,000
I like

2
00:00:03,000 --> 00:00:04,000
green tea.
"""


def test_the_format_comes_from_the_extension_or_is_given():
    assert format_of("app/messages.POT") == format_of("fr.po") == "po"
    assert format_of("notes.txt", "markdown") == "markdown"
    with pytest.raises(ValueError, match=r"cannot tell the format of notes.rtf from its "
                                         r"extension '.rtf': supported are .po \(po\), .*; "
                                         r"name one with format FILE_FORMAT_PO$"):
        format_of("notes.rtf", hint="format FILE_FORMAT_PO")
    with pytest.raises(ValueError, match=r"extension '\(none\)'.*--format po\|xliff\|srt"):
        format_of("README")
    with pytest.raises(ValueError, match="unknown file format 'rtf'"):
        format_of("notes.po", "rtf")


def test_every_format_has_a_media_type():
    assert set(MEDIA_TYPES) == set(FILE_FORMATS)


@pytest.mark.parametrize(("name", "format", "expected"), [
    ("messages.pot", "po", "messages.fr.po"),
    ("guide.md", "markdown", "guide.fr.md"),
    ("C:\\Users\\me\\film.srt", "srt", "film.fr.srt"),
    ("../../etc/report.docx", "docx", "report.fr.docx"),
    ("strings", "xliff", "strings.fr.xlf"),
    ("café.vtt", "vtt", "café.fr.vtt"),
])
def test_the_translations_name_has_fr_before_its_extension_and_no_directory(name, format,
                                                                             expected):
    assert translated_name(name, format) == expected


def test_a_po_template_is_filled_and_summed_up_as_the_command_line_prints_it():
    recorder = Recorder()
    run = read_file("po", TEMPLATE.encode(), "messages.pot", FileSettings(review=False))

    result = run(recorder)

    assert recorder.read == ["I like green tea."]
    assert 'msgstr "I LIKE GREEN TEA."' in result.data.decode()
    assert "fuzzy" not in result.data.decode()
    assert result.summary == ("1 of 2 messages translated, 1 translations kept, 0 obsolete "
                              "entries left as they were; 1 sentences")
    assert result.counts == {"messages": 2, "written": 1, "kept": 1, "obsolete": 0, "texts": 1,
                             "sentences": 1}


@pytest.mark.parametrize(("merge_cues", "calls", "merged"), [
    (True, [["I like green tea."]], 1),
    (False, [["I like"], ["green tea."]], 0),  # one cue, one sentence, a call
])
def test_subtitles_follow_the_cue_setting_and_the_batch_size(merge_cues, calls, merged):
    recorder = Recorder()
    run = read_file("srt", SRT.encode(), "film.srt",
                    FileSettings(merge_cues=merge_cues, batch_size=1))

    result = run(recorder)

    assert recorder.calls == calls
    assert result.data.decode() == SRT.replace("I like", "I LIKE").replace("green tea.",
                                                                           "GREEN TEA.")
    assert result.summary == (f"2 of 2 cues translated, {merged} sentences over several cues; "
                              f"{len(calls)} sentences")


def test_a_file_that_is_not_its_format_fails_when_read_before_any_translation():
    with pytest.raises(ValueError, match=r"notes.po:3: not PO syntax"):
        read_file("po", b"# Notes\n\nBuy bread.\n", "notes.po", FileSettings())
