"""Glossaries: reading files and entries (each bad row named by its line), and finding terms."""

import dataclasses

import pytest

from documents.glossary import (
    MAX_ENTRIES,
    MAX_TERM_CHARS,
    Glossary,
    GlossaryEntry,
    GlossaryError,
)


def found(glossary: Glossary, text: str) -> list[tuple[str, str]]:
    """Each match as (the text matched, found by slicing the text; the entry's target)."""
    return [(text[m.start:m.end], m.entry.target) for m in glossary.find(text)]


def glossary(*pairs, **options) -> Glossary:
    return Glossary.from_entries(pairs, **options)


# ---------------------------------------------------------------------------------------------
# Reading.


def test_tsv_with_header_comments_blank_lines_and_bom(tmp_path):
    path = tmp_path / "terms.tsv"
    path.write_bytes("\ufeffsource\ttarget\n# product names\n\nchest pain\tdouleur thoracique\n"
                     "  Firefox \t Firefox\r\n".encode())
    read = Glossary.read(path)
    assert read.entries == (GlossaryEntry("chest pain", "douleur thoracique"),
                            GlossaryEntry("Firefox", "Firefox"))
    assert [e.keep for e in read.entries] == [False, True]


def test_csv_with_quotes_and_language_header(tmp_path):
    path = tmp_path / "terms.csv"
    path.write_text('en,fr\n"pain, chest","douleur, thoracique"\nflu,grippe\n', encoding="utf-8")
    assert Glossary.read(path).entries == (GlossaryEntry("pain, chest", "douleur, thoracique"),
                                           GlossaryEntry("flu", "grippe"))


def test_entries_from_mappings_pairs_and_entries():
    read = Glossary.from_entries([{"source": "flu", "target": "grippe"}, ("mask", "masque"),
                                  GlossaryEntry("cough", "toux")])
    assert [e.source for e in read.entries] == ["flu", "mask", "cough"]
    assert len(Glossary.from_entries([])) == 0, "an empty list applies nothing"


@pytest.mark.parametrize(("text", "line", "says"), [
    ("flu\tgrippe\nmask masque\n", 2, "no tab"),
    ("flu\tgrippe\n\nmask\tmasque\textra\n", 3, "one tab only"),
    ("flu\t\n", 1, "target is empty"),
    ("\tgrippe\n", 1, "source is empty"),
    ("# c\nflu\tgrippe\nFLU\tinfluenza\n", 3, "already translated 'grippe' (line 2)"),
    (f"flu\t{'x' * (MAX_TERM_CHARS + 1)}\n", 1, "MAX_TERM_CHARS"),
    ("--\ttiret\n", 1, "no letter or digit"),
    ("Hello %s\tBonjour %s\n", 1, "placeholder '%s'"),
    ("name\t{name}\n", 1, "placeholder '{name}'"),
    ("<b>bold</b>\tgras\n", 1, "markup"),
])
def test_a_bad_row_is_named_by_its_line_and_nothing_is_loaded(text, line, says):
    with pytest.raises(GlossaryError) as raised:
        Glossary.parse(text, name="terms.tsv")
    assert raised.value.line == line
    assert str(raised.value).startswith(f"terms.tsv, line {line}: ")
    assert says in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_file_errors_not_utf8_bad_csv_empty_and_too_many(tmp_path):
    with pytest.raises(GlossaryError, match=r"line 2: not UTF-8"):
        Glossary.parse(b"flu\tgrippe\nfi\xe8vre\tfever\n")
    with pytest.raises(GlossaryError, match=r"line 1: expected 2 columns, source,target"):
        Glossary.parse("a,b,c\n", "csv")
    with pytest.raises(GlossaryError, match="no entries"):
        Glossary.parse("# only a comment\n")
    rows = "".join(f"term{k}\tterme{k}\n" for k in range(MAX_ENTRIES + 1))
    with pytest.raises(GlossaryError, match=f"line {MAX_ENTRIES + 1}: more than MAX_ENTRIES"):
        Glossary.parse(rows)
    with pytest.raises(FileNotFoundError):
        Glossary.read(tmp_path / "absent.tsv")
    with pytest.raises(ValueError, match="format must be one of"):
        Glossary.parse("a\tb\n", "xlsx")


def test_bad_entries_are_numbered_from_one():
    with pytest.raises(GlossaryError, match=r"^entry 2: an entry is \{\"source\""):
        Glossary.from_entries([("flu", "grippe"), {"source": "mask"}])
    with pytest.raises(GlossaryError, match=r"^entry 1: an entry is a source and a target"):
        Glossary.from_entries(["flu"])
    with pytest.raises(GlossaryError, match=r"^entry 1: the target must be text"):
        Glossary.from_entries([("flu", 3)])


