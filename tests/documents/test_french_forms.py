"""French forms of glossary targets: plural, participle, third person, comparative."""

import pytest

from documents.french_forms import (
    Wanted,
    comparative,
    french_plural,
    is_infinitive,
    kind_of,
    participle,
    target_form,
    third_person,
)


def test_french_plural():
    assert french_plural("essai clinique") == "essais cliniques"
    assert french_plural("pandémie de coronavirus") == "pandémies de coronavirus"
    assert french_plural("signal") == "signaux"
    assert french_plural("réseau") == "réseaux"
    assert french_plural("virus") == "virus"
    assert french_plural("OMS") == "OMS"


@pytest.mark.parametrize(("term", "plural", "expected"), [
    ("hospitaliser", False, "hospitalisé"),
    ("hospitaliser", True, "hospitalisés"),
    ("se propager", True, "propagés"),  # the reflexive pronoun is the translation's
    ("transmettre", True, "transmis"),  # ends in s: the same in the plural
    ("pouvoir", False, "pu"),  # the longest ending first: not `pouvu`
    ("finir", True, "finis"),
    ("vendre", False, "vendu"),
    ("placer en quarantaine", True, "placés en quarantaine"),
    ("se laver les mains", True, "lavé les mains"),  # an object follows: invariable
    ("être infecté", True, "infectés"),
    ("hospitalisés", False, "hospitalisé"),  # a participle given: its number only
])
def test_participle(term, plural, expected):
    assert participle(term, plural) == expected


def test_third_person_comparative():
    assert third_person("se propager") == "se propage"
    assert third_person("répéter") == "répète"
    assert third_person("lever") == "lève"
    assert third_person("infecter") == "infecte"
    assert third_person("être infecté") == "est infecté"
    assert third_person("prendre") == "prend"
    assert third_person("finir") == "finir", "outside the table: the infinitive"
    assert (comparative("grave"), comparative("bon")) == ("plus grave", "meilleur")


def test_kind_of_a_form_and_the_infinitive_guess():
    assert kind_of("hospitaliser") == Wanted("infinitive")
    assert kind_of("se laver les mains") == Wanted("infinitive")
    assert kind_of("hospitalisées") == Wanted("participle", plural=True)
    assert kind_of("transmis") == Wanted("participle")
    assert kind_of("yeux") == Wanted("noun", plural=True)
    assert kind_of("plus grave") == Wanted("comparative")
    assert kind_of("flambée") == Wanted("participle"), "its ending says so: see glossary"
    for verb in ("propager", "finir", "prendre", "connaître", "voir", "étudier", "vérifier"):
        assert is_infinitive(verb), verb
    for noun in ("papier", "fichier", "visière", "lettre", "fièvre", "espoir", "salaire",
                 "cancer", "histoire"):
        assert not is_infinitive(noun), noun


def test_target_form_a_listed_form_first_else_the_rules_else_as_given():
    assert target_form(("œil", "yeux"), Wanted("noun", plural=True)) == "yeux"
    assert target_form(("œil", "yeux"), Wanted("noun")) == "œil"
    assert target_form(("essai clinique",), Wanted("noun", plural=True)) == "essais cliniques"
    assert target_form(("hospitaliser", "hospitalisées"),
                       Wanted("participle", plural=True)) == "hospitalisées"
    assert target_form(("hospitaliser",), Wanted("participle", plural=True)) == "hospitalisés"
    assert target_form(("masque",), Wanted("participle")) == "masque", "a noun stays a noun"
    with pytest.raises(ValueError, match="Received: kind='verb'"):
        Wanted("verb")
