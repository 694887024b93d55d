"""`bench/glossary.py`: the terminology scores, with a fake translator that knows no term."""

import json

import numpy as np
import pytest

from bench.glossary import (
    Translations,
    compare,
    dictionary_entry,
    main,
    reference_form,
    reference_form_matches,
    singular_entry,
    term_matches,
    window_overlap,
)
from nmt.types import Hypothesis, Translation

ROWS = [
    {"source": "your symptoms will pass", "reference": "vos symptômes vont passer",
     "terms": [{"id": "1", "source": "symptoms", "targets": ["symptôme", "symptômes"]}]},
    {"source": "wash your hands now", "reference": "lavez-vous les mains maintenant",
     "terms": [{"id": "2", "source": "wash your hands", "targets": ["lavez-vous les mains"]}]},
    {"source": "no term here", "reference": "aucun terme ici", "terms": []},
]


def word_for_word(sentences):
    """A model that writes `mot` for each English word, each linked to its own."""
    out = []
    for sentence in sentences:
        words = sentence.split()
        text = " ".join("mot" if not w.isdigit() else w for w in words)
        out.append(Translation(sentence, (), (Hypothesis(
            text=text, target_tokens=(), score=-1.0, alignment=np.zeros((0, 0)),
            word_alignment=tuple((i, i) for i in range(len(words)))),)))
    return out


def test_term_matches_counts_each_output_position_once():
    row = {"terms": [{"targets": ["grippe"]}, {"targets": ["grippe"]}]}
    assert term_matches([row], ["la grippe, pas une autre"]) == (1, 2)
    assert term_matches([row], ["Grippe et grippe."]) == (2, 2)
    assert term_matches([row], ["grippes"]) == (0, 2), "whole tokens"


def test_reference_form_and_singular_entry():
    assert reference_form(ROWS[0]["terms"][0], ROWS[0]["reference"]) == "symptômes"
    entry = singular_entry({"source": "clinical trials", "targets": ["essais cliniques"]})
    assert (entry.source, entry.target) == ("clinical trial", "essai clinique")
    assert singular_entry({"source": "virus", "targets": ["virus"]}) is None


def test_dictionary_entry_and_the_reference_form_count():
    verb = {"source": "hospitalize", "targets": ["hospitalisés", "hospitaliser"]}
    assert (dictionary_entry(verb).source, dictionary_entry(verb).target) == (
        "hospitalize", "hospitaliser")
    noun = {"source": "symptoms", "targets": ["symptômes", "symptôme"]}
    assert (dictionary_entry(noun).source, dictionary_entry(noun).target) == (
        "symptom", "symptôme")
    row = {"reference": "trois patients hospitalisés", "terms": [verb]}
    assert reference_form_matches([row], ["trois patients hospitaliser"]) == 0
    assert reference_form_matches([row], ["trois patients hospitalisés"]) == 1


def test_window_overlap():
    assert window_overlap(ROWS[:1], ["vos symptômes vont partir"]) == 2 / 3
    assert window_overlap(ROWS[:1], ["rien"]) == 0.0


def test_compare_every_method_on_a_model_that_knows_no_term(tmp_path):
    cache = tmp_path / "translations.json"
    found = compare(ROWS, Translations(word_for_word, cache))
    assert found["none"]["matched"] == 0
    assert found["aligned"]["matched"] == found["aligned"]["terms"] == 2
    assert found["aligned"]["placed"]["aligned"] == 2
    assert found["protected (stand-ins)"]["placed"]["copied"] == 2  # it copies numbers
    assert found["terms found"] == 2
    steps = [found[name]["matched"] for name in ("plurals only", "+ English forms",
                                                  "+ French agreement")]
    assert steps == [2, 2, 2]
    assert found["dictionary"]["aligned"]["terms"] == 2
    assert "your symptoms will pass" in json.loads(cache.read_text())
    again = compare(ROWS, Translations(None, cache))  # all in the cache: no model needed
    assert again["aligned"]["bleu"] == found["aligned"]["bleu"]


def test_main_says_where_it_looked_when_the_set_is_absent(tmp_path):
    with pytest.raises(SystemExit, match="No terminology set at .*terminology-enfr"):
        main(["--data", str(tmp_path)])
