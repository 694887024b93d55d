"""Glossary terms written into translations through word links written by hand."""

import numpy as np
import pytest

from documents.glossary import Glossary
from documents.term_annotation import MARK
from documents.terminology import (
    PLACEMENTS,
    STAND_IN,
    annotate_terms,
    apply_glossary,
    apply_terms,
    protect_terms,
)
from nmt.types import Hypothesis, Translation


def apply(source: str, target: str, links, *pairs, **options):
    """`apply_terms` with a glossary of `pairs`; every span checked by slicing the strings,
    every link checked against the words of the new text."""
    result = apply_terms(source, target, links, Glossary.from_entries(pairs), **options)
    for term in result.applied:
        assert result.text[slice(*term.target_span)] == term.target
        assert term.placement in PLACEMENTS
    words = len(result.text.split())
    assert all(0 <= j < words and 0 <= i < len(source.split()) for i, j in result.word_alignment)
    assert len(result.target_words) == words
    return result


def test_aligned_words_are_replaced_and_the_spans_slice_both_strings():
    source = "The flu is bad."
    result = apply(source, "La maladie est grave.", [(0, 0), (1, 1), (2, 2), (3, 3)],
                   ("flu", "grippe"))
    assert result.text == "La grippe est grave."
    [term] = result.applied
    assert source[slice(*term.source_span)] == "flu"
    assert (term.source, term.target, term.placement) == ("flu", "grippe", "aligned")
    assert result.word_alignment == ((0, 0), (1, 1), (2, 2), (3, 3))
    assert result.target_words == (0, None, 2, 3)


def test_a_multi_word_term_takes_its_aligned_words_from_first_to_last():
    result = apply("I have chest pain.", "J'ai mal à la poitrine.",
                   [(0, 0), (1, 0), (3, 1), (2, 4)], ("chest pain", "douleur thoracique"))
    assert result.text == "J'ai douleur thoracique."  # the final full stop stays
    assert result.word_alignment == ((0, 0), (1, 0), (2, 1), (2, 2), (3, 1), (3, 2))


def test_no_term_in_the_source_gives_the_translation_back():
    links = ((0, 0), (1, 1))
    result = apply("Hello there", "Bonjour là", links, ("flu", "grippe"))
    assert (result.text, result.word_alignment, result.applied) == ("Bonjour là", links, ())


@pytest.mark.parametrize(("source", "target", "links", "expected"), [
    # Replacing the first word of the sentence: capitalised like it.
    ("Flu is bad.", "Influenza est grave.", [(0, 0), (1, 1), (2, 2)], "Grippe est grave."),
    # A term written with a capital stays so anywhere.
    ("Ask the WHO.", "Demandez le qui.", [(0, 0), (1, 1), (2, 2)], "Demandez l'OMS."),
    # The model's lower case at the start is kept.
    ("flu again", "influenza encore", [(0, 0), (1, 1)], "grippe encore"),
])
def test_capitals(source, target, links, expected):
    assert apply(source, target, links, ("flu", "grippe"), ("WHO", "OMS")).text == expected


@pytest.mark.parametrize(("source", "target", "links", "pair", "articles", "expected"), [
    # The elided article stuck to the first aligned word stays...
    ("The infection spreads.", "L'affection se propage.", [(0, 0), (1, 0), (2, 2)],
     ("infection", "infection"), True, "L'infection se propage."),
    # ... and is written out before a consonant (its gender guessed from the final e).
    ("The infection spreads.", "L'affection se propage.", [(0, 0), (1, 0), (2, 2)],
     ("infection", "grippe"), True, "La grippe se propage."),
    ("The infection spreads.", "L'affection se propage.", [(0, 0), (1, 0), (2, 2)],
     ("infection", "grippe"), False, "L'grippe se propage."),
    # Elision before a vowel.
    ("The disease spreads.", "La maladie se propage.", [(0, 0), (1, 1), (2, 3)],
     ("disease", "affection"), True, "L'affection se propage."),
    ("lots of fever", "beaucoup de chaleur", [(0, 0), (1, 1), (2, 2)],
     ("fever", "hyperthermie"), True, "beaucoup d'hyperthermie"),
    # Number: an English plural is written in the plural, its article too.
    ("Wear masks.", "Portez le tissu.", [(0, 0), (1, 2)], ("mask", "masque"), True,
     "Portez les masques."),
    ("Wear masks.", "Portez le tissu.", [(0, 0), (1, 2)], ("mask", "masque"), False,
     "Portez le masques."),
    ("Talk to the doctors.", "Parlez à la personne.", [(0, 0), (1, 1), (2, 2), (3, 3)],
     ("doctor", "médecin"), True, "Parlez aux médecins."),
    ("Results of clinical trials", "Résultats du test", [(0, 0), (1, 1), (2, 2), (3, 2)],
     ("clinical trial", "essai clinique"), True, "Résultats des essais cliniques"),
])
def test_articles(source, target, links, pair, articles, expected):
    result = apply(source, target, links, pair, articles=articles)
    assert result.text == expected


