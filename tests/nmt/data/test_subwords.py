"""`nmt.data.subwords`: the tokenizer's text rules and ids without TensorFlow, compared
with the in-graph tokenizer (`nmt.data.tokenizer`) so that the two cannot drift."""

from pathlib import Path

import pytest

from nmt.data import subwords
from nmt.data.corpus import read_pairs
from nmt.data.subwords import PlainTokenizer, normalize_text
from nmt.paths import resolve_version_dir

REPO = Path(__file__).resolve().parents[3]
FIXTURE = REPO / "tests" / "fixtures" / "tiny_pairs.tsv"
SHIPPED_SPM = resolve_version_dir(REPO / "models" / "en-fr") / "assets" / "en.spm.model"

# One string per rule, and the characters where Python and RE2/ICU could part ways.
TRICKY = [
    "Où est l’hôtel ?", "Elle a dit : « Très bien ! »", "«Oui»", "Va!", "Quoi?!",
    "Le train part à 8 :30 .", "8 :30 :45", "a ; b : c ! d ?",
    "https://a.fr std::map :ref:`x`: fin!", "Oui!» (vraiment?) [non!], dit-il;",
    "a\u00a0b\u202fc", "x\u2028y\u2029z", "tab\there", "  lead and trail  ", "\u3000ideographic",
    "zero\u200bwidth", "bom\ufeffx", "ctrl\x01\x7f\x85end", "soft\u00adhyphen",
    "x\u2066isolate\u2069y", "ﬁne ligature", "ＦＵＬＬ width", "…", "ⅷ ①", "ǅ",
    "l\u02bcami", "\u2018quoted\u2019", "e\u0301cole", "emoji 👍🏽 ok", "", " ",
]


@pytest.mark.parametrize("language", ["en", "fr"])
def test_normalize_text_is_the_graphs_rules(language):
    from nmt.data.tokenizer import normalize_strings

    pairs = read_pairs(FIXTURE)
    texts = TRICKY + [pair[0 if language == "en" else 1] for pair in pairs]
    assert [normalize_text(t, language) for t in texts] == normalize_strings(texts, language)


def test_normalize_text_french_spacing():
    assert normalize_text("«Oui»,  dit-il\u00a0:  Va!", "fr") == "« Oui », dit-il : Va !"
    assert normalize_text("«Oui»,  dit-il\u00a0:  Va!", "en") == "«Oui», dit-il : Va!"
    assert normalize_text("Le train part à 8:30.", "fr") == "Le train part à 8:30."
    with pytest.raises(ValueError, match="Received: language='de'"):
        normalize_text("Hallo", "de")


@pytest.mark.parametrize("model", ["tiny", "shipped"])
def test_plain_tokenizer_gives_the_graph_tokenizers_ids(model, tiny_tokenizers):
    import tensorflow as tf

    from nmt.data.tokenizer import SubwordTokenizer

    proto = (tiny_tokenizers.source.model_proto if model == "tiny"
             else SHIPPED_SPM.read_bytes())
    pairs = read_pairs(FIXTURE)
    for side, language in enumerate(("en", "fr")):
        texts = TRICKY + [pair[side] for pair in pairs]
        graph = SubwordTokenizer(proto, language).tokenize(tf.constant(texts)).to_list()
        assert PlainTokenizer(proto, language).tokenize(texts) == graph


def test_plain_tokenizer_detokenizes_search_output():
    tokenizer = PlainTokenizer.from_file(SHIPPED_SPM, "fr")
    ids = tokenizer.tokenize(["« Très bien ! »", "Ma sœur mange."])
    padded = [[subwords.BOS_ID, *ids[0], subwords.EOS_ID, subwords.PAD_ID, 99],
              [*ids[1], subwords.PAD_ID]]
    assert tokenizer.detokenize(padded) == ["« Très bien ! »", "Ma sœur mange."]
    assert tokenizer.vocab_size == 8000 and len(tokenizer.sha256) == 64
    with pytest.raises(ValueError, match="non-empty serialized SentencePiece model"):
        PlainTokenizer(b"", "en")


def test_the_graph_tokenizer_takes_its_ids_from_here():
    from nmt.data import tokenizer

    assert (tokenizer.PAD_ID, tokenizer.UNK_ID, tokenizer.BOS_ID, tokenizer.EOS_ID) == (0, 1, 2, 3)
    assert tokenizer.BOS_ID is subwords.BOS_ID and tokenizer.LANGUAGES is subwords.LANGUAGES
