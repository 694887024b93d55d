"""What the English around a term asks of its French form (`documents.agreement`)."""

import pytest

from documents.agreement import participle_number, written
from documents.glossary import Glossary


@pytest.mark.parametrize(("source", "expected"), [
    ("Three patients were hospitalized.", (True, True)),
    ("The patient was not hospitalized.", (False, True)),
    ("They aren't hospitalized.", (True, True)),
    ("They have been quickly hospitalized.", (True, True)),
    ("She has been hospitalized.", (False, True)),
    ("They have hospitalized them.", (False, True)),  # `have` alone: invariable
    ("Patients will be hospitalized.", (True, True)),  # the subject before `be`
    ("He will be hospitalized.", (False, True)),
    ("the hospitalized patients", (True, False)),
    ("people hospitalized with it", (True, False)),
    ("a hospitalized patient", (False, False)),
])
def test_participle_number(source, expected):
    start = source.index("hospitalized")
    assert participle_number(source, start, start + len("hospitalized")) == expected


def test_written_says_the_form_read_and_what_to_write():
    glossary = Glossary.from_entries([("hospitalize", "hospitaliser"), ("mask", "masque"),
                                      ("Firefox", "Firefox")])
    source = "Two men were hospitalized in masks; Firefox."
    hospitalized, masks, firefox = (written(m, source) for m in glossary.find(source))
    assert (hospitalized.text, hospitalized.form) == ("hospitalisés", "participle")
    assert hospitalized.accepted is not None, "the model's participle of that number is kept"
    assert (masks.text, masks.form, masks.accepted) == ("masques", "plural", None)
    assert firefox.text == "Firefox"


def test_an_entry_that_starts_with_be_agrees_with_its_own_be():
    glossary = Glossary.from_entries([("be infected", "être infecté")])
    [were] = glossary.find("They were infected.")
    [was] = glossary.find("He was infected.")
    assert (written(were, "They were infected.").text, were.text) == ("infectés", "were infected")
    assert written(was, "He was infected.").text == "infecté"
