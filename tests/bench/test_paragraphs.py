"""`bench/paragraphs.py`: paragraphs of the mix as documents against their lines one by one."""

import pytest

from bench.paragraphs import (
    as_sentence,
    compare,
    documents_per_second,
    joined_references,
    main,
    mix_references,
    paragraphs,
)
from documents.sentences import TextLinks

LINES = ["A dog runs on the beach", "I am hungry.", "Where is the station?",
         "Two men are talking", "It is late.", "See you tomorrow!", "The cat sleeps."]


def shouting(sentences):
    """A translator whose output reads as its input: every word upper-cased."""
    return [TextLinks(s.upper(), tuple((i, i) for i in range(len(s.split()))))
            for s in sentences]


def test_lines_are_grouped_in_order_into_paragraphs_of_three_to_five():
    groups = paragraphs(list(range(100)), seed=3)

    assert [i for group in groups for i in group] == list(range(100))
    assert all(3 <= len(group) <= 5 for group in groups[:-1]) and groups[-1]
    assert groups == paragraphs(list(range(100)), seed=3)  # the seed decides
    assert groups != paragraphs(list(range(100)), seed=4)


def test_a_line_without_final_punctuation_gets_a_full_stop():
    assert as_sentence("A dog runs  on the beach ") == "A dog runs on the beach."
    assert [as_sentence(s) for s in ("Hi!", "Why?", "He said “no.”", "Il a dit « oui »")] == [
        "Hi!", "Why?", "He said “no.”", "Il a dit « oui »"]  # a closing quote ends it too


def test_paragraph_references_join_each_lines_kth_or_last_reference():
    references = [["a1", "a2"], ["b1"], ["c1", "c2", "c3"]]

    assert joined_references([[0, 1, 2]], references) == [["a1 b1 c1", "a2 b1 c2",
                                                           "a2 b1 c3"]]


def test_documents_equal_one_by_one_when_the_splitter_finds_every_line():
    references = [[line.upper()] for line in LINES]

    found = compare(LINES, references, shouting, seed=1, batch_size=2)

    assert found["split_exactly"] == found["paragraphs"] == len(paragraphs(LINES, 1))
    assert found["documents"].bleu == found["sentences"].bleu
    assert found["agreement"].bleu == pytest.approx(100.0)


def test_a_line_of_two_sentences_is_split_in_a_document_and_counted():
    lines = ["Hello there. How are you?", *LINES[1:3]]

    found = compare(lines, [[line] for line in lines], shouting, seed=1)

    assert found["paragraphs"] == 1 and found["split_exactly"] == 0


def test_documents_per_second_sends_every_document_once():
    sent = []

    rate = documents_per_second([f"d{i}" for i in range(10)], sent.extend, batch=3, clients=2)

    assert sorted(sent) == sorted(f"d{i}" for i in range(10)) and rate > 0


def test_documents_per_second_fails_when_a_call_fails():
    def translate(chunk):
        if "d7" in chunk:
            raise ValueError("document too long")

    with pytest.raises(RuntimeError, match="document too long"):
        documents_per_second([f"d{i}" for i in range(10)], translate, batch=3, clients=2)


def _data(tmp_path):
    folder = tmp_path / "out-of-domain"
    folder.mkdir()
    (folder / "traffic-mix.en").write_text("\n".join(LINES) + "\n")
    (tmp_path / "anki-fra-eng").mkdir()
    (tmp_path / "anki-fra-eng" / "test.tsv").write_text(
        "".join(f"{line}\tFR {line}\n{line}\tFR2 {line}\n" for line in LINES[:4]))
    for name, lines in (("multi30k-test2017-flickr", LINES[4:6]),
                        ("newsdiscusstest2015", LINES[6:])):
        (folder / f"{name}.en").write_text("\n".join(lines) + "\n")
        (folder / f"{name}.fr").write_text("\n".join(f"FR {line}" for line in lines) + "\n")
    return tmp_path


def test_references_come_from_the_sets_the_mix_was_drawn_from(tmp_path):
    found = mix_references(_data(tmp_path))

    assert found[LINES[0]] == [f"FR {LINES[0]}", f"FR2 {LINES[0]}"]
    assert found[LINES[6]] == [f"FR {LINES[6]}"] and set(found) == set(LINES)


def test_main_runs_quality_and_speed_on_a_small_mix(tmp_path, tiny_model_dir, capsys):
    assert main(["--model", str(tiny_model_dir), "--data", str(_data(tmp_path)),
                 "--speed", "--clients", "1", "--batch-size", "2"]) == 0

    out = capsys.readouterr().out
    assert "7 lines with references (of 7)" in out and "BLEU as documents" in out
    assert "in-process:" in out and "through the server:" in out
