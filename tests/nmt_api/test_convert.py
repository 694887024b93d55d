"""Round trips between `nmt.types` and the proto messages keep every field."""

import dataclasses
import types

import numpy as np
import pytest

from documents.glossary import Glossary
from nmt.types import (
    AppliedTerm,
    DecodeOptions,
    DocumentTranslation,
    Hypothesis,
    TranslatedSentence,
    Translation,
)
from nmt_api import convert, protos
from serving.batching import blank_translation
from serving.validation import Limits, parse_request

pb2, _ = protos.load()


def _translation(rng) -> Translation:
    def hypothesis(text, score):
        weights = rng.random((len(text.split()) + 1, 4)).astype(np.float32)  # (T, S)
        weights /= weights.sum(axis=1, keepdims=True)
        return Hypothesis(text=text, target_tokens=tuple(text.split()) + (".",), score=score,
                          alignment=weights, word_alignment=((0, 0), (2, 1)))

    return Translation(source="How are you ?", source_tokens=("▁How", "▁are", "▁you", "?"),
                       nbest=(hypothesis("Comment allez-vous", -0.25),
                              hypothesis("Comment vas-tu", -0.5)))


def _round_trip(translation, with_alignment=True):
    message = convert.translation_to_proto(translation, with_alignment)
    parsed = pb2.Translation.FromString(message.SerializeToString())
    return convert.translation_from_proto(parsed, translation.source)


def test_translation_round_trip_keeps_everything():
    original = _translation(np.random.default_rng(0))

    back = _round_trip(original)

    assert back.source == original.source and back.source_tokens == original.source_tokens
    assert len(back.nbest) == 2
    for got, want in zip(back.nbest, original.nbest, strict=True):
        assert got.text == want.text and got.target_tokens == want.target_tokens
        assert got.word_alignment == want.word_alignment
        assert got.score == pytest.approx(want.score)
        assert got.alignment.dtype == np.float32 and got.alignment.shape == want.alignment.shape
        np.testing.assert_array_equal(got.alignment, want.alignment)


def test_document_round_trip_keeps_spans_sentences_and_char_links():
    sentence = _translation(np.random.default_rng(2))
    original = DocumentTranslation(
        source="<b>How are you ?</b>\n", text="<b>Comment allez-vous</b>\n",
        sentences=(TranslatedSentence((0, 20), (0, 25), sentence),),
        link_spans=(((3, 6), (3, 10)), ((11, 14), (11, 21))))
    message = convert.document_to_proto(original)
    response = pb2.TranslateResponse(documents=[message])

    [back] = convert.documents_from_response(
        pb2.TranslateResponse.FromString(response.SerializeToString()), [original.source])

    assert message.char_alignment == "3:5-3:9 11:13-11:20"
    assert (back.source, back.text, back.link_spans) == (
        original.source, original.text, original.link_spans)
    [got] = back.sentences
    assert (got.source_span, got.target_span) == ((0, 20), (0, 25))
    assert got.result.source == sentence.source and got.result.text == sentence.text
    assert got.result.word_alignment == sentence.word_alignment
    with pytest.raises(RuntimeError, match="answered 1 documents for 2"):
        convert.documents_from_response(response, ["a", "b"])


def test_without_alignment_the_matrix_is_empty_but_links_stay():
    back = _round_trip(_translation(np.random.default_rng(1)), with_alignment=False)

    assert back.alignment.shape == (0, 0)
    assert back.word_alignment == ((0, 0), (2, 1))


def test_align_response_round_trip_keeps_every_pair_in_order():
    rng = np.random.default_rng(2)
    pairs = [_translation(rng), blank_translation("")]
    response = pb2.AlignResponse(alignments=[convert.translation_to_proto(t) for t in pairs])
    wire = pb2.AlignResponse.FromString(response.SerializeToString())

    back = convert.alignments_from_response(wire, [t.source for t in pairs])

    assert [t.source for t in back] == ["How are you ?", ""]
    assert back[0].alignment.shape == pairs[0].alignment.shape  # (T, S)
    assert back[0].word_alignment == pairs[0].word_alignment
    assert back[1].text == "" and back[1].alignment.shape == (0, 0)
    with pytest.raises(RuntimeError, match="answered 2 alignments for 3 pairs"):
        convert.alignments_from_response(wire, ["a", "b", "c"])