def test_same_term_twice_with_the_same_target_is_one_entry():
    assert len(glossary(("flu", "grippe"), ("Flu", "grippe"))) == 1


# ---------------------------------------------------------------------------------------------
# Matching.


def test_multi_word_terms_and_longest_match_first():
    terms = glossary(("clinical trial", "essai clinique"), ("trial", "essai"),
                     ("trial design", "plan d'essai"), ("clinical", "clinique"))
    assert found(terms, "A clinical trial design.") == [("clinical trial", "essai clinique")]
    assert found(terms, "The trial design and a clinical note.") == [
        ("trial design", "plan d'essai"), ("clinical", "clinique")]


def test_matches_never_overlap_the_longer_wins_then_the_leftmost():
    terms = glossary(("new york", "New York"), ("york times", "York Times"), ("times", "fois"),
                     ("york inn", "auberge de York"))
    assert found(terms, "new york times, three times") == [
        ("york times", "York Times"), ("times", "fois")]
    assert found(terms, "new york inn") == [("new york", "New York")]  # 8 characters each


def test_case_insensitive_by_default_exact_case_on_request():
    pairs = (("WHO", "OMS"), ("flu", "grippe"))
    # A term written in capitals matches in capitals only (was: `Who` too).
    assert found(glossary(*pairs), "Who said FLU? The WHO.") == [
        ("FLU", "grippe"), ("WHO", "OMS")]
    exact = glossary(*pairs, exact_case=True)
    assert found(exact, "Who said FLU? The WHO and the flu.") == [("WHO", "OMS"),
                                                                  ("flu", "grippe")]
    assert found(dataclasses.replace(exact, exact_case=False, acronym_case=False), "who") == [
        ("who", "OMS")]


def test_an_acronym_matches_in_capitals_only_and_other_terms_in_any_case():
    terms = glossary(("WHO", "OMS"), ("Apple", "Apple"), ("apple pie", "tarte aux pommes"),
                     ("HIV test", "test VIH"), ("ATM", "DAB"))
    text = "The people who were tested, the WHO and WHO's staff"
    assert found(terms, text) == [("WHO", "OMS"), ("WHO's", "OMS")]
    assert found(terms, "an apple, APPLE, Apple") == [("apple", "Apple"), ("APPLE", "Apple"),
                                                      ("Apple", "Apple")]
    assert found(terms, "Apple Pie") == [("Apple Pie", "tarte aux pommes")]
    assert found(terms, "an HIV Test, an hiv test") == [("HIV Test", "test VIH")]
    assert found(terms, "two ATMs, two atms") == [("ATMs", "DAB")], "the ending in any case"
    assert found(dataclasses.replace(terms, acronym_case=False), "who") == [("who", "OMS")]


def test_english_plurals_s_es_ies_unless_turned_off():
    terms = glossary(("mask", "masque"), ("virus", "virus"), ("country", "pays"),
                     ("face shield", "visière"), ("ATM", "DAB"))
    text = "masks, viruses, countries, face shields, ATMs"
    matches = terms.find(text)
    assert [text[m.start:m.end] for m in matches] == text.split(", ")
    assert all(m.plural for m in matches)
    assert terms.find("the mask")[0].plural is False
    assert found(glossary(("mask", "masque"), inflect=False), "masks and a mask") == [
        ("mask", "masque")]


def test_verb_forms_of_a_verb_entry_regular_and_irregular():
    terms = glossary(("hospitalize", "hospitaliser"), ("take", "prendre"),
                     ("spread", "se propager"))
    text = ("hospitalize, hospitalizes, hospitalized, hospitalizing; take, takes, took, taken, "
            "taking; spread, spreads, spreading")
    matches = terms.find(text)
    assert [(m.text, m.form) for m in matches] == [
        ("hospitalize", ""), ("hospitalizes", "third person"), ("hospitalized", "past"),
        ("hospitalizing", "ing"), ("take", ""), ("takes", "third person"), ("took", "past"),
        ("taken", "participle"), ("taking", "ing"), ("spread", ""),
        ("spreads", "third person"), ("spreading", "ing")]
    assert all(m.verb for m in matches)
    assert found(glossary(("hospitalize", "hospitaliser"), inflect=False),
                 "hospitalized, hospitalize") == [("hospitalize", "hospitaliser")]


