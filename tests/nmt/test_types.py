"""`nmt.types`: the Pharaoh link parsers, the sentence-list check every entry point uses and
the strict dataclass-from-mapping conversion."""

import dataclasses
import re

import pytest

from nmt.types import (
    DecodeOptions,
    Hypothesis,
    dataclass_from_dict,
    format_char_links,
    options_over,
    parse_char_links,
    parse_pharaoh,
    parse_pharaoh_links,
    recommended_options,
    sentence_list,
)


def test_char_links_round_trip_in_azures_format():
    pairs = (((0, 3), (0, 2)), ((4, 7), (3, 7)), ((10, 11), (12, 13)))

    assert format_char_links(pairs) == "0:2-0:1 4:6-3:6 10:10-12:12"  # ends included
    assert parse_char_links(format_char_links(pairs)) == pairs
    assert parse_char_links("") == ()
    with pytest.raises(ValueError, match="Received: '0:2-1'"):
        parse_char_links("0:2-1")


def test_parse_pharaoh_reads_links_in_order():
    assert parse_pharaoh("0-0 1-2 10-3") == ((0, 0), (1, 2), (10, 3))
    assert parse_pharaoh("  2-1\t0-0 ") == ((2, 1), (0, 0))
    assert parse_pharaoh("") == ()


def test_parse_pharaoh_round_trips_what_hypothesis_writes():
    import numpy as np

    links = ((0, 0), (2, 1), (1, 3))
    hypothesis = Hypothesis(text="", target_tokens=(), score=0.0,
                            alignment=np.zeros((0, 0), np.float32), word_alignment=links)
    assert parse_pharaoh(hypothesis.pharaoh()) == links


@pytest.mark.parametrize("text, token", [("0-0 1:2", "'1:2'"), ("0-0 1p2", "'1p2'"),
                                         ("3?4", "'3?4'"), ("a-b", "'a-b'"), ("1-", "'1-'")])
def test_parse_pharaoh_names_the_bad_token(text, token):
    with pytest.raises(ValueError, match=re.escape(token)):
        parse_pharaoh(text)


def test_parse_pharaoh_links_marks_sure_and_possible_links():
    assert parse_pharaoh_links(" 0-1 2p3 4?5  0-1 ") == (
        (0, 1, True), (2, 3, False), (4, 5, False), (0, 1, True))
    with pytest.raises(ValueError, match="Expected a link like 3-4, 3p4 or 3\\?4"):
        parse_pharaoh_links("0-0 x")


def test_sentence_list_accepts_any_sequence_of_strings():
    assert sentence_list(("a", "b")) == ["a", "b"]
    assert sentence_list(s for s in ["« Bonjour ! »"]) == ["« Bonjour ! »"]
    assert sentence_list([]) == []


@pytest.mark.parametrize("value, name, message", [
    ("Hello.", "sentences", "sentences must be a sequence of strings, not a single string"),
    (b"Hello.", "sources", "sources must be a sequence of strings, not a single string"),
    (["a", None], "sentences", "sentence 1 must be a str. Received: NoneType"),
    (["a", b"b"], "targets", "target 1 must be a str. Received: bytes"),
])
def test_sentence_list_raises_type_error_naming_the_argument(value, name, message):
    with pytest.raises(TypeError, match=message):
        sentence_list(value, name)


def test_dataclass_from_dict_builds_and_validates():
    assert dataclass_from_dict(DecodeOptions, {"beam_size": 3}, "options") == DecodeOptions(
        beam_size=3)
    assert dataclass_from_dict(DecodeOptions, None, "options") == DecodeOptions()
    with pytest.raises(ValueError, match="beam_size=0"):  # the dataclass's own check
        dataclass_from_dict(DecodeOptions, {"beam_size": 0}, "options")


def test_dataclass_from_dict_names_unknown_and_known_keys():
    with pytest.raises(ValueError) as raised:
        dataclass_from_dict(DecodeOptions, {"beam": 4, "nbest": 2, "n_best": 1}, "my options")
    message = str(raised.value)
    assert message.startswith("Unknown keys ['beam', 'nbest'] in my options; known keys: [")
    assert all(field.name in message for field in dataclasses.fields(DecodeOptions))


def test_options_over_sets_the_given_fields_on_the_defaults():
    greedy = DecodeOptions(beam_size=1)

    assert options_over(greedy, {}) == greedy
    assert options_over(greedy, {"beam_size": 4}) == DecodeOptions(beam_size=4)
    assert options_over(greedy, {"length_penalty": 1.0}) == DecodeOptions(
        beam_size=1, length_penalty=1.0)
    # More hypotheses than the default beam, no beam given: the beam widens to them.
    assert options_over(greedy, {"n_best": 3}) == DecodeOptions(beam_size=3, n_best=3)
    assert options_over(DecodeOptions(), {"n_best": 3}) == DecodeOptions(n_best=3)
    # A beam narrower than the default n-best, no n-best given: as many as the beam has.
    assert options_over(DecodeOptions(n_best=4), {"beam_size": 2}) == DecodeOptions(
        beam_size=2, n_best=2)
    with pytest.raises(ValueError, match="n_best=3, beam_size=2"):
        options_over(greedy, {"n_best": 3, "beam_size": 2})
    with pytest.raises(ValueError, match="Unknown keys \\['beams'\\] in decoding options"):
        options_over(greedy, {"beams": 2})


def test_recommended_options_read_the_exports_metadata():
    assert recommended_options({}) == DecodeOptions()
    assert recommended_options({"recommended_decoding": {"beam_size": 1}}) == DecodeOptions(
        beam_size=1)
    with pytest.raises(ValueError, match="beam_size must be between 1 and 64"):
        recommended_options({"recommended_decoding": {"beam_size": 0}})
    with pytest.raises(ValueError, match="Received: 'greedy'"):
        recommended_options({"recommended_decoding": "greedy"})
