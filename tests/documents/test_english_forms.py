"""English forms of glossary terms: the lexicon's, else the regular plurals."""

from documents.english_forms import (
    TermForm,
    can_be_verb,
    noun_head,
    only_verb,
    plural_noun,
    term_forms,
    word_forms,
)


def forms(word: str, verb: bool) -> dict[str, str]:
    return {inflected: form for inflected, form, _ in word_forms(word, verb)}


def test_the_lexicons_forms_irregular_ones_included_and_only_its_parts_of_speech():
    assert forms("take", verb=True) == {"takes": "third person", "took": "past",
                                        "taken": "participle", "taking": "ing"}
    assert forms("child", verb=False) == {"children": "plural"}
    assert forms("good", verb=False)["better"] == "comparative"
    assert "tester" not in forms("test", verb=False), "a noun and a verb, no adjective"
    assert forms("Apple", verb=False) == {"Apples": "plural"}, "in its case"


def test_a_word_the_lexicon_does_not_know_gets_the_regular_plurals():
    assert "lockdowns" in forms("lockdown", verb=False)
    assert forms("country", verb=False)["countries"] == "plural"
    assert "ATMS" in forms("ATM", verb=False), "matched whatever the ending's case"
    assert forms("COVID-19", verb=False) == {}


def test_term_forms_inflect_the_head_word():
    assert TermForm(("face", "masks"), 1, 4, "plural") in term_forms(("face", "mask"), False)
    assert TermForm(("cups", "of", "tea"), 0, 3, "plural") in term_forms(("cup", "of", "tea"),
                                                                         False)
    washed = [f.tokens for f in term_forms(("wash", "your", "hands"), True)]
    assert ("washed", "your", "hands") in washed and ("washing", "your", "hands") in washed
    assert term_forms(("hospitalize",), True, frozenset({"plural"})) == []
    assert noun_head(("COVID", "-", "19")) is None


def test_parts_of_speech():
    assert can_be_verb("spread") and not only_verb("spread") and only_verb("hospitalize")
    assert not can_be_verb("virus")
    assert [w for w in "patients people spreads is this news".split() if plural_noun(w)] == [
        "patients", "people", "spreads"]