def test_options_survive_the_wire_exactly():
    options = DecodeOptions(beam_size=3, max_length_ratio=1.7, length_penalty=0.6,
                            coverage_penalty=0.2, n_best=2, replace_unknown=False)
    request = pb2.TranslateRequest(sentences=["a"], options=convert.options_to_proto(options))
    wire = pb2.TranslateRequest.FromString(request.SerializeToString())

    # Equal (not just close): equal options are what lets requests share a batch.
    assert parse_request(wire, Limits()).options == options
    assert parse_request(pb2.TranslateRequest(
        options=convert.options_to_proto(None)), Limits()).options == DecodeOptions()


def test_flatten_scores_keeps_numeric_leaves():
    scores = {"test": {"bleu": 31.5, "chrf": 55}, "aer": 0.3, "note": "x", "ok": True}

    assert convert.flatten_scores(scores) == {"test.bleu": 31.5, "test.chrf": 55.0, "aer": 0.3}


def test_model_info_round_trip():
    info = types.SimpleNamespace(
        name="en-fr", version=3, attention="luong-general", source_vocab_size=8000,
        target_vocab_size=8000, alignment="alignment_head", word_links="intersect",
        precision="bfloat16", precisions=("float32", "bfloat16"),
        metadata={"attribution": {"corpus": "Tatoeba", "licence": "CC-BY 2.0"},
                  "scores": {"test": {"bleu": 30.1}}})
    message = convert.model_info_to_proto(info, Limits(max_sentences=7))

    got = convert.model_info_from_proto(pb2.GetModelInfoResponse.FromString(
        message.SerializeToString()))

    assert got["name"] == "en-fr" and got["version"] == 3 and got["attention"] == "luong-general"
    assert "Tatoeba" in got["attribution"]
    assert got["scores"] == {"test.bleu": pytest.approx(30.1)}
    assert got["metadata"]["scores"] == {"test": {"bleu": 30.1}}
    assert got["limits"]["max_sentences"] == 7
    assert got["limits"]["max_glossary_entries"] == Limits().max_glossary_entries
    assert (got["alignment"], got["word_links"]) == ("alignment_head", "intersect")
    assert (got["precision"], got["precisions"]) == ("bfloat16", ["float32", "bfloat16"])


def test_model_info_reports_the_aer_that_evaluate_json_records():
    # `nmt evaluate --json` writes this; `nmt export --metadata` merges it into the metadata.
    evaluation = {"scores": {"test_bleu": 45.53, "test_chrf": 62.59, "alibi_aer": 0.668},
                  "alignment": {"aer": 0.668, "precision": 0.3354, "recall": 0.3261}}
    info = types.SimpleNamespace(name="en-fr", version=2, attention="", source_vocab_size=1,
                                 target_vocab_size=1, metadata={"name": "en-fr", **evaluation},
                                 alignment="attention", word_links="argmax",
                                 precision="float32", precisions=("float32",))

    message = pb2.GetModelInfoResponse.FromString(
        convert.model_info_to_proto(info, Limits()).SerializeToString())

    assert dict(message.scores) == pytest.approx(
        {"test_bleu": 45.53, "test_chrf": 62.59, "alibi_aer": 0.668})


def test_confidence_and_word_and_piece_scores_round_trip():
    import dataclasses

    original = _translation(np.random.default_rng(4))
    scored = dataclasses.replace(original.best, confidence=-0.625,
                                 word_scores=np.array([-0.5, -1.25], np.float32),
                                 piece_scores=np.array([-0.25, -1.0, -0.125], np.float32))
    unscored = original.nbest[1]  # no confidence, no scores (a blank or older answer)

    back = _round_trip(dataclasses.replace(original, nbest=(scored, unscored)))

    got, bare = back.nbest
    assert got.confidence == -0.625 and back.confidence == -0.625
    np.testing.assert_array_equal(got.word_scores, scored.word_scores)
    np.testing.assert_array_equal(got.piece_scores, scored.piece_scores)
    assert (bare.confidence, bare.word_scores, bare.piece_scores) == (None, None, None)


def test_model_info_carries_the_models_default_decoding():
    info = types.SimpleNamespace(
        name="en-fr-student", version=1, attention="luong-general", source_vocab_size=1,
        target_vocab_size=1, alignment="alignment_head", word_links="argmax",
        precision="float32", precisions=("float32",), metadata={},
        default_options=DecodeOptions(beam_size=1))
    message = pb2.GetModelInfoResponse.FromString(
        convert.model_info_to_proto(info, Limits()).SerializeToString())

    got = convert.model_info_from_proto(message)

    assert DecodeOptions(**got["default_options"]) == DecodeOptions(beam_size=1)
    assert convert.model_info_from_proto(pb2.GetModelInfoResponse())["default_options"] == {}