def test_a_term_nothing_is_aligned_to_goes_next_to_its_nearest_aligned_neighbour():
    right = apply("We are in isolation now.", "Nous sommes maintenant.",
                  [(0, 0), (1, 1), (4, 2)], ("isolation", "isolement"))
    assert right.text == "Nous sommes isolement maintenant."
    assert right.applied[0].placement == "neighbour"
    assert (4, 3) in right.word_alignment  # `now.` still links to `maintenant.`
    left = apply("Tell me your symptoms.", "Dites-moi.", [(0, 0), (1, 0)],
                 ("symptoms", "symptômes"))
    assert left.text == "Dites-moi symptômes."
    nothing = apply("symptoms", "Rien.", [], ("symptoms", "symptômes"))
    assert nothing.text == "Rien symptômes."
    start = apply("Symptoms and a cold", "et un rhume", [(1, 0), (2, 1), (3, 2)],
                  ("symptoms", "symptômes"))
    assert start.text == "Symptômes et un rhume"


def test_without_insertion_an_unaligned_term_is_left_out():
    result = apply("We are in isolation now.", "Nous sommes maintenant.",
                   [(0, 0), (1, 1), (4, 2)], ("isolation", "isolement"), insert=False)
    assert (result.text, result.applied) == ("Nous sommes maintenant.", ())


def test_a_term_the_model_wrote_unaligned_is_found_not_written_twice():
    result = apply("during the flu season.", "pendant la saison de la grippe.",
                   [(0, 0), (1, 1), (3, 2), (3, 5)], ("flu", "grippe"))
    assert result.text == "pendant la saison de la grippe."
    [term] = result.applied
    assert (term.placement, term.target_span) == ("found", (24, 30))


def test_two_terms_aligned_to_the_same_word_are_both_written():
    result = apply("dry cough", "toux", [(0, 0), (1, 0)], ("dry", "sèche"), ("cough", "toux"))
    assert sorted(t.target for t in result.applied) == ["sèche", "toux"]
    assert sorted(result.text.split()) == ["sèche", "toux"]


def test_do_not_translate_keeps_the_source_as_written():
    result = apply("Open FIREFOX now.", "Ouvrez Renard maintenant.", [(0, 0), (1, 1), (2, 2)],
                   ("Firefox", "Firefox"))
    assert result.text == "Ouvrez FIREFOX maintenant."
    assert result.applied[0].target == "FIREFOX"
    at_start = apply("Firefox is fast.", "le renard est rapide.", [(0, 1), (1, 2), (2, 3)],
                     ("firefox", "firefox"))
    assert at_start.text == "le Firefox est rapide."


def test_non_ascii_and_curly_apostrophes():
    result = apply("the outbreak’s end", "la fin de l’éruption", [(0, 0), (1, 3), (2, 1)],
                   ("outbreak", "épidémie"))
    assert result.text == "la fin de l’épidémie"


HOSPITALIZE = ("hospitalize", "hospitaliser")


@pytest.mark.parametrize(("source", "target", "links", "expected", "form"), [
    # A plural form of `be` asks for the plural participle; its auxiliaries stay
    # even where they are aligned to the verb.
    ("Three patients were hospitalized yesterday.", "Trois patients ont été hôpitals hier.",
     [(0, 0), (1, 1), (2, 2), (3, 3), (3, 4), (4, 5)],
     "Trois patients ont été hospitalisés hier.", "participle"),
    ("One patient was hospitalized.", "Un patient a été hôpital.",
     [(0, 0), (1, 1), (2, 2), (3, 3), (3, 4)], "Un patient a été hospitalisé.", "participle"),
    ("They have been hospitalized.", "Ils ont été hôpitals.", [(0, 0), (1, 1), (2, 2), (3, 3)],
     "Ils ont été hospitalisés.", "participle"),
    # `have` alone: the participle does not agree.
    ("They have hospitalized three men.", "Ils ont hôpital trois hommes.",
     [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)], "Ils ont hospitalisé trois hommes.",
     "participle"),
    # No auxiliary: the plural noun beside it.
    ("hospitalized patients", "patients hôpital", [(0, 1), (1, 0)],
     "patients hospitalisés", "past"),
    # `-s`: the third person; `-ing` and the dictionary form: the infinitive.
    ("The virus spreads fast.", "Le virus court vite.", [(0, 0), (1, 1), (2, 2), (3, 3)],
     "Le virus se propage vite.", "third person"),
    ("Avoid spreading it.", "Évitez de courir.", [(0, 0), (1, 1), (1, 2)],
     "Évitez de se propager.", "ing"),
])
def test_a_verb_is_written_in_the_form_its_english_asks_for(source, target, links, expected,
                                                            form):
    result = apply(source, target, links, HOSPITALIZE, ("spread", "se propager"))
    assert result.text == expected
    [term] = result.applied
    assert term.form == form
    assert term.matched == source[slice(*term.source_span)]


