"""The shipped model loads from the checkout, describes itself and still translates well."""

import pytest

from nmt.data.corpus import read_pairs
from nmt.evaluation.scoring import score_translations
from nmt.inference.translator import Translator
from nmt.options import DEFAULT_MODEL_DIR as SHIPPED
from nmt.types import DecodeOptions


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator.load(SHIPPED)


def test_translates_an_everyday_sentence_with_its_alignment(translator):
    [result] = translator.translate(["The cat is black."])
    assert "chat" in result.text and "noir" in result.text, result.text
    assert result.alignment.shape == (len(result.target_tokens), len(result.source_tokens))
    assert result.best.attention.shape == result.alignment.shape
    words = result.text.split()
    # The exported rule (intersect) may leave a word unaligned; argmax links every word.
    assert {t for _, t in result.word_alignment} <= set(range(len(words)))
    source = "The cat is black.".split()
    linked = {words[t]: source[s] for s, t in result.word_alignment}
    assert linked == {"Le": "The", "chat": "cat", "est": "is", "noir.": "black."}, linked
    [argmax] = translator.translate(["The cat is black."], links="argmax")
    assert {t for _, t in argmax.word_alignment} == set(range(len(words)))


def test_metadata_carries_attribution_and_scores(translator):
    metadata = translator.info.metadata
    for source in ("manythings.org/anki", "Open Government Licence – Canada",
                   "python-docs-fr", "godot-editor-l10n", "LibreOffice user-interface",
                   "LibreOffice help", "Firefox user-interface"):  # every training source's
        assert source in metadata["attribution"], source
    # Version 10 traded everyday sentences (version 9: 45.15) for every other kind of text.
    assert metadata["scores"]["test_bleu"] >= 40.0
    assert metadata["scores"]["alibi_aer"] <= 0.20
    assert translator.info.version == 10
    assert translator.info.attention == (
        "luong-general+head-general-both-context128-in128-agree-shared")
    assert (translator.info.alignment, translator.info.word_links) == (
        "alignment_head", "intersect")
    assert translator.info.precisions == ("float32", "bfloat16")
    assert len(metadata["averaged_checkpoints"]) == 2
    # The head was trained on the frozen weights of the v10 corpus's last phase.
    assert metadata["training"]["alignment_head"]["train"] == "frozen"
    assert metadata["training"]["starting_model"]["name"] == "en-fr-v10-anneal"


def test_dev_bleu_has_not_regressed(shared_data):
    """Needs the data directory (`NMT_DATA_DIR`): greedy BLEU on the first 300 dev pairs."""
    pairs = read_pairs(shared_data / "anki-fra-eng" / "dev.tsv")[:300]
    report = score_translations(Translator.load(SHIPPED), pairs, DecodeOptions(beam_size=1))
    assert report.scores.bleu >= 30.0, report.scores