TERM = AppliedTerm("face mask", "masques", (9, 20), (10, 17), "aligned", "face masks", "plural")


def test_applied_terms_round_trip_per_hypothesis_and_per_document():
    sentence = _translation(np.random.default_rng(3))
    best = dataclasses.replace(sentence.best, applied_terms=(TERM,))
    other = dataclasses.replace(sentence.nbest[1], applied_terms=(
        AppliedTerm("you", "vous", (8, 11), (11, 15), "neighbour"),))
    sentence = dataclasses.replace(sentence, nbest=(best, other))
    document = DocumentTranslation(
        source="How are you ?", text="Comment allez-vous",
        sentences=(TranslatedSentence((0, 13), (0, 18), sentence),),
        applied_terms=(AppliedTerm("face mask", "masques", (30, 41), (40, 47), "found"),))

    back = _round_trip(sentence)
    [document_back] = convert.documents_from_response(pb2.TranslateResponse.FromString(
        pb2.TranslateResponse(documents=[convert.document_to_proto(document)])
        .SerializeToString()), [document.source])

    assert [h.applied_terms for h in back.nbest] == [h.applied_terms for h in sentence.nbest]
    assert document_back.applied_terms == document.applied_terms
    assert document_back.sentences[0].result.best.applied_terms == (TERM,)
    message = convert.hypothesis_to_proto(best, True).applied_terms[0]
    assert (message.source_start, message.source_end, message.target_start,
            message.target_end) == (9, 20, 10, 17)
    assert message.placement == pb2.TERM_PLACEMENT_ALIGNED
    assert (message.matched, message.form) == ("face masks", "plural")


def test_a_translation_without_terms_is_the_same_bytes_as_before_the_field():
    translation = _translation(np.random.default_rng(4))

    message = convert.translation_to_proto(translation)

    assert all(len(h.applied_terms) == 0 for h in message.hypotheses)
    assert b"face" not in message.SerializeToString()
    assert _round_trip(translation).best.applied_terms == ()


@pytest.mark.parametrize("given, exact_case, expected", [
    ("medical", None, {"glossary_id": "medical"}),
    ("medical", True, {"glossary_id": "medical", "exact_case": True}),
    ([("face mask", "masque")], None, {"entries": [("face mask", "masque")]}),
    ([{"source": "flu", "target": "grippe"}], False, {"entries": [("flu", "grippe")]}),
    (Glossary.from_entries([("flu", "grippe")], exact_case=True), None,
     {"entries": [("flu", "grippe")], "exact_case": True}),
    (Glossary.from_entries([("flu", "grippe")], exact_case=True), False,
     {"entries": [("flu", "grippe")]}),
    ((), None, {}),
])
def test_glossary_to_proto_takes_a_name_entries_or_a_glossary(given, exact_case, expected):
    message = convert.glossary_to_proto(given, exact_case)

    assert [(e.source, e.target) for e in message.entries] == expected.get("entries", [])
    assert message.glossary_id == expected.get("glossary_id", "")
    assert message.exact_case == expected.get("exact_case", False)


def test_glossary_to_proto_passes_a_message_as_it_is():
    message = pb2.Glossary(glossary_id="medical", entries=[pb2.GlossaryEntry(source="a",
                                                                             target="b")])

    assert convert.glossary_to_proto(message) is message


@pytest.mark.parametrize("given, expected", [
    ({"flu": "grippe"}, "glossary must be"),
    (42, "glossary must be"),
    ([("flu",)], "glossary entry 1 must be a \\(source, target\\) pair"),
    ([("flu", "grippe"), "flu"], "entry 2"),
    ([("flu", None)], "entry 1"),
])
def test_glossary_to_proto_refuses_what_is_not_entries(given, expected):
    with pytest.raises(TypeError, match=expected):
        convert.glossary_to_proto(given)


def test_glossaries_from_proto():
    message = pb2.ListGlossariesResponse(glossaries=[pb2.GlossaryInfo(
        name="medical", entries=12, loaded_at="2025-06-01T12:00:00Z", file="medical.tsv")])

    assert convert.glossaries_from_proto(message) == [
        {"name": "medical", "entries": 12, "loaded_at": "2025-06-01T12:00:00Z",
         "file": "medical.tsv"}]