def test_the_models_own_form_of_the_verb_is_kept():
    result = apply("The virus spreads fast.", "Le virus se propageait vite.",
                   [(0, 0), (1, 1), (2, 2), (2, 3), (3, 4)], ("spread", "se propager"))
    assert result.text == "Le virus se propageait vite."
    assert (result.applied[0].target, result.applied[0].placement) == ("propageait", "found")
    # ... but not a participle of the wrong number.
    wrong = apply("Three men were hospitalized.", "Trois hommes ont été hospitalisé.",
                  [(0, 0), (1, 1), (2, 2), (3, 3), (3, 4)], HOSPITALIZE)
    assert wrong.text == "Trois hommes ont été hospitalisés."


def test_a_verb_entry_used_as_a_noun_takes_its_noun_form_or_is_left_out():
    links = [(0, 0), (1, 1), (2, 2), (3, 3)]
    source, target = "The spread continues.", "La diffusion continue ."
    assert apply(source, target, links[:3], ("spread", "se propager")).applied == ()
    result = apply(source, target, links[:3], ("spread", "se propager|propagation"))
    assert result.text == "La propagation continue ."
    assert apply("Two coughs.", "Deux toux.", links[:2],
                 ("cough", "tousser|toux")).text == "Deux toux."


def test_the_old_way_writes_the_target_as_given():
    result = apply("Three patients were hospitalized.", "Trois patients ont été hôpitals.",
                   [(0, 0), (1, 1), (2, 2), (3, 3), (3, 4)], HOSPITALIZE, agree=False)
    assert result.text == "Trois patients ont été hospitaliser."


def test_alternative_forms_the_one_the_source_asks_for_is_written():
    pair = ("eye", "œil|yeux")
    assert apply("my eyes", "mes mains", [(0, 0), (1, 1)], pair).text == "mes yeux"
    assert apply("my eye", "ma main", [(0, 0), (1, 1)], pair).text == "ma œil"
    feminine = ("hospitalize", "hospitaliser|hospitalisées")
    assert apply("Nurses were hospitalized.", "Les infirmières ont été hôpital.",
                 [(0, 0), (0, 1), (1, 2), (1, 3), (2, 4)], feminine).text == (
        "Les infirmières ont été hospitalisées.")


def test_possessive_and_comparative_terms():
    result = apply("The WHO's advice", "Le conseil de l'organisation",
                   [(0, 0), (1, 2), (1, 3), (2, 1)], ("WHO", "OMS"))
    assert result.text == "Le conseil de l'OMS"  # the `de` of the possessive stays
    assert (result.applied[0].matched, result.applied[0].form) == ("WHO's", "possessive")
    comparative = apply("a severer case", "un cas dur", [(0, 0), (1, 2), (2, 1)],
                        ("severe", "grave"))
    assert comparative.text == "un cas plus grave"


def test_who_the_pronoun_is_left_alone():
    source = "The people who were tested stayed at home."
    target = "Les gens qui ont été testés sont restés à la maison."
    result = apply(source, target, [(0, 0), (1, 1), (2, 2), (3, 3), (3, 4), (4, 5)],
                   ("WHO", "OMS"))
    assert (result.text, result.applied) == (target, ())


def test_apply_glossary_rewrites_every_hypothesis_with_its_rows():
    def hypothesis(text, links):
        words = len(text.split())
        return Hypothesis(text=text, target_tokens=(), score=-1.0,
                          alignment=np.zeros((0, 0)), word_alignment=links,
                          word_matrix=np.arange(words * 3, dtype=np.float32).reshape(words, 3),
                          word_scores=-np.arange(1, words + 1, dtype=np.float32))
    translation = Translation("The flu spreads", (), (
        hypothesis("La maladie progresse", ((0, 0), (1, 1), (2, 2))),
        hypothesis("Une infection progresse", ((0, 0), (1, 1), (2, 2)))))
    glossary = Glossary.from_entries([("flu", "grippe")])
    new, applied = apply_glossary(translation, glossary)
    assert [h.text for h in new.nbest] == ["La grippe progresse", "Une grippe progresse"]
    assert applied[0].target_span == (3, 9)
    best = new.best
    np.testing.assert_array_equal(best.word_matrix[[0, 2]], translation.best.word_matrix[[0, 2]])
    assert not best.word_matrix[1].any() and best.word_scores[1] == 0.0
    unchanged, none = apply_glossary(translation, Glossary.from_entries([("cat", "chat")]))
    assert unchanged.nbest == translation.nbest and none == ()


