"""`documents.file_batches`: a file's distinct sentences sent by length, `batch_size` a call."""

import pytest

from documents.file_batches import FileOptions, translate_distinct, translate_plans
from documents.sentences import split_document
from tests.documents.helpers import Recorder


def test_distinct_sentences_go_shortest_first_in_batches_with_progress():
    recorder, seen = Recorder(), []

    results = translate_distinct(["Good night.", "Hi.", "Good night.", "See you.", "Ok."],
                                 recorder, 3, lambda done, total: seen.append((done, total)))

    assert recorder.calls == [["Hi.", "Ok.", "See you."], ["Good night."]]  # ties by text
    assert results["Good night."].text == "GOOD NIGHT." and len(results) == 4
    assert seen == [(3, 4), (4, 4)]


def test_no_sentence_no_call():
    recorder = Recorder()

    assert translate_distinct([], recorder, 8) == {} and recorder.calls == []


def test_plans_are_joined_by_key_and_share_their_sentences():
    recorder = Recorder()
    plans = {"a": split_document("Hi. See you."), "b": split_document("  Hi.\n")}

    joined, sentences = translate_plans(plans, recorder, 64)

    assert {key: t.text for key, t in joined.items()} == {"a": "HI. SEE YOU.", "b": "  HI.\n"}
    assert sentences == 2 and recorder.read == ["Hi.", "See you."]


def test_batch_size_is_checked_and_the_shared_options_are_keyword_only():
    with pytest.raises(ValueError, match="batch_size must be at least 1. Received: 0"):
        FileOptions(batch_size=0)
    with pytest.raises(TypeError):
        FileOptions(False)
