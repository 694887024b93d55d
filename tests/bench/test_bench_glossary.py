"""`bench/glossary.py`: the terminology scores, with a fake translator that knows no term."""

import json

import numpy as np
import pytest

from bench.glossary import (
    ANNOTATED,
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
from documents.term_annotation import MARK
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


def copies_annotations(sentences):
    """A model trained with annotations, perfectly: `mot` for each English word, the words
    between marks copied in place of the last word of their term; each linked to its own."""
    out = []
    for sentence in sentences:
        words, inside, links, written = sentence.split(), False, [], []
        for i, word in enumerate(words):
            if word.startswith(MARK):
                inside = not inside
                if not inside or written[-1:] != ["mot"]:
                    continue
                written.pop()  # the term's own `mot`: the annotation takes its place
                links = [link for link in links if link[1] < len(written)]
                continue
            links.append((i, len(written)))
            written.append(word if inside or word.isdigit() else "mot")
        out.append(Translation(sentence, (), (Hypothesis(
            text=" ".join(written), target_tokens=(), score=-1.0, alignment=np.zeros((0, 0)),
            word_alignment=tuple(links)),)))
    return out


def test_a_model_trained_with_annotations_writes_the_terms_itself(tmp_path):
    found = compare(ROWS, Translations(word_for_word), Translations(copies_annotations))
    assert found[ANNOTATED[0]]["matched"] == 0, "no annotation: no term"
    assert found[ANNOTATED[1]]["placed"]["aligned"] == 2
    annotated = found[ANNOTATED[2]]
    assert annotated["matched"] == annotated["terms"] == 2
    assert annotated["placed"]["found"] == 2 and annotated["placed"]["aligned"] == 0
    # In dictionary forms the glossary says `symptôme`, annotated `symptômes` as `symptoms`
    # asks; the other term's dictionary form (`lavez-vous les main`) is none of its forms.
    assert found[ANNOTATED[3]]["reference form"] == 1
    assert copies_annotations([f"a b {MARK} x y {MARK} c"])[0].text == "mot x y mot"


def test_main_says_where_it_looked_when_the_set_is_absent(tmp_path):
    with pytest.raises(SystemExit, match="No terminology set at .*terminology-enfr"):
        main(["--data", str(tmp_path)])
