"""Documents split into sentences and joined again, with fake translations (exact and fast)."""

import pytest

from documents.offsets import document_link_spans, format_char_links, link_spans, word_spans
from documents.sentences import (
    TextLinks,
    join,
    join_documents,
    sentence_spans,
    sentences_of,
    split_document,
    split_documents,
    translate_documents,
)

# Hand-made translations: sentence -> (French, links).
FAKE = {
    "I went to the market.": ("Je suis allé au marché.", ((0, 0), (1, 2), (2, 3), (4, 4))),
    "It was cheap.": ("C'était bon marché.", ((0, 0), (1, 0), (2, 1), (2, 2))),
    "He said «yes».": ("Il a dit « oui ».", ((0, 0), (1, 1), (1, 2), (2, 4))),
    "Thank you.": ("Merci.", ((0, 0), (1, 0))),
}


def fake_translate(sentences):
    return [TextLinks(*FAKE[sentence]) for sentence in sentences]


def test_sentences_and_spans_of_a_paragraph():
    text = "I went to the market.  It was cheap."
    plan = split_document(text)
    assert plan.sentences == ["I went to the market.", "It was cheap."]
    assert plan.spans == ((0, 21), (23, 36))


def test_separators_crlf_and_blank_lines_come_back_exactly():
    text = "  I went to the market. It was cheap.\r\n\r\n\tThank you.\n\n"
    [document] = translate_documents([text], fake_translate)
    assert document.text == ("  Je suis allé au marché. C'était bon marché.\r\n\r\n\tMerci.\n\n")


def test_target_spans_point_at_each_sentence_translation():
    text = "I went to the market.\n\nHe said «yes»."
    [document] = translate_documents([text], fake_translate)
    for sentence in document.sentences:
        start, end = sentence.source_span
        assert " ".join(text[start:end].split()) in FAKE
        start, end = sentence.target_span
        assert document.text[start:end] == sentence.result.text
    assert [s.target_span for s in document.sentences] == [(0, 23), (25, 42)]


def test_a_line_break_always_ends_a_sentence():
    assert sentence_spans("no full stop here\nand here") == [(0, 17), (18, 26)]
    assert sentence_spans("no full stop here\nand here", split_lines=False) == [(0, 26)]


def test_whitespace_inside_a_sentence_is_sent_as_single_spaces():
    plan = split_document("Thank   you.")
    assert plan.sentences == ["Thank you."]
    assert plan.spans == ((0, 12),)


def test_abbreviations_do_not_split():
    assert len(split_document("Mr. Smith went to Washington. He said hi.").spans) == 2


def test_empty_and_blank_documents_have_no_sentence_and_come_back_as_given():
    calls = []

    def translate(sentences):
        calls.append(list(sentences))
        return fake_translate(sentences)

    documents = translate_documents(["", " \r\n\n ", "Thank you."], translate)
    assert [d.text for d in documents] == ["", " \r\n\n ", "Merci."]
    assert documents[0].sentences == ()
    assert calls == [["Thank you."]], "one translator call for the whole batch"


def test_no_call_when_no_document_has_a_sentence():
    def translate(sentences):
        raise AssertionError("not called")

    assert [d.text for d in translate_documents(["", "\n"], translate)] == ["", "\n"]


def test_a_batch_of_documents_is_one_list_of_sentences():
    plans = split_documents(["I went to the market. It was cheap.", "Thank you."])
    sentences = sentences_of(plans)
    assert sentences == ["I went to the market.", "It was cheap.", "Thank you."]
    documents = join_documents(plans, fake_translate(sentences))
    assert [d.text for d in documents] == ["Je suis allé au marché. C'était bon marché.", "Merci."]


def test_wrong_number_of_results_is_refused():
    plan = split_document("I went to the market. It was cheap.")
    with pytest.raises(ValueError, match="one result per sentence"):
        join(plan, fake_translate(["Thank you."]))


def test_a_single_string_is_refused():
    with pytest.raises(TypeError, match="wrap it in a list"):
        split_documents("Thank you.")


def test_word_spans_and_azure_format():
    assert word_spans("  Le  chat ") == [(2, 4), (6, 10)]
    pairs = link_spans("The cat", "Le chat", [(1, 1), (0, 0)])
    assert pairs == [((0, 3), (0, 2)), ((4, 7), (3, 7))]
    assert format_char_links(pairs) == "0:2-0:1 4:6-3:6"


def test_link_beyond_the_words_is_refused():
    with pytest.raises(ValueError, match="beyond"):
        link_spans("The cat", "Le chat", [(2, 0)])


def test_document_link_spans_are_on_the_document_and_its_translation():
    text = "Thank you.\n\nHe said «yes»."
    [document] = translate_documents([text], fake_translate)
    pairs = document_link_spans(document)
    said = next(t for (s0, s1), t in pairs if text[s0:s1] == "said")
    assert document.text[said[0]:said[1]] in {"a", "dit"}
    words = {(text[s0:s1], document.text[t0:t1]) for (s0, s1), (t0, t1) in pairs}
    assert ("«yes».", "oui") in words
    assert ("Thank", "Merci.") in words
