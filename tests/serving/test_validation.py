"""Request checks: limits and malformed input are refused with messages that say what to do."""

import pytest

from nmt.types import DecodeOptions
from nmt_api import protos
from serving.errors import InvalidArgument, LimitExceeded
from serving.validation import (
    GlossaryRequest,
    Limits,
    UndecodableRequest,
    lenient_deserializer,
    parse_align_request,
    parse_request,
)

pb2, _ = protos.load()
LIMITS = Limits(max_sentences=3, max_chars=10, max_beam_size=6)


def test_defaults_when_nothing_is_set():
    parsed = parse_request(pb2.TranslateRequest(sentences=["Hi."]), LIMITS)

    assert parsed.sentences == ("Hi.",)
    assert parsed.options == DecodeOptions()
    assert parsed.with_alignment is True and parsed.request_id == ""


def test_placeholders_are_kept_unless_the_request_says_false():
    assert parse_request(pb2.TranslateRequest(sentences=["%s"]), LIMITS).keep_placeholders
    assert parse_request(pb2.TranslateRequest(sentences=["%s"], keep_placeholders=True),
                         LIMITS).keep_placeholders
    assert not parse_request(pb2.TranslateRequest(sentences=["%s"], keep_placeholders=False),
                             LIMITS).keep_placeholders


def test_set_options_are_carried_and_unset_ones_default():
    request = pb2.TranslateRequest(
        sentences=["Hi."], with_alignment=False, request_id="r1",
        options=pb2.DecodeOptions(beam_size=3, length_penalty=0.7, replace_unknown=False))

    parsed = parse_request(request, LIMITS)

    assert parsed.options == DecodeOptions(beam_size=3, length_penalty=0.7, replace_unknown=False)
    assert parsed.with_alignment is False and parsed.request_id == "r1"


def test_unset_options_take_the_served_models_defaults():
    greedy = DecodeOptions(beam_size=1)

    def parsed(**options):
        request = pb2.TranslateRequest(sentences=["Hi."], options=pb2.DecodeOptions(**options))
        return parse_request(request, LIMITS, defaults=greedy).options

    assert parse_request(pb2.TranslateRequest(sentences=["Hi."]), LIMITS,
                         defaults=greedy).options == greedy
    assert parsed(length_penalty=1.0) == DecodeOptions(beam_size=1, length_penalty=1.0)
    assert parsed(beam_size=4) == DecodeOptions(beam_size=4)  # a request's beam is honoured
    assert parsed(n_best=3) == DecodeOptions(beam_size=3, n_best=3)  # widened to the n-best
    with pytest.raises(LimitExceeded, match="Received: beam_size=7"):
        parsed(n_best=7)
    with pytest.raises(InvalidArgument, match="n_best=3, beam_size=2"):
        parsed(n_best=3, beam_size=2)


def test_too_many_sentences_names_the_limit_and_the_count():
    with pytest.raises(LimitExceeded, match=r"at most 3 per request\. Received: 4 sentences"):
        parse_request(pb2.TranslateRequest(sentences=["a"] * 4), LIMITS)


def test_sentence_length_is_counted_in_characters():
    parse_request(pb2.TranslateRequest(sentences=["é" * 10]), LIMITS)  # 20 bytes, 10 chars
    with pytest.raises(LimitExceeded, match=r"sentence 1 is too long: at most 10 .* 11 characters"):
        parse_request(pb2.TranslateRequest(sentences=["ok", "é" * 11]), LIMITS)


@pytest.mark.parametrize("options, field", [
    (pb2.DecodeOptions(beam_size=0), "beam_size"),
    (pb2.DecodeOptions(beam_size=2, n_best=3), "n_best"),
    (pb2.DecodeOptions(max_length_ratio=-1.0), "max_length_ratio"),
])
def test_invalid_options_are_invalid_argument(options, field):
    with pytest.raises(InvalidArgument, match=rf"invalid options: {field}.*Received"):
        parse_request(pb2.TranslateRequest(sentences=["a"], options=options), LIMITS)


