"""`documents.cues`: cue text read as markup, sentences over cues, translations split back.

The whole path through files is tested in test_subtitles.py; here the parts on their own.
"""

import pytest

from documents.cues import cue_boundaries, cue_sentences, read_cue_text, split_translation
from documents.sentences import TextLinks


@pytest.mark.parametrize(("sizes", "words", "links", "cuts"), [
    ((2, 2), "a b c d e f", [(0, 0), (1, 1), (2, 2), (2, 3), (3, 4), (3, 5)], [0, 2, 6]),
    ((2, 2), "a b c d e f", [(0, 0), (1, 1), (1, 2), (1, 3), (3, 5)], [0, 4, 6]),
    ((1, 1, 1), "a b c", [(0, 2), (1, 1), (2, 0)], [0, 1, 2, 3]),  # crossed: still monotone
    ((1, 1, 1), "a b", [(0, 0), (2, 1)], [0, 1, 1, 2]),  # too few words: one cue empty
    ((2, 2), "a b c d", [], [0, 2, 4]),  # no link: the source's proportion
    ((2, 2), "a b ? d", [(0, 0), (1, 1), (3, 3)], [0, 3, 4]),  # "?" does not open a cue
    ((3,), "a b", [(0, 0)], [0, 2]),
])
def test_cue_boundaries_keep_the_most_links_inside_their_cue(sizes, words, links, cuts):
    assert cue_boundaries(sizes, words.split(), links) == cuts


def test_cue_text_tags_become_elements_and_unpaired_ones_points():
    read = read_cue_text("<i>Tom and <b>Jerry</i> run.</b>", "srt")

    (unit,) = read.units
    assert unit.words == ("Tom", "and", "Jerry", "run.")
    (italic,) = unit.nodes  # crossed: <i> is paired, <b> and </b> kept as they are
    assert (italic.open, italic.close, italic.first, italic.last) == ("<i>", "</i>", 0, 3)
    assert [(node.open, node.close) for node in italic.children] == [("<b>", None)]
    assert unit.region == (0, 28)  # "</b>" after the last word stays where it is


def test_webvtt_entities_are_read_decoded_and_ellipses_at_either_end_noted():
    read = read_cue_text("...Tom &amp; Jerry&nbsp;too...", "vtt")

    assert read.opens and read.closes
    assert [unit.words for unit in read.units] == [("Tom", "&", "Jerry", "too")]
    assert not read_cue_text("Tom... and Jerry.", "srt").closes


def test_sentences_join_over_cues_only_where_no_sentence_ends():
    cues = [read_cue_text(text, "srt") for text in ("Yes. We went to", "the sea. Then", "- No.")]

    assert cue_sentences(cues) == [[(0, 0)], [(0, 1), (1, 0)], [(1, 1)], [(2, 0)]]
    assert cue_sentences(cues, merge=False) == [[(0, 0)], [(0, 1)], [(1, 0)], [(1, 1)],
                                                [(2, 0)]]


def test_a_translation_is_split_with_its_links_and_matrix_counted_within_each_part():
    units = [read_cue_text("We went to", "srt").units[0], read_cue_text("the sea.", "srt"
                                                                        ).units[0]]
    matrix = [[1.0 if i == j else 0.0 for i in range(5)] for j in range(5)]
    result = TextLinks("Nous sommes allés la mer.", ((0, 0), (1, 1), (2, 2), (3, 3), (4, 4)),
                       matrix)

    (first, links_1, matrix_1), (second, links_2, matrix_2) = split_translation(units, result)

    assert (first, second) == ("Nous sommes allés", "la mer.")
    assert links_1 == ((0, 0), (1, 1), (2, 2)) and links_2 == ((0, 0), (1, 1))
    assert matrix_2 == [[1.0, 0.0], [0.0, 1.0]]


def test_cue_boundaries_keep_parts_within_max_chars_before_the_links():
    words = "aaaa bbbb cccc dddd eeee".split()
    links = [(0, 0), (0, 1), (0, 2), (0, 3), (1, 4)]  # the links want 4 words | 1

    assert cue_boundaries((1, 1), words, links) == [0, 4, 5]
    assert cue_boundaries((1, 1), words, links, max_chars=14) == [0, 3, 5]  # "aaaa bbbb cccc"
    assert cue_boundaries((1, 1), words, links, max_chars=5) == [0, 3, 5]  # 13 over either way