def test_a_verb_entry_is_told_by_its_french_infinitive_or_an_english_verb_only():
    # `spread` is a noun and a verb: a French noun makes the entry a noun.
    noun = glossary(("spread", "propagation"), ("outbreak", "flambée"), ("nurse", "infirmier"))
    assert [(m.text, m.form, m.verb) for m in noun.find("spreads, spreading, outbreaks, nurses")
            ] == [("spreads", "plural", False), ("outbreaks", "plural", False),
                  ("nurses", "plural", False)]
    # `infect` is only a verb, whatever its target.
    assert [m.form for m in glossary(("infect", "infection")).find("infected")] == ["past"]


def test_multi_word_terms_inflect_their_head_word():
    terms = glossary(("face mask", "masque"), ("wash your hands", "se laver les mains"),
                     ("cup of tea", "tasse de thé"))
    assert [(m.text, m.form) for m in terms.find(
        "Face masks; washed your hands, washing your hands; two cups of tea.")] == [
        ("Face masks", "plural"), ("washed your hands", "past"),
        ("washing your hands", "ing"), ("cups of tea", "plural")]
    assert [m.text for m in glossary(("wash your hand", "se laver la main")).find(
        "wash your hands")] == ["wash your hands"], "a verb's object in the plural too"


def test_possessives_and_comparatives():
    terms = glossary(("WHO", "OMS"), ("nurse", "infirmière"), ("child", "enfant"),
                     ("severe", "grave"), ("test", "test"))
    assert [(m.text, m.form) for m in terms.find(
        "WHO's staff, the nurse's, the nurses’ room, children's")] == [
        ("WHO's", "possessive"), ("nurse's", "possessive"), ("nurses’", "plural possessive"),
        ("children's", "plural possessive")]
    assert [(m.text, m.form) for m in terms.find("severer, the severest, a tester")] == [
        ("severer", "comparative"), ("severest", "superlative")], "`test` has none"


def test_alternative_target_forms_are_read_and_checked():
    read = Glossary.parse("eye\t œil | yeux \n")
    assert read.entries[0].target == "œil|yeux"
    assert read.entries[0].forms == ("œil", "yeux")
    with pytest.raises(GlossaryError, match=r"line 1: the target 'œil\|' has an empty form"):
        Glossary.parse("eye\tœil|\n")


def test_an_entry_in_the_plural_beats_the_plural_of_another():
    terms = glossary(("glass", "verre"), ("glasses", "lunettes"))
    assert found(terms, "my glasses") == [("glasses", "lunettes")]
    assert not terms.find("my glasses")[0].plural


def test_whole_words_only():
    terms = glossary(("flu", "grippe"), ("art", "art"))
    assert found(terms, "fluid, influenza, start, artist") == []
    assert found(terms, "(flu), «art»; flu-like") == [("flu", "grippe"), ("art", "art"),
                                                      ("flu", "grippe")]


def test_punctuation_inside_a_term_matches_whatever_the_spacing():
    terms = glossary(("COVID-19", "COVID-19"), ("Alzheimer's disease", "maladie d'Alzheimer"))
    assert found(terms, "COVID - 19 and Alzheimer’s disease") == [
        ("COVID - 19", "COVID-19"), ("Alzheimer’s disease", "maladie d'Alzheimer")]


def test_never_inside_a_placeholder():
    assert found(glossary(("name", "nom")), "Hello {name}, your name is %(name)s.") == [
        ("name", "nom")]


def test_no_match_in_empty_text_or_with_an_empty_glossary():
    assert glossary(("flu", "grippe")).find("") == []
    assert Glossary().find("flu") == []


def test_non_ascii_terms():
    terms = glossary(("café", "café"), ("naïve Bayes", "Bayes naïf"))
    assert found(terms, "Café and NAÏVE BAYES.") == [("Café", "café"),
                                                     ("NAÏVE BAYES", "Bayes naïf")]


def test_merged_entries_of_the_other_replace_the_same_terms_here():
    base = Glossary.from_entries([("face mask", "masque"), ("Flu", "grippe")])
    extra = Glossary.from_entries([("flu", "influenza"), ("hand", "main")])

    merged = base.merged(extra)

    assert [(e.source, e.target) for e in merged.entries] == [
        ("face mask", "masque"), ("flu", "influenza"), ("hand", "main")]
    assert [m.entry.target for m in merged.find("Flu and face masks")] == ["influenza", "masque"]
    assert base.merged(extra, exact_case=True).find("FLU") == []
    assert len(base) == 2, "neither glossary changes"
    text = "Face masks, flu, the hand's, hands"
    assert merged.find(text) == Glossary(merged.entries).find(text), "its forms reused as made"
    assert dataclasses.replace(merged, acronym_case=False).find("FLU")[0].entry.target == (
        "influenza")
