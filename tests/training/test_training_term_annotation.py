"""A corpus with inline term annotations: terms drawn from word links written by hand."""

import json
import random

import pytest

from documents.term_annotation import MARK
from training import term_annotation as ta

SOURCE = "The patients were hospitalized yesterday."
TARGET = "Les patients ont été hospitalisés hier."
# Tokens: The0 patients1 were2 hospitalized3 yesterday4 .5 / Les0 patients1 ont2 été3
# hospitalisés4 hier5 .6; `were` -> `ont été`.
LINKS = {(0, 0), (1, 1), (2, 2), (2, 3), (3, 4), (4, 5), (5, 6)}


def spans(text, found):
    return [(SOURCE[slice(*s)], TARGET[slice(*t)]) for s, t in found]


def test_phrase_pairs_are_content_words_whose_links_stay_inside():
    found = ta.phrase_pairs(SOURCE, TARGET, ta.tokens(SOURCE), ta.tokens(TARGET), LINKS)
    pairs = spans(SOURCE, found)
    assert ("hospitalized", "hospitalisés") in pairs
    assert ("hospitalized yesterday", "hospitalisés hier") in pairs
    assert ("patients", "patients") in pairs
    assert ("The", "Les") not in pairs and ("were", "ont été") not in pairs, "function words"
    assert ("were hospitalized", "ont été hospitalisés") not in pairs, "nor at an edge"
    assert all("." not in s for s, _ in pairs), "letters only"


def test_a_link_leaving_the_phrase_rules_it_out():
    crossing = LINKS | {(4, 4)}  # `yesterday` also linked to `hospitalisés`
    found = ta.phrase_pairs(SOURCE, TARGET, ta.tokens(SOURCE), ta.tokens(TARGET), crossing)
    pairs = spans(SOURCE, found)
    assert ("hospitalized", "hospitalisés") not in pairs
    assert ("hospitalized yesterday", "hospitalisés hier") in pairs


@pytest.mark.parametrize("source, target, links", [
    ("Code: { $error }", "Code : { $error }", {(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5)}),
    ("Taste it.", "Goûte-la.", {(0, 0), (1, 2), (2, 3)}),  # `Goûte` is half a word
    ("Wait for 10 days", "Attends 10 jours", {(0, 0), (2, 1), (3, 2)}),
])
def test_markup_placeholders_and_parts_of_words_are_no_terms(source, target, links):
    found = ta.phrase_pairs(source, target, ta.tokens(source), ta.tokens(target), links)
    terms = [source[slice(*s)] for s, _ in found]
    assert "error" not in terms and "Taste" not in terms
    if source.startswith("Wait"):
        assert terms == ["Wait", "days"], "numbers are left as they are"


def test_annotated_pair_marks_one_or_two_terms_with_the_references_words():
    texts = {ta.annotated_pair(SOURCE, TARGET, LINKS, random.Random(seed)) for seed in range(40)}
    assert all(t.count(MARK) in (2, 4) for t in texts)
    assert any(t.count(MARK) == 4 for t in texts) and any(t.count(MARK) == 2 for t in texts)
    assert f"The patients were hospitalized {MARK} hospitalisés {MARK} yesterday." in texts
    assert ta.annotated_pair("Yes.", "Oui.", {(1, 1)}, random.Random(0)) is None


def fake_eflomal(sources, targets):
    """Links each token to the token at the same place: a corpus written word for word."""
    links = [{(k, k) for k in range(min(len(s.split()), len(t.split())))}
             for s, t in zip(sources, targets, strict=True)]
    return links, links


def test_the_corpus_keeps_its_pairs_and_order_and_annotates_the_share_drawn(
        tmp_path, monkeypatch):
    monkeypatch.setattr(ta, "run_eflomal", fake_eflomal)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pairs = [(f"Green apples {k}", f"Pommes vertes {k}", "anki") for k in range(40)]
    (corpus / "train.tsv").write_text("".join("\t".join(p) + "\n" for p in pairs), "utf-8")
    (corpus / "dev.tsv").write_text("Hello.\tBonjour.\tanki\n", "utf-8")
    (corpus / "manifest.json").write_text("{}", "utf-8")
    ta.main(["--corpus", str(corpus), "--out", str(tmp_path / "out"), "--share", "0.25"])
    written = [line.split("\t") for line in
               (tmp_path / "out" / "train.tsv").read_text("utf-8").splitlines()]
    assert [w[1:] for w in written] == [[p[1], p[2]] for p in pairs]
    annotated = [w[0] for w in written if MARK in w[0]]
    assert len(annotated) == 10
    assert all(w[0].startswith("Green") and w[0].split()[-1].isdigit() for w in written)
    assert f"apples {MARK} vertes {MARK}" in " ".join(annotated)
    counts = json.loads((tmp_path / "out" / "terms.json").read_text("utf-8"))
    assert (counts["pairs"], counts["drawn"], counts["annotated"]) == (40, 10, 10)
    assert (tmp_path / "out" / "dev.tsv").read_text("utf-8") == "Hello.\tBonjour.\tanki\n"


def test_share_out_of_range_is_refused(tmp_path):
    with pytest.raises(SystemExit):
        ta.main(["--corpus", str(tmp_path), "--out", str(tmp_path / "o"), "--share", "0"])
