import dataclasses
import json

import numpy as np
import pytest
from batch_fakes import fake_translation

from batch.readers import SourceLine
from batch.records import (
    detect_output_format,
    error_record,
    format_record,
    translation_record,
    truncation_error,
)
from nmt.types import AppliedTerm, Hypothesis, Translation

SOURCE = SourceLine(12, "I like the sea.")


def test_translation_record_schema():
    record = translation_record(SOURCE, fake_translation(SOURCE.text, score=-0.123456789))
    assert list(record) == ["line", "source", "translation", "score", "confidence",
                            "word_alignment", "error"]
    assert record == {
        "line": 12, "source": "I like the sea.", "translation": "I LIKE THE SEA.",
        "score": -0.1235, "confidence": None, "word_alignment": "0-0 1-1 2-2 3-3", "error": None,
    }


def test_a_job_with_a_glossary_lists_the_terms_applied_before_the_error_field():
    translation = fake_translation(SOURCE.text)
    best = dataclasses.replace(translation.best, text="I LIKE THE mer.", applied_terms=(
        AppliedTerm("sea", "mer", (11, 14), (11, 14), "aligned", "sea", ""),))
    glossed = dataclasses.replace(translation, nbest=(best,))

    record = translation_record(SOURCE, glossed, glossary=True)

    assert list(record)[-2:] == ["applied_terms", "error"]
    assert record["applied_terms"] == [{"source": "sea", "target": "mer", "source_span": [11, 14],
                                        "target_span": [11, 14], "placement": "aligned",
                                        "matched": "sea", "form": ""}]
    assert translation_record(SOURCE, translation, glossary=True)["applied_terms"] == []
    assert "applied_terms" not in translation_record(SOURCE, glossed)


def test_confidence_and_word_scores_are_rounded_into_the_record():
    best = dataclasses.replace(fake_translation(SOURCE.text).best, confidence=-0.123456,
                               word_scores=np.array([-0.5, -0.0000401, -2.25, -1.0], np.float32))
    record = translation_record(SOURCE, Translation(SOURCE.text, ("I", "</s>"), (best,)))

    assert record["confidence"] == -0.1235
    assert record["word_scores"] == [-0.5, -0.0, -2.25, -1.0]
    assert list(record)[-1] == "error"


def test_translation_record_with_alignment():
    translation = fake_translation(SOURCE.text)
    record = translation_record(SOURCE, translation, with_alignment=True)
    assert record["source_tokens"] == ["I", "like", "the", "sea.", "</s>"]
    assert record["target_tokens"] == ["I", "LIKE", "THE", "SEA."]
    matrix = np.array(record["alignment"])
    assert matrix.shape == (4, 5)  # (T, S)
    np.testing.assert_array_equal(matrix, 0.2)
    assert list(record)[-1] == "error"


def test_alignment_is_rounded_to_four_decimals():
    translation = fake_translation("a b")
    weights = np.array([[0.123456, 0.876544]], np.float32)  # (T=1, S=2)
    best = Hypothesis("A", ("A",), -1.0, weights, ((0, 0),))
    record = translation_record(SourceLine(1, "a b"),
                                Translation("a b", translation.source_tokens[:2], (best,)),
                                with_alignment=True)
    assert record["alignment"] == [[0.1235, 0.8765]]


def test_nbest_is_listed_when_asked_for():
    first, second = fake_translation("a b").best, fake_translation("c").best
    translation = Translation("a b", ("a", "b"), (first, second))
    record = translation_record(SourceLine(1, "a b"), translation)
    assert record["translation"] == "A B"
    assert record["nbest"] == [
        {"translation": "A B", "score": round(-3 / 7, 4), "confidence": None},
        {"translation": "C", "score": round(-1 / 7, 4), "confidence": None}]


def test_non_finite_score_becomes_null():
    record = translation_record(SOURCE, fake_translation(SOURCE.text, score=float("-inf")))
    assert record["score"] is None
    json.loads(format_record(record, "jsonl"))  # still valid JSON


def _with_source_tokens(fake_translation, tokens):
    translation = fake_translation("x")
    return Translation("x", tuple(tokens), translation.nbest)


@pytest.mark.parametrize("tokens, limit, truncated", [
    (["a"] * 255 + ["</s>"], 256, True),    # the export keeps 255 pieces + EOS
    (["a"] * 254 + ["</s>"], 256, False),
    (["a"] * 255, 256, True),               # the same, reported without EOS
    (["a"] * 254, 256, False),
    (["a"] * 999, None, False),             # limit unknown (server engine)
])
def test_truncation_error(tokens, limit, truncated):
    error = truncation_error(_with_source_tokens(fake_translation, tokens), limit)
    assert (error is not None) == truncated


def test_truncated_translation_becomes_an_error_record():
    translation = _with_source_tokens(fake_translation, ["a"] * 7 + ["</s>"])
    record = translation_record(SOURCE, translation, max_source_tokens=8)
    assert record["translation"] is None
    assert record["error"].startswith("too long: reaches the model's limit of 7 subword tokens")


def test_error_record():
    record = error_record(SourceLine(3, "", "empty line"))
    assert record == {"line": 3, "source": "", "translation": None, "score": None,
                      "confidence": None, "word_alignment": None, "error": "empty line"}
    assert error_record(SourceLine(3, "x"), "rejected")["error"] == "rejected"


def test_format_record_jsonl_is_one_compact_line_of_utf8():
    record = {"line": 1, "source": "été\nlà", "translation": "« oui »", "error": None}
    line = format_record(record, "jsonl")
    assert line == '{"line":1,"source":"été\\nlà","translation":"« oui »","error":null}\n'
    assert json.loads(line) == record


def test_format_record_text_keeps_line_correspondence():
    assert format_record({"translation": "Bonjour."}, "text") == "Bonjour.\n"
    assert format_record({"translation": "deux\nlignes"}, "text") == "deux lignes\n"
    assert format_record(error_record(SourceLine(1, "", "empty line")), "text") == "\n"
    with pytest.raises(ValueError, match="Received: 'csv'"):
        format_record({}, "csv")


@pytest.mark.parametrize("name, expected", [
    ("out.jsonl", "jsonl"), ("out.jsonl.gz", "jsonl"), ("out", "jsonl"), ("out.txt", "text"),
    ("out.TXT.gz", "text"),
])
def test_detect_output_format(name, expected):
    assert detect_output_format(name) == expected
