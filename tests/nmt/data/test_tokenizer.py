import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from nmt.data import tokenizer as tokenizer_lib
from nmt.data.tokenizer import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    UNK_ID,
    SubwordTokenizer,
    TokenizerPair,
    normalize_tensor,
    train_sentencepiece,
    train_tokenizers,
)

VOCAB_SIZE = 200

FRENCH = [
    "Où est l’hôtel ?",
    "Elle a dit : « Très bien ! »",
    "Ma sœur mange une crêpe.",
    "Hier, j'ai acheté des fleurs ; puis je suis parti.",
    "Le train part à 8:30.",
]
ENGLISH = [
    "I don't like coffee.",
    "Where is the station?",
    'He said "yes".',
    "Yesterday, my sister bought some flowers.",
]


@pytest.fixture(scope="module")
def pair(tiny_pairs) -> TokenizerPair:
    return train_tokenizers(tiny_pairs, vocab_size=VOCAB_SIZE, joint=True)


@pytest.fixture(scope="module")
def fr(pair) -> SubwordTokenizer:
    return pair.target


@pytest.fixture(scope="module")
def en(pair) -> SubwordTokenizer:
    return pair.source


def _text(tensor) -> str:
    return tensor.numpy().decode("utf-8")


def _texts(tensor) -> list[str]:
    return [t.decode("utf-8") for t in tensor.numpy()]


# Normalisation -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "language, text, expected",
    [
        ("fr", "Va!", "Va !"),
        ("fr", "« Bonjour»", "« Bonjour »"),
        ("fr", "«Bonjour»", "« Bonjour »"),
        ("fr", "Quoi?!", "Quoi ?!"),
        ("fr", "Quoi   ?", "Quoi ?"),
        ("fr", "Attention: danger; vite!", "Attention : danger ; vite !"),
        ("fr", "Il est 8:30.", "Il est 8:30."),
        ("fr", "Bonjour\u00a0!", "Bonjour !"),
        ("fr", "Vraiment\u202f?", "Vraiment ?"),
        ("fr", "C\u2018est \u02bcici\u2019", "C'est 'ici'"),
        ("fr", "!Oui", "!Oui"),
        ("fr", "Fin:", "Fin :"),
        ("fr", "Oui!» (vraiment?)", "Oui ! » (vraiment ?)"),
        # Marks inside a token stay glued: URLs, C++ scopes, Sphinx roles.
        ("fr", "Voir https://a.fr et std::map.", "Voir https://a.fr et std::map."),
        ("fr", "Lisez :ref:`x`: ici", "Lisez :ref:`x` : ici"),
        ("en", "I\u2019m  here", "I'm here"),
        ("en", "Hi!", "Hi!"),
        ("en", "Note: it's late; go?", "Note: it's late; go?"),
        ("en", "  Hello,\tworld \n", "Hello, world"),
        ("en", "a\u200bb\u0007c", "a b c"),
        ("en", "Cafe\u0301 \ufb01ne", "Café fine"),
        ("en", "", ""),
    ],
)
def test_normalize_exact(language, text, expected):
    assert _text(normalize_tensor(text, language)) == expected


@pytest.mark.parametrize("language", ["en", "fr"])
def test_normalize_is_idempotent(language):
    texts = ["Va!", "« Bonjour»", "I’m  here", "Quoi?!", "x\u00a0:\u202fy", " « » ", "8:30 !",
             "Oui!»", "https://a.fr:8080/ fin:"]
    once = normalize_tensor(texts, language)
    np.testing.assert_array_equal(normalize_tensor(once, language).numpy(), once.numpy())


def test_english_normalisation_keeps_words():
    texts = ["Hi!", "It's  8:30;\tgo\u00a0now?", "«Quoted»  words", " a  b "]
    for text, normalised in zip(texts, _texts(normalize_tensor(texts, "en")), strict=True):
        assert normalised.split() == text.split()


def test_unknown_language_is_rejected():
    with pytest.raises(ValueError, match="Received: language='de'"):
        normalize_tensor("Hallo", "de")


# Input kinds --------------------------------------------------------------------------------


def test_scalar_gives_1d_ids(fr):
    ids = fr.tokenize(tf.constant("Où est la gare ?"))
    assert isinstance(ids, tf.Tensor)
    assert ids.shape.rank == 1
    assert ids.dtype == tf.int32
    assert ids.shape[0] > 0


def test_batch_gives_ragged_ids(fr):
    ids = fr.tokenize(tf.constant(FRENCH))
    assert isinstance(ids, tf.RaggedTensor)
    assert ids.shape.as_list() == [len(FRENCH), None]
    assert ids.dtype == tf.int32


def test_ragged_rows_equal_scalar_results(fr):
    batch = fr.tokenize(FRENCH).to_list()
    singles = [fr.tokenize(text).numpy().tolist() for text in FRENCH]
    assert batch == singles