def test_each_hypothesis_carries_its_own_terms():
    def hypothesis(text, links):
        return Hypothesis(text, (), -1.0, np.zeros((0, 0)), links)
    translation = Translation("The flu spreads", (), (
        hypothesis("La maladie progresse", ((0, 0), (1, 1), (2, 2))),
        hypothesis("Elle progresse", ((0, 0), (2, 1)))))

    new, applied = apply_glossary(translation, Glossary.from_entries([("flu", "grippe")]))

    assert new.best.applied_terms == applied
    assert [h.applied_terms[0].target_span for h in new.nbest] == [(3, 9), (5, 11)]
    assert [h.text[slice(*h.applied_terms[0].target_span)] for h in new.nbest] == [
        "grippe", "grippe"]
    assert new.nbest[1].applied_terms[0].placement == "neighbour"
    assert all(h.applied_terms == () for h in translation.nbest), "the input is not changed"


def test_protected_terms_are_read_as_numbers_and_put_back():
    glossary = Glossary.from_entries([("chest pain", "douleur thoracique"), ("flu", "grippe")])
    protected = protect_terms(f"{STAND_IN} days of chest pain and flu", glossary)
    assert protected.text == f"{STAND_IN} days of {STAND_IN + 1} and {STAND_IN + 2}"
    # The model copies the first stand-in but not the second, which links to `grippale`.
    translation = f"{STAND_IN} jours de {STAND_IN + 1} et grippale"
    result = protected.restore(translation, [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5)])
    assert result.text == f"{STAND_IN} jours de douleur thoracique et grippe"
    assert [t.placement for t in result.applied] == ["copied", "aligned"]
    for term in result.applied:
        assert result.text[slice(*term.target_span)] == term.target
        assert protected.given[slice(*term.source_span)] in ("chest pain", "flu")
    # Links count the words given: `chest pain` (3, 4) -> `douleur thoracique` (3, 4).
    assert {(3, 3), (3, 4), (4, 3), (4, 4), (6, 6)} <= set(result.word_alignment)


def test_protecting_a_sentence_without_terms_reads_it_as_given():
    protected = protect_terms("Nothing here.", Glossary.from_entries([("flu", "grippe")]))
    assert protected.text == "Nothing here."
    assert protected.restore("Rien ici.", [(0, 0), (1, 1)]).text == "Rien ici."


def test_annotated_terms_carry_the_form_the_english_asks_for():
    glossary = Glossary.from_entries([("hospitalize", "hospitaliser"), ("outbreak", "flambée")])
    read = annotate_terms("Two patients were hospitalized after outbreaks.", glossary)
    assert read.text == (f"Two patients were hospitalized {MARK} hospitalisés {MARK} after "
                         f"outbreaks {MARK} flambées {MARK}.")
    assert [t.words for t in read.terms] == [(3, 4, 5, 6), (8, 9, 10, 11)]
    # The model wrote the first term (and a stray mark), not the second: `épidémies`
    # (word 5) is linked to the annotation's words, and replaced.
    written = f"Deux patients ont été hospitalisés {MARK} après des épidémies."
    links = [(0, 0), (1, 1), (2, 2), (3, 3), (3, 4), (7, 6), (9, 8), (10, 8)]
    result = read.restore(written, links)
    assert result.text == "Deux patients ont été hospitalisés après des flambées."
    assert [t.placement for t in result.applied] == ["found", "aligned"]
    for term in result.applied:
        assert result.text[slice(*term.target_span)] == term.target
    # Links count the words given: `outbreaks.` is word 5 there, `flambées.` word 7 here.
    assert (5, 7) in result.word_alignment and (3, 4) in result.word_alignment
    assert all(i < 6 and j < 8 for i, j in result.word_alignment)


def test_a_sentence_holding_the_mark_is_read_as_given_and_its_terms_placed_after():
    glossary = Glossary.from_entries([("flu", "grippe")])
    read = annotate_terms(f"flu {MARK} here", glossary)
    assert read.text == f"flu {MARK} here"
    assert read.restore("grippale ici", [(0, 0), (2, 1)]).text == "grippe ici"
