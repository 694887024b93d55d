"""`bench/file_formats.py`: one file per format, valid and the same every time, timed alike.

No model: the translator is `shouting` (every word upper-cased, linked to itself), and
`main` runs with a fake `nmt.inference.translator` so that TensorFlow never loads.
"""

import io
import json
import sys
import time
import types
import zipfile

import docx
import pytest

from bench.file_formats import (
    FORMATS,
    NAMES,
    SENTENCES,
    UNITS,
    Timed,
    benchmark,
    build,
    groups,
    main,
    read_pool,
    runs,
    table,
)
from documents.file_formats import FileSettings, format_of, read_file
from documents.sentences import split_document
from nmt.types import DecodeOptions
from tests.documents.helpers import Recorder, shouting

COUNT = 60  # sentences in each test file: every block kind of every format at least once


@pytest.fixture(scope="module")
def pool() -> list[str]:
    return read_pool(COUNT)


def test_the_pool_is_distinct_sentences_each_read_as_one():
    pool = SENTENCES.read_text(encoding="utf-8").splitlines()

    assert len(pool) == len(set(pool)) == 600  # the model reads a repeated sentence once
    assert [s for s in pool if split_document(s).sentences != [s]] == []
    assert read_pool(3) == pool[:3]
    for count in (0, 601):
        with pytest.raises(ValueError, match=f"between 1 and 600.*Received: {count}"):
            read_pool(count)


def test_groups_cycle_their_sizes_and_keep_the_rest():
    assert groups(list("abcdefg"), (1, 2)) == [["a"], ["b", "c"], ["d"], ["e", "f"], ["g"]]


def test_runs_mark_words_of_four_letters_counted_modulo_their_number():
    text = "Books can be kept for three weeks, didn't they?"  # 5 words: not didn, not can

    assert runs(text, {0: "b", 6: "i"}) == [("Books", "b"), (" can be ", ""), ("kept", "i"),
                                            (" for three weeks, didn't they?", "")]
    assert runs("I am.", {0: "b"}) == [("I am.", "")]


@pytest.mark.parametrize("format", FORMATS)
def test_each_file_reads_as_its_format_with_its_units_and_sentences(format, pool):
    data, units = build(format, pool)
    recorder = Recorder()

    result = read_file(format_of(NAMES[format]), data, NAMES[format], FileSettings())(recorder)

    assert result.counts[UNITS[format]] == units
    assert result.counts["sentences"] == COUNT
    assert sorted(recorder.read) == sorted(pool)  # inline markup and code not read as words


@pytest.mark.parametrize("format", [f for f in FORMATS if f != "docx"])
def test_a_text_file_is_translated_with_its_markup(format, pool):
    data, _ = build(format, pool)

    result = read_file(format, data, NAMES[format], FileSettings())(shouting)

    text = result.data.decode("utf-8")
    assert "THE LIBRARY OPENS AT NINE ON WEEKDAYS." in text
    expected = {"po": ["#: src/bench.c:10\n", "#, fuzzy\n"],
                "xliff": ['<g id="g1" ctype="bold">', '<ph id="ph2">&lt;br/&gt;</ph>',
                          'state="needs-review-translation"'],
                "srt": ["00:00:02,000 --> 00:00:03,800\n"], "vtt": ["WEBVTT\n"],
                "markdown": ["## ", "*", "**", "](https://example.org/guide/1)", "`--step=",
                             "\n- ", "\n1. ", "\n> ", "```sh\nbench-tool --project garden-3"]}
    assert all(piece in text for piece in expected[format])
    if format in ("srt", "vtt"):
        assert result.counts["merged"] > 0  # sentences over several cues


def test_the_word_document_has_header_footer_headings_table_and_formatting(pool):
    document = docx.Document(io.BytesIO(build("docx", pool)[0]))

    section = document.sections[0]
    assert section.header.paragraphs[0].text == pool[0]
    assert section.footer.paragraphs[0].text == pool[1]
    assert document.paragraphs[0].style.name == "Heading 1"
    assert [cell.text for row in document.tables[0].rows for cell in row.cells] == pool[8:12]
    formats = {(run.bold, run.italic) for p in document.paragraphs for run in p.runs}
    assert {(True, None), (None, True)} <= formats


@pytest.mark.parametrize("format", FORMATS)
def test_the_files_are_the_same_bytes_every_time(format, pool):
    assert build(format, pool) == build(format, pool)


def test_the_word_document_does_not_carry_the_time_it_was_built(pool):
    with zipfile.ZipFile(io.BytesIO(build("docx", pool)[0])) as package:
        assert {member.date_time for member in package.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_timed_adds_up_the_seconds_inside_its_calls():
    def slow(sentences):
        time.sleep(0.02)
        return shouting(sentences)

    timed = Timed(slow)
    timed(["One."])
    timed(["Two."])

    assert timed.seconds >= 0.04


def test_benchmark_and_table_with_a_fake_translator(pool):
    files = {format: build(format, pool)[0] for format in ("srt", "markdown")}

    rows = benchmark(files, shouting, repeats=2)

    assert [(r["format"], r["sentences"], len(r["runs_seconds"])) for r in rows] == [
        ("srt", COUNT, 2), ("markdown", COUNT, 2)]
    for row in rows:
        assert row["files_per_s"] == pytest.approx(1 / row["seconds"])
        assert row["sentences_per_s"] == pytest.approx(COUNT / row["seconds"])
        assert 0 < row["outside_share"] <= 1
    lines = table(rows).splitlines()
    assert lines[0].startswith("| format | file | units | sentences read | seconds | files/s |")
    assert lines[2].startswith(f"| SRT | {len(files['srt']) / 1024:,.1f} KiB | "
                               f"{rows[0]['units']} cues | {COUNT} | ")
    assert lines[3].startswith("| Markdown |") and lines[3].endswith("% |")


class FakeTranslator:
    """Stands for `Translator`: loads nothing, shouts."""

    loaded = []

    def __init__(self, precision):
        self.info = types.SimpleNamespace(path="fake/1", precision=precision,
                                          precision_reason="asked",
                                          default_options=DecodeOptions(beam_size=3))

    @classmethod
    def load(cls, model, precision):
        cls.loaded.append((str(model), precision))
        return cls(precision)

    def translate(self, sentences, options):
        assert options.beam_size == 3  # the model's default decoding
        return shouting(sentences)


def test_main_prints_the_table_and_writes_json(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "nmt.inference.translator",
                        types.SimpleNamespace(Translator=FakeTranslator))
    out = tmp_path / "formats.json"

    assert main(["--model", "some/model", "--formats", "vtt", "docx", "--sentences", "20",
                 "--repeats", "1", "--precision", "float32", "--json", str(out)]) == 0

    printed = capsys.readouterr().out
    assert FakeTranslator.loaded == [("some/model", "float32")]
    assert "model: fake/1 (beam 3); precision float32 (asked)" in printed
    assert "the first 20 sentences of bench/data/file_formats.en" in printed
    assert "| WebVTT |" in printed and "| Word .docx |" in printed
    written = json.loads(out.read_text())
    assert [(r["format"], r["sentences"]) for r in written["rows"]] == [("vtt", 20),
                                                                       ("docx", 20)]
    assert written["decoding"]["beam_size"] == 3 and written["repeats"] == 1


@pytest.mark.parametrize("flags, message", [(["--sentences", "0"], "between 1 and 600"),
                                            (["--repeats", "0"], "--repeats must be 1")])
def test_main_refuses_bad_sizes_before_loading_a_model(flags, message, capsys):
    with pytest.raises(SystemExit):
        main(flags)

    assert message in capsys.readouterr().err