def test_empty_string(fr):
    assert fr.tokenize("").shape == (0,)
    ids = fr.tokenize(["", "Va !", ""])
    assert ids.row_lengths().numpy().tolist()[0::2] == [0, 0]
    assert _texts(fr.detokenize(ids)) == ["", "Va !", ""]


def test_long_input(fr):
    text = " ".join(["Il aime le café."] * 500)  # 2,000 words
    ids = fr.tokenize(text)
    assert int(tf.reduce_sum(tf.cast(fr.word_starts(ids), tf.int32))) == 2000
    assert _text(fr.detokenize(ids)) == text


def test_french_accents_apostrophes_guillemets(fr):
    text = "Elle a murmuré : «J’ai peur.» Où est l’hôtel?"
    ids = fr.tokenize(text)
    assert UNK_ID not in ids.numpy()
    assert _text(fr.detokenize(ids)) == "Elle a murmuré : « J'ai peur. » Où est l'hôtel ?"


def test_non_breaking_spaces(fr):
    with_nbsp = fr.tokenize(["Vraiment\u202f?", "Bonjour\u00a0!", "«\u00a0Oui\u00a0»"])
    plain = fr.tokenize(["Vraiment ?", "Bonjour !", "« Oui »"])
    assert with_nbsp.to_list() == plain.to_list()


@pytest.mark.parametrize("which, sentences", [("fr", FRENCH), ("en", ENGLISH)])
def test_detokenize_inverts_tokenize(pair, which, sentences):
    tokenizer = pair.target if which == "fr" else pair.source
    ids = tokenizer.tokenize(sentences)
    assert UNK_ID not in ids.flat_values.numpy()
    np.testing.assert_array_equal(
        tokenizer.detokenize(ids).numpy(), tokenizer.normalize(sentences).numpy()
    )


def test_unknown_characters_become_unk(fr):
    ids = fr.tokenize("Ça coûte 12 € !").numpy()
    assert UNK_ID in ids


# Detokenize, pieces, word starts ---------------------------------------------------------------


def test_detokenize_dense_stops_at_first_eos(fr):
    ragged = fr.tokenize(["Va !", "Où est la gare ?"])
    rows = [[BOS_ID, *row, EOS_ID, 7, 8] for row in ragged.to_list()]
    width = max(len(row) for row in rows)
    dense = tf.constant([row + [PAD_ID] * (width - len(row)) for row in rows])  # (2, T)
    assert _texts(fr.detokenize(dense)) == ["Va !", "Où est la gare ?"]
    assert _text(fr.detokenize(dense[1])) == "Où est la gare ?"


def test_detokenize_ragged_drops_special_ids(fr):
    ids = fr.tokenize(["Va !"]).to_list()[0]
    ragged = tf.ragged.constant([[BOS_ID, *ids, EOS_ID, PAD_ID]])
    assert _texts(fr.detokenize(ragged)) == ["Va !"]


def test_special_ids(fr):
    assert (PAD_ID, UNK_ID, BOS_ID, EOS_ID) == (0, 1, 2, 3)
    pieces = _texts(fr.id_to_piece([PAD_ID, UNK_ID, BOS_ID, EOS_ID]))
    assert pieces == ["<pad>", "<unk>", "<s>", "</s>"]
    assert not fr.word_starts([PAD_ID, UNK_ID, BOS_ID, EOS_ID]).numpy().any()


def test_id_to_piece_keeps_shape(fr):
    ids = fr.tokenize(FRENCH[:2])
    pieces = fr.id_to_piece(ids)
    assert pieces.row_lengths().numpy().tolist() == ids.row_lengths().numpy().tolist()
    dense = fr.id_to_piece(tf.constant([[4, 5], [6, 7]]))
    assert dense.shape == (2, 2)


@pytest.mark.parametrize("sentence", FRENCH)
def test_word_starts_group_pieces_into_words(fr, sentence):
    ids = fr.tokenize(sentence)
    starts = fr.word_starts(ids).numpy()
    pieces = _texts(fr.id_to_piece(ids))
    word_index = np.cumsum(starts) - 1  # (tokens,)
    words = [""] * (word_index[-1] + 1)
    for index, piece in zip(word_index, pieces, strict=True):
        words[index] += piece.replace(tokenizer_lib.WORD_START, "")
    assert starts[0]
    assert words == _text(fr.normalize(sentence)).split()


def test_word_starts_with_unknown_word(fr):
    ids = fr.tokenize(["Il voit 漢字 ici", "x"])
    counts = tf.reduce_sum(tf.cast(fr.word_starts(ids), tf.int32), axis=1)
    assert counts.numpy().tolist() == [4, 1]


