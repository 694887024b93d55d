"""Inline term annotations: the text a model trained with them reads, and the marks taken back."""

import pytest

from documents.term_annotation import MARK, annotate, remove_marks


def test_each_term_is_followed_by_its_target_between_marks():
    source = "Three patients were hospitalized yesterday."
    start = source.index("hospitalized")
    text, words = annotate(source, [(start, start + len("hospitalized"), "hospitalisés")])
    assert text == f"Three patients were hospitalized {MARK} hospitalisés {MARK} yesterday."
    # Every word of the annotation stands for the term's word (3); `yesterday.` is word 4.
    assert words == ((0,), (1,), (2,), (3,), (3,), (3,), (3,), (4,))


def test_terms_in_any_order_a_multi_word_term_and_punctuation_after_it():
    source = "Wash your hands after the outbreak, said the WHO."
    hands = (source.index("Wash"), source.index(" after"), "lavez-vous  les mains")
    who = (source.index("WHO"), source.index("WHO") + 3, "OMS")
    text, words = annotate(source, [who, hands])
    assert text == (f"Wash your hands {MARK} lavez-vous les mains {MARK} after the outbreak, "
                    f"said the WHO {MARK} OMS {MARK}.")
    assert words[3:8] == ((0, 1, 2),) * 5, "the annotation of a term of three words"
    assert words[-1] == (8,), "the mark glued to `.` stands for `WHO.`, word 8"
    assert len(words) == len(text.split())


def test_no_terms_gives_the_sentence_back():
    assert annotate("Rien à faire.", []) == ("Rien à faire.", ((0,), (1,), (2,)))


@pytest.mark.parametrize("source, terms, message", [
    ("a b c", [(0, 3, "x"), (2, 5, "y")], "without overlapping"),
    ("a b", [(0, 9, "x")], "without overlapping"),
    (f"a {MARK} b", [(0, 1, "x")], "holds the annotation mark"),
    ("a b", [(0, 1, f"x {MARK}")], "without"),
    ("a b", [(0, 1, "  ")], "must be words"),
])
def test_bad_terms_are_refused_with_what_to_change(source, terms, message):
    with pytest.raises(ValueError, match=message):
        annotate(source, terms)


def test_remove_marks_gives_the_words_left_and_where_each_went():
    assert remove_marks(f"deux {MARK} flambées {MARK}, a dit {MARK}OMS{MARK}.") == (
        "deux flambées, a dit OMS.", (0, None, 1, 1, 2, 3, 4))
    assert remove_marks("rien ici") == ("rien ici", (0, 1))
    assert remove_marks(MARK) == ("", (None,))
