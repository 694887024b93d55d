"""Sentences whose placeholders come back exactly, with a fake translator (exact and fast)."""

from collections import Counter

import numpy as np
import pytest

from documents.placeholders import find_placeholders
from documents.protection import protect, translate_protected
from nmt.types import Hypothesis, Translation

# What the fake model says: sentence read -> (French, (source word, target word) links).
FRENCH = {
    "Hello you have new messages.": ("Bonjour vous avez nouveaux messages.",
                                     ((0, 0), (1, 1), (2, 2), (3, 3), (4, 4))),
    # French puts the last word first: the links cross.
    "Move before now": ("Maintenant avant déplacer", ((0, 2), (1, 1), (2, 0))),
    "Tom Jerry": ("Tom Jerry", ((0, 0), (1, 1))),
    "10 km away": ("10 km plus loin", ((0, 0), (1, 1), (2, 2), (2, 3))),
    "I like cats.": ("J'aime les chats.", ((0, 0), (1, 0), (2, 2))),
    "Delete node": ("Supprimer le nœud", ((0, 0), (1, 2))),
}


def hypothesis(read: str, target: str, links, score: float = -1.0) -> Hypothesis:
    """A hypothesis as the model gives it: links, word matrix and word scores of `read`."""
    matrix = np.zeros((len(target.split()), len(read.split())), np.float32)
    for i, j in links:
        matrix[j, i] = 1.0
    return Hypothesis(text=target, target_tokens=(*target.split(), "</s>"), score=score,
                      alignment=np.full((len(target.split()) + 1, len(read.split()) + 1), 0.5),
                      word_alignment=tuple(links), word_matrix=matrix,
                      word_scores=-np.arange(1, len(target.split()) + 1, dtype=np.float32))


class FakeTranslator:
    """Stands for `Translator.translate`: answers from FRENCH and records what it read."""

    def __init__(self):
        self.calls = []

    def translate(self, sentences):
        self.calls.append(list(sentences))
        return [Translation(source=s, source_tokens=(*s.split(), "</s>"),
                            nbest=(hypothesis(s, *FRENCH[s]),)) for s in sentences]


def placeholders(text: str) -> Counter:
    return Counter(p.text for p in find_placeholders(text))


def test_the_issues_example_keeps_both_placeholders_where_their_words_go():
    model = FakeTranslator()
    [out] = translate_protected(["Hello %s, you have {0} new messages."], model.translate)
    assert model.calls == [["Hello you have new messages."]]
    assert out.text == "Bonjour %s, vous avez {0} nouveaux messages."
    assert out.source == "Hello %s, you have {0} new messages."


def test_word_links_matrix_and_scores_count_the_words_with_placeholders():
    [out] = translate_protected(["Hello %s, you have {0} new messages."],
                                FakeTranslator().translate)
    # Source words: Hello %s, you have {0} new messages.; target words alike.
    assert out.word_alignment == ((0, 0), (2, 2), (3, 3), (5, 5), (6, 6))
    assert out.word_matrix.shape == (7, 7)
    assert out.word_matrix[1].sum() == out.word_matrix[:, 4].sum() == 0  # placeholder words
    assert out.word_matrix[5, 5] == 1.0
    np.testing.assert_array_equal(out.best.word_scores, [-1, 0, -2, -3, 0, -4, -5])
    # What the model read and wrote stays as it was.
    assert out.source_tokens == ("Hello", "you", "have", "new", "messages.", "</s>")
    assert out.best.target_tokens[0] == "Bonjour" and out.best.alignment.shape == (6, 6)


def test_positional_placeholders_follow_the_words_when_the_order_changes():
    [out] = translate_protected(["Move {0} before {1} now"], FakeTranslator().translate)
    assert out.text == "{1} Maintenant {0} avant déplacer"


def test_placeholders_taken_in_order_keep_the_source_order_when_the_words_cross():
    [out] = translate_protected(["Move %s before %d now"], FakeTranslator().translate)
    assert out.text == "%s Maintenant %d avant déplacer"
    assert placeholders(out.text) == placeholders("Move %s before %d now")


@pytest.mark.parametrize("sentence", [
    "Hello %s, you have {0} new messages.", "Move {0} before {1} now", "Move %s before %d now",
    "Move %1$s before %% now", "Move {{a}} before {b, number} now", "Move %(n)s before %@ now",
])
def test_each_placeholder_comes_back_exactly_once(sentence):
    [out] = translate_protected([sentence], FakeTranslator().translate)
    assert placeholders(out.text) == placeholders(sentence)


def test_an_entity_comes_back_as_written():
    model = FakeTranslator()
    out = translate_protected(["Tom &amp; Jerry", "10&nbsp;km away"], model.translate)
    assert model.calls == [["Tom Jerry", "10 km away"]]
    assert [t.text for t in out] == ["Tom &amp; Jerry", "10&nbsp;km plus loin"]


def test_a_word_of_entities_and_placeholders_stays_whole():
    [out] = translate_protected(["Delete node &#39;%s&#39;"], FakeTranslator().translate)
    assert out.text == "Supprimer le nœud &#39;%s&#39;"


def test_a_sentence_without_placeholders_is_read_byte_identical_and_given_back_untouched():
    sentences = ["I like cats.", "  I   like\tcats. ", "50 % off { and } R&D", "é « » ’"]
    protected = protect(sentences)
    assert all(read is given for read, given in zip(protected.sentences, sentences, strict=True))
    results = [object() for _ in sentences]
    assert all(out is result for out, result in zip(protected.restore(results), results,
                                                    strict=True))


def test_a_sentence_of_placeholders_only_is_not_read_and_comes_back_as_itself():
    model = FakeTranslator()
    out = translate_protected(["%s", "I like cats.", "'%s': (%d)"], model.translate)
    assert model.calls == [["I like cats."]]
    assert [t.text for t in out] == ["%s", "J'aime les chats.", "'%s': (%d)"]
    assert out[2].word_alignment == () and out[2].word_matrix.shape == (2, 2)
    assert translate_protected(["{0}"], model.translate)[0].text == "{0}"
    assert model.calls == [["I like cats."]], "no model call for nothing to read"


def test_every_hypothesis_of_an_n_best_list_is_restored():
    read = "Hello you have new messages."
    second = hypothesis(read, "Salut vous avez nouveaux messages.", FRENCH[read][1], -2.0)

    def two_best(sentences):
        [first] = FakeTranslator().translate(sentences)
        return [Translation(first.source, first.source_tokens, (first.best, second))]

    [out] = translate_protected(["Hello %s, you have {0} new messages."], two_best)
    assert [h.text for h in out.nbest] == ["Bonjour %s, vous avez {0} nouveaux messages.",
                                           "Salut %s, vous avez {0} nouveaux messages."]
    assert out.nbest[1].score == -2.0


def test_placeholders_off_reads_every_sentence_as_given():
    protected = protect(["Hello %s, you have {0} new messages."], enabled=False)
    assert protected.sentences == ["Hello %s, you have {0} new messages."]


def test_restore_passes_error_messages_through_and_checks_the_count():
    protected = protect(["Delete node '%s'", "I like cats."])
    assert protected.restore(["rejected", "rejected too"]) == ["rejected", "rejected too"]
    with pytest.raises(ValueError, match=r"Expected one result per sentence read \(2\)"):
        protected.restore(["one"])
    with pytest.raises(TypeError):
        protect("Delete node '%s'")