def test_beam_over_the_server_limit_is_resource_exhausted():
    request = pb2.TranslateRequest(sentences=["a"], options=pb2.DecodeOptions(beam_size=7))
    with pytest.raises(LimitExceeded, match=r"limit of 6\. Received: beam_size=7"):
        parse_request(request, LIMITS)


def test_long_request_id_is_refused():
    with pytest.raises(InvalidArgument, match="request_id is too long"):
        parse_request(pb2.TranslateRequest(sentences=["a"], request_id="x" * 129), LIMITS)


def test_stream_errors_name_the_request():
    with pytest.raises(LimitExceeded, match=r"^request 2 of the stream: too many sentences"):
        parse_request(pb2.TranslateRequest(sentences=["a"] * 4), LIMITS, index=2)


def test_limits_are_validated():
    with pytest.raises(ValueError, match=r"max_sentences=0"):
        Limits(max_sentences=0)
    with pytest.raises(ValueError, match=r"max_beam_size=65"):
        Limits(max_beam_size=65)
    with pytest.raises(ValueError, match=r"the default beam"):
        Limits(max_beam_size=4)
    with pytest.raises(ValueError, match=r"max_glossary_entries must be at most 10000"):
        Limits(max_glossary_entries=10_001)


def _glossary(entries=0, **fields):
    return pb2.TranslateRequest(sentences=["Hi."], glossary=pb2.Glossary(
        entries=[pb2.GlossaryEntry(source=f"term {i}", target=f"terme {i}")
                 for i in range(entries)], **fields))


def test_a_glossary_is_carried_as_sent():
    parsed = parse_request(_glossary(2, exact_case=True, glossary_id="medical"), LIMITS)

    assert parsed.glossary == GlossaryRequest((("term 0", "terme 0"), ("term 1", "terme 1")),
                                              True, "medical")


@pytest.mark.parametrize("request_", [
    pb2.TranslateRequest(sentences=["Hi."]),
    pb2.TranslateRequest(sentences=["Hi."], glossary=pb2.Glossary()),
    pb2.TranslateRequest(sentences=["Hi."], glossary=pb2.Glossary(exact_case=True)),
])
def test_no_entry_and_no_name_is_no_glossary(request_):
    assert parse_request(request_, LIMITS).glossary is None


def test_too_many_glossary_entries_name_the_limit_and_what_to_do():
    limits = Limits(max_glossary_entries=3)
    assert len(parse_request(_glossary(3), limits).glossary.entries) == 3

    with pytest.raises(LimitExceeded, match=r"^request 1 of the stream: too many glossary "
                       r"entries: at most 3 per request \(max_glossary_entries\)\. Received: 4 "
                       r"entries; put the glossary on the server \(nmt serve --glossaries DIR\)"):
        parse_request(_glossary(4), limits, index=1)


def test_a_long_glossary_id_is_refused():
    with pytest.raises(InvalidArgument, match=r"glossary_id is too long: at most 128"):
        parse_request(_glossary(glossary_id="x" * 129), LIMITS)


def test_valid_bytes_parse_normally():
    deserialize = lenient_deserializer(pb2.TranslateRequest)
    data = pb2.TranslateRequest(sentences=["ok", "déjà"]).SerializeToString()

    assert list(deserialize(data).sentences) == ["ok", "déjà"]


def test_invalid_utf8_names_the_sentence_and_the_byte():
    deserialize = lenient_deserializer(pb2.TranslateRequest)
    data = pb2.TranslateRequest(sentences=["ok", "ab"]).SerializeToString().replace(
        b"ab", b"a\xff")

    request = deserialize(data)

    assert isinstance(request, UndecodableRequest)
    assert "sentence 1 is not valid UTF-8 (byte 0xff at offset 1)" in request.reason
    with pytest.raises(InvalidArgument, match="sentence 1 is not valid UTF-8"):
        parse_request(request, LIMITS)


def test_garbage_is_refused_not_crashed_on():
    request = lenient_deserializer(pb2.TranslateRequest)(b"\xff\xff\xff\xff")

    assert isinstance(request, UndecodableRequest)
    assert "not a valid TranslateRequest" in request.reason


