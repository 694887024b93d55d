"""Glossaries in documents: terms written per sentence, joined, placed on the document."""

import numpy as np
import pytest

from documents.glossary import Glossary
from documents.glossary_documents import apply_glossary_to_documents
from documents.markup import plan_document
from documents.sentences import join_documents, sentences_of
from nmt.types import Hypothesis, Translation

GLOSSARY = Glossary.from_entries([("face mask", "masque"), ("hand", "main")])
# What a model would answer, each target word linked to its source word.
FRENCH = {
    "Wear a face mask.": "Portez un couvre visage.",
    "Wash your hands.": "Lavez vos paluches.",
    "Wear a face mask &": "Portez un couvre visage &",
    "Stay home.": "Restez chez vous.",
    "Click %s to wear a face mask.": "Cliquez %s pour porter un couvre visage.",
    "Click to wear a face mask.": "Cliquez pour porter un couvre visage.",
}


def _translated(sentence: str) -> Translation:
    text = FRENCH[sentence]
    links = tuple((i, i) for i in range(min(len(sentence.split()), len(text.split()))))
    return Translation(sentence, (), (Hypothesis(text, (), -1.0, np.zeros((0, 0)), links),))


def _translate(text: str, format: str, glossary=GLOSSARY, placeholders: bool = True):
    plans = [plan_document(text, format, placeholders)]
    results = [_translated(s) for s in sentences_of(plans)]
    [document] = apply_glossary_to_documents(plans, results, glossary)
    return document


@pytest.mark.parametrize("text, format, expected", [
    ("Wear a  face mask.\n\nWash your hands.", "text", "Portez un masque.\n\nLavez vos mains."),
    ("<p>Wear a <b>face mask</b>.</p><p>Wash your <i>hands</i>.</p>", "html",
     "<p>Portez un <b>masque</b>.</p><p>Lavez vos <i>mains</i>.</p>"),
    ("<g id='1'>Wear a face <x id='2'/>mask</g>. Stay home.", "xml", None),
])
def test_terms_are_written_before_the_document_is_joined(text, format, expected):
    document = _translate(text, format)

    if expected is not None:
        assert document.text == expected, "the tags follow the terms' word links"
    assert [t.source for t in document.applied_terms][:1] == ["face mask"]
    for term in document.applied_terms:
        assert document.text[slice(*term.target_span)] == term.target
        source = document.source[slice(*term.source_span)]
        plain = source.replace("<x id='2'/>", "")
        assert plain.casefold() == term.source.casefold() or plain == "hands", source


def test_source_spans_skip_the_tags_around_and_inside_a_term():
    document = _translate("<p>Wear a <b>face mask</b>.</p>", "html")

    [term] = document.applied_terms
    assert document.source[slice(*term.source_span)] == "face mask"
    assert document.text[slice(*term.target_span)] == "masque"
    sentence = document.sentences[0].result.best
    assert sentence.applied_terms[0].source_span == (7, 16), "on the sentence as read"


def test_an_entity_counts_as_the_character_it_stands_for():
    document = _translate("<p>Wear a face mask &amp;</p>", "html")

    [term] = document.applied_terms
    assert document.source[slice(*term.source_span)] == "face mask"
    assert document.text == "<p>Portez un masque &amp;</p>"


def test_placeholders_stay_and_spans_count_the_document():
    document = _translate("Click %s to wear a face mask.", "text")

    assert document.text == "Cliquez %s pour porter un masque."
    [term] = document.applied_terms
    assert document.source[slice(*term.source_span)] == "face mask"
    assert document.text[slice(*term.target_span)] == "masque"


@pytest.mark.parametrize("glossary", [None, Glossary()])
def test_without_a_glossary_the_document_is_join_documents(glossary):
    text = "<p>Wear a <b>face mask</b>.</p>"
    plans = [plan_document(text, "html")]
    results = [_translated(s) for s in sentences_of(plans)]

    [document] = apply_glossary_to_documents(plans, results, glossary)

    assert document == join_documents(plans, results)[0]
    assert document.applied_terms == ()


def test_a_document_without_a_term_has_none():
    document = _translate("Stay home.", "text")

    assert document.text == "Restez chez vous." and document.applied_terms == ()
