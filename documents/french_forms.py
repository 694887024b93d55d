"""The French form a glossary target takes where the English asks for one.

A glossary target is a dictionary form (`essai clinique`, `hospitaliser`);
the source may ask for another: a plural (`clinical trials` -> `essais
cliniques`), a past participle (`were hospitalized` -> `hospitalisés`), the
third person (`spreads` -> `se propage`), a comparative (`more severe`,
`severer` -> `plus grave`). An entry may list the forms the rules cannot make
(`œil|yeux`); `target_form` picks among them:

    target_form(("hospitaliser",), Wanted("participle", plural=True))  -> "hospitalisés"
    target_form(("œil", "yeux"), Wanted("noun", plural=True))          -> "yeux"

How a form is read (`kind_of`): a first word (after `se`/`s'`) ending in
-er, -ir, -re or -oir is an infinitive; ending in -é(e)(s) (or an irregular
participle: `pris`, `mis`, `fait`...) a participle; `plus ...`, `meilleur`,
`mieux`, `pire` a comparative; anything else a noun (or adjective), plural
when its first word ends in s or x.

Regular rules only: gender is never guessed (participles are masculine), an
irregular verb outside the small table keeps its infinitive in the third
person. Nothing here imports TensorFlow.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

KINDS = ("noun", "infinitive", "participle", "third person", "comparative")

_PREPOSITIONS = frozenset("de d' du des à au aux en pour sur avec par sans contre entre chez"
                          .split())
_ELIDED = re.compile(r"(?<!\w)(jusqu|lorsqu|puisqu|qu|[cdjlmnst])['’]$", re.IGNORECASE)
_DETERMINERS = frozenset("le la les l' l’ un une des du son sa ses leur leurs votre vos notre nos"
                         " mon ma mes ce cet cette ces".split())
_REFLEXIVE = re.compile(r"^(se |s['’])", re.IGNORECASE)
_INFINITIVE = re.compile(r"(er|ir|re|oir)$")
# The endings that make a French infinitive, strictly: not `papier`, `visière`, `lettre`, `espoir`.
_VERB_ENDING = re.compile(
    r"(?:[^i]er|fier|plier|dier|oublier|publier|ocier|écier|ercier|[^o]ir|ndre|rdre|udre|ttre"
    r"|[aoî]ître|^être|[^oa]ire|^boire|croire|vivre|suivre|ncre|mpre|clure|^(?:satis|dé|re|contre)?faire|plaire|^taire|traire"
    r"|(?:^v|pouv|sav|dev|cev|voul|fall|val|asse|mouv|pleuv)oir)$")
# Nouns and adjectives with a verb's ending, common in glossaries.
_NOT_VERBS = frozenset("""hiver mer fer enfer cancer hier cher fier amer super laser poster
    lettre leader manager cluster danger étranger léger désir plaisir loisir avenir soupir empire
    navire sourire délire""".split())
_PARTICIPLE = re.compile(r"ée?s?$")
# Past participles by infinitive ending, the longest ending that fits first: `transmettre`
# -> `transmis`, `pouvoir` -> `pu` (not `pouvu`), `hospitaliser` -> `hospitalisé`.
_IRREGULAR = sorted((
    ("prendre", "pris"), ("mettre", "mis"), ("faire", "fait"), ("dire", "dit"),
    ("écrire", "écrit"), ("uire", "uit"), ("ouvrir", "ouvert"), ("couvrir", "couvert"),
    ("offrir", "offert"), ("souffrir", "souffert"), ("venir", "venu"), ("tenir", "tenu"),
    ("voir", "vu"), ("avoir", "eu"), ("être", "été"), ("pouvoir", "pu"), ("vouloir", "voulu"),
    ("savoir", "su"), ("devoir", "dû"), ("cevoir", "çu"), ("boire", "bu"), ("lire", "lu"),
    ("croire", "cru"), ("naître", "né"), ("aître", "u"), ("mourir", "mort"),
    ("courir", "couru"), ("vivre", "vécu"), ("suivre", "suivi"), ("rire", "ri"),
    ("aindre", "aint"), ("eindre", "eint"), ("oindre", "oint"), ("soudre", "solu"),
    ("quérir", "quis"), ("asseoir", "assis"), ("plaire", "plu"), ("vaincre", "vaincu"),
    ("clure", "clu"), ("ir", "i"), ("re", "u"), ("er", "é")), key=lambda e: -len(e[0]))
# Irregular participles read as such (`kind_of`), and the regular ones in -é(e)(s).
_PARTICIPLES = frozenset("""pris compris appris surpris mis admis permis transmis remis soumis
    fait dit écrit décrit prescrit inscrit conduit réduit traduit construit détruit introduit
    ouvert couvert découvert offert souffert venu devenu prévenu tenu obtenu maintenu vu prévu
    eu été pu voulu su dû reçu aperçu bu lu cru né connu reconnu mort vécu suivi atteint peint
    craint éteint résolu acquis assis vaincu""".split())
# Third person singular of verbs the -er rule does not make.
_THIRD = {"être": "est", "avoir": "a", "aller": "va", "faire": "fait", "dire": "dit",
          "pouvoir": "peut", "vouloir": "veut", "devoir": "doit", "savoir": "sait",
          "prendre": "prend", "mettre": "met", "voir": "voit", "venir": "vient",
          "tenir": "tient", "appeler": "appelle", "jeter": "jette"}
_COMPARATIVE = {"bon": "meilleur", "bonne": "meilleure", "bien": "mieux"}
_COMPARATIVES = frozenset({"meilleur", "meilleure", "meilleurs", "meilleures", "mieux", "pire",
                           "pires"})


@dataclasses.dataclass(frozen=True)
class Wanted:
    """The form the source asks of a target.

    Attributes:
        kind: one of `KINDS` (`noun` also for adjectives and anything else).
        plural: in the plural (for a noun or a participle).
    """

    kind: str = "noun"
    plural: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}. Received: kind={self.kind!r}")


def target_form(forms: Sequence[str], wanted: Wanted) -> str:
    """The form to write: the first of `forms` (the entry's target, then its alternatives)
    that reads as `wanted` (`kind_of`), else the first made into it by the rules, else
    the first as it is (a form the rules cannot make)."""
    for form in forms:
        if kind_of(form) == wanted:
            return form
    return made(forms[0], wanted) or forms[0]


def kind_of(form: str) -> Wanted:
    """What a French form reads as (see the module docstring)."""
    words = _REFLEXIVE.sub("", form).split(" ")
    first = words[0].casefold()
    if (first in ("plus", "moins") and len(words) > 1) or first in _COMPARATIVES:
        return Wanted("comparative")
    if (_PARTICIPLE.search(first) and len(first) > 3) or first in _PARTICIPLES:
        return Wanted("participle", first.endswith("s") and first not in _PARTICIPLES)
    if first.endswith("s") and first[:-1] in _PARTICIPLES:
        return Wanted("participle", True)
    if is_infinitive(first) and (_REFLEXIVE.match(form) or len(words) <= 4):
        return Wanted("infinitive")
    return Wanted("noun", first[-1:] in ("s", "x"))


def is_infinitive(word: str) -> bool:
    """`word` reads as a French infinitive (`hospitaliser`, `finir`, `prendre`): a guess
    on its ending that leaves out the nouns ending as verbs do that glossaries hold
    most (`papier`, `fièvre`, `lettre`, `espoir`, `cancer`)."""
    word = word.casefold()
    return len(word) > 3 and word not in _NOT_VERBS and bool(_VERB_ENDING.search(word))


def made(form: str, wanted: Wanted) -> str | None:
    """`form` made into `wanted` by the regular rules; None when they cannot (a noun
    asked for as a verb form)."""
    have = kind_of(form)
    if wanted.kind == "noun":  # any target reads as a noun: in the plural, as before
        return french_plural(form) if wanted.plural and not have.plural else form
    if wanted.kind == "comparative":
        return comparative(form) if have.kind == "noun" and " " not in form else None
    if have.kind not in ("infinitive", "participle"):
        return None
    if wanted.kind == "participle":
        return participle(form, wanted.plural)
    if have.kind == "participle":
        return None
    return third_person(form) if wanted.kind == "third person" else form


def french_plural(term: str) -> str:
    """`term` in the plural, by the regular rules, on its words up to a preposition.

    `essai clinique` -> `essais cliniques`, `signal` -> `signaux`, `réseau` ->
    `réseaux`, `pandémie de coronavirus` -> `pandémies de coronavirus`;
    words ending in s, x or z, and words in capitals (`OMS`), stay.
    """
    words = term.split(" ")
    for k, word in enumerate(words):
        if word.casefold() in _PREPOSITIONS or _ELIDED.search(word):
            break
        if not word.isalpha() or word.isupper() or word[-1] in "sxzSXZ":
            continue
        if word.endswith("al"):
            words[k] = word[:-2] + "aux"
        elif word.endswith(("eau", "au", "eu")):
            words[k] = word + "x"
        else:
            words[k] = word + "s"
    return " ".join(words)


def participle(term: str, plural: bool = False) -> str:
    """The past participle of a verb term, masculine, `plural` or not, its reflexive
    pronoun dropped (the auxiliary is the translation's): `hospitaliser` -> `hospitalisé`,
    `se laver les mains` -> `lavé les mains`, `transmettre` -> `transmis`; `être X`
    -> `X` (`être infecté` -> `infectés`: what agrees is X)."""
    words = _REFLEXIVE.sub("", term).split(" ")
    if words[0].casefold() == "être" and len(words) > 1:
        words = words[1:]
        if kind_of(words[0]).kind != "participle":
            return " ".join(words)
    first = words[0]
    have = kind_of(first)
    if have.kind == "participle":  # already one: its number only
        base = first[:-1] if have.plural else first
    else:
        base = next((first[:len(first) - len(end)] + p for end, p in _IRREGULAR
                     if first.casefold().endswith(end)), first)
    if plural and base[-1:] not in ("s", "x") and not (
            len(words) > 1 and words[1].casefold() in _DETERMINERS):  # an object: invariable
        base += "s"
    return " ".join((base, *words[1:]))


def third_person(term: str) -> str:
    """The present third person singular of a verb term: `se propager` -> `se propage`,
    `répéter` -> `répète`; an irregular verb outside the table keeps its infinitive."""
    pronoun = _REFLEXIVE.match(term)
    head = pronoun[0] if pronoun else ""
    first, _, tail = term[len(head):].partition(" ")
    key = first.casefold()
    if key in _THIRD:
        verb = _THIRD[key]
    elif key.endswith("er") and key != "aller":
        verb = re.sub(r"[ée]([^aeiouéèêy]|[bcdfgptv][rl])$", r"è\1", first[:-2]) + "e"
    else:
        return term
    return head + " ".join(filter(None, (verb, tail)))


def comparative(word: str) -> str:
    """`grave` -> `plus grave`; `bon` -> `meilleur`, `bien` -> `mieux`."""
    return _COMPARATIVE.get(word.casefold(), f"plus {word}")


def verb_stem(term: str) -> str | None:
    """The stem a verb term's forms share (`se propager` -> `propag`), for telling a form
    of it the model wrote; None when it is too short to tell (`laver` -> `lav`)."""
    first = _REFLEXIVE.sub("", term).split(" ")[0]
    match = _INFINITIVE.search(first.casefold())
    if match is None or " " in _REFLEXIVE.sub("", term):
        return None
    stem = first[:match.start()]
    return stem if len(stem) >= 4 else None