# --- AlignRequest ----------------------------------------------------------------------------


def _align(sources, targets, **fields):
    return pb2.AlignRequest(sources=sources, targets=targets, **fields)


def test_align_defaults_and_fields_are_carried():
    parsed = parse_align_request(_align(["Hi.", ""], ["Salut.", " "]), LIMITS)
    assert parsed.sources == ("Hi.", "") and parsed.targets == ("Salut.", " ")
    assert parsed.with_alignment is True and parsed.request_id == ""

    parsed = parse_align_request(
        _align(["Hi."], ["Salut."], with_alignment=False, request_id="a1"), LIMITS)
    assert parsed.with_alignment is False and parsed.request_id == "a1"


def test_align_counts_must_match_and_both_are_named():
    with pytest.raises(InvalidArgument, match=r"Received: 2 sources and 1 targets"):
        parse_align_request(_align(["a", "b"], ["A"]), LIMITS)


def test_align_too_many_pairs_names_the_limit_and_the_count():
    with pytest.raises(LimitExceeded, match=r"at most 3 per request\. Received: 4 pairs"):
        parse_align_request(_align(["a"] * 4, ["A"] * 4), LIMITS)


@pytest.mark.parametrize("sources, targets, match", [
    (["ok", "é" * 11], ["ok", "ok"], r"source 1 is too long: at most 10 .* 11 characters"),
    (["ok", "ok"], ["ok", "é" * 11], r"target 1 is too long: at most 10 .* 11 characters"),
])
def test_align_text_length_is_limited_on_both_sides(sources, targets, match):
    parse_align_request(_align(["é" * 10], ["é" * 10]), LIMITS)
    with pytest.raises(LimitExceeded, match=match):
        parse_align_request(_align(sources, targets), LIMITS)


@pytest.mark.parametrize("blank", ["", "  \t"])
def test_align_a_blank_target_for_a_source_names_the_pair(blank):
    with pytest.raises(InvalidArgument, match=r"^pair 2: the target is empty but the source"):
        parse_align_request(_align(["a", "", "c"], ["A", "", blank]), LIMITS)


def test_align_long_request_id_is_refused():
    with pytest.raises(InvalidArgument, match="request_id is too long"):
        parse_align_request(_align(["a"], ["A"], request_id="x" * 129), LIMITS)


@pytest.mark.parametrize("field, noun", [("sources", "source"), ("targets", "target")])
def test_align_invalid_utf8_names_the_field_and_the_index(field, noun):
    deserialize = lenient_deserializer(pb2.AlignRequest)
    texts = {"sources": ["ok", "ok"], "targets": ["ok", "ok"]}
    texts[field] = ["ok", "ab"]
    data = pb2.AlignRequest(**texts).SerializeToString().replace(b"ab", b"a\xff")

    request = deserialize(data)

    assert isinstance(request, UndecodableRequest)
    assert f"{noun} 1 is not valid UTF-8 (byte 0xff at offset 1)" in request.reason
    with pytest.raises(InvalidArgument, match=f"{noun} 1 is not valid UTF-8"):
        parse_align_request(request, LIMITS)
    valid = pb2.AlignRequest(sources=["ok"], targets=["déjà"]).SerializeToString()
    assert list(deserialize(valid).targets) == ["déjà"]


def test_align_garbage_names_the_message():
    request = lenient_deserializer(pb2.AlignRequest)(b"\xff\xff\xff\xff")

    assert isinstance(request, UndecodableRequest)
    assert "not a valid AlignRequest" in request.reason


def test_align_format_is_carried_and_defers_the_blank_target_check():
    parsed = parse_align_request(_align(["<br/>"], [""], format=pb2.TEXT_FORMAT_HTML), LIMITS)
    assert parsed.format == "html"  # tags only: no word to align, the servicer decides

    assert parse_align_request(_align(["Hi."], ["Salut."]), LIMITS).format is None
    with pytest.raises(InvalidArgument, match="^pair 0: the target is empty"):
        parse_align_request(_align(["<br/>"], [""]), LIMITS)  # plain pairs: refused at once