def test_offsets_point_into_normalised_text(fr):
    sentence = "Où est  l’hôtel?"
    ids, starts, ends = fr.tokenize_with_offsets(sentence)
    text = fr.normalize(sentence).numpy()
    assert ids.numpy().tolist() == fr.tokenize(sentence).numpy().tolist()
    for piece, start, end in zip(
        _texts(fr.id_to_piece(ids)), starts.numpy(), ends.numpy(), strict=True
    ):
        span = text[start:end].decode("utf-8")
        assert span.strip() == piece.replace(tokenizer_lib.WORD_START, "")
    assert int(ends.numpy()[-1]) == len(text)


def test_ops_work_inside_tf_function(fr):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def round_trip(texts):
        ids = fr.tokenize(texts)
        return fr.detokenize(ids), fr.word_starts(ids).to_tensor(), ids.to_tensor()

    texts, starts, ids = round_trip(tf.constant(FRENCH))
    np.testing.assert_array_equal(texts.numpy(), fr.detokenize(fr.tokenize(FRENCH)).numpy())
    np.testing.assert_array_equal(ids.numpy(), fr.tokenize(FRENCH).to_tensor().numpy())
    np.testing.assert_array_equal(starts.numpy(), fr.word_starts(ids).numpy())


# Training and persistence ----------------------------------------------------------------------


def test_properties(fr):
    assert fr.language == "fr"
    assert fr.vocab_size == VOCAB_SIZE
    assert isinstance(fr.vocab_size, int)
    assert SubwordTokenizer(fr.model_proto, "en").vocab_size == VOCAB_SIZE


def test_bad_model_proto_is_rejected():
    with pytest.raises(ValueError, match="model_proto"):
        SubwordTokenizer(b"", "fr")


def test_training_is_deterministic(tiny_pairs):
    texts = tokenizer_lib.normalize_strings([fr for _, fr in tiny_pairs], "fr")
    assert train_sentencepiece(texts, 100, seed=3) == train_sentencepiece(texts, 100, seed=3)


def test_joint_and_separate_models(tiny_pairs, pair):
    assert pair.joint
    assert pair.source.model_proto == pair.target.model_proto
    assert (pair.source.language, pair.target.language) == ("en", "fr")
    separate = train_tokenizers(tiny_pairs, vocab_size=VOCAB_SIZE, joint=False)
    assert not separate.joint
    assert separate.source.model_proto != separate.target.model_proto
    english, french = zip(*tiny_pairs, strict=True)
    assert UNK_ID not in separate.source.tokenize(list(english)).flat_values.numpy()
    assert UNK_ID not in separate.target.tokenize(list(french)).flat_values.numpy()


def test_write_and_from_file(fr, tmp_path):
    path = tmp_path / "sub" / "fr.model"
    fr.write(path)
    loaded = SubwordTokenizer.from_file(path, "fr")
    assert loaded.model_proto == fr.model_proto
    assert loaded.tokenize(FRENCH).to_list() == fr.tokenize(FRENCH).to_list()


def test_pair_save_and_load(pair, tmp_path):
    pair.save(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["source.model", "target.model", "tokenizer.json"]
    meta = json.loads((tmp_path / "tokenizer.json").read_text())
    assert meta == {"source_language": "en", "target_language": "fr", "joint": True}
    loaded = TokenizerPair.load(tmp_path)
    assert loaded.joint and loaded.target.language == "fr"
    assert loaded.source.tokenize(ENGLISH).to_list() == pair.source.tokenize(ENGLISH).to_list()


_LOAD_IN_FRESH_PROCESS = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the SentencePiece ops)
module = tf.saved_model.load(sys.argv[1])
ids = module.tokenize(tf.constant(json.loads(sys.argv[2])))
asset = module.tokenizer.model_asset.asset_path.numpy().decode()
print(json.dumps({"ids": ids.to_list(), "asset": asset,
                  "project_imported": any(m.split(".")[0] == "nmt" for m in sys.modules)}))
"""


class _Exported(tf.Module):
    def __init__(self, tokenizer):
        super().__init__()
        self.tokenizer = tokenizer

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(self, texts):
        return self.tokenizer.tokenize(texts)


def test_saved_model_carries_the_tokenizer(fr, tmp_path):
    model_file = tmp_path / "fr.model"
    fr.write(model_file)
    tokenizer = SubwordTokenizer.from_file(model_file, "fr")
    export_dir = tmp_path / "export"
    tf.saved_model.save(_Exported(tokenizer), str(export_dir))
    model_file.unlink()
    os.remove(tokenizer.model_asset.asset_path.numpy())  # the private copy, too

    result = subprocess.run(
        [sys.executable, "-c", _LOAD_IN_FRESH_PROCESS, str(export_dir), json.dumps(FRENCH)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded["ids"] == fr.tokenize(FRENCH).to_list()
    assert not loaded["project_imported"]
    assert loaded["asset"].startswith(str(export_dir / "assets"))
    assert (export_dir / "assets" / "fr.spm.model").read_bytes() == fr.model_proto
