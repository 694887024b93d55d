"""`Translator`: loading, typed results, forced alignment and option checks."""

import json
import logging
import shutil

import numpy as np
import pytest
import tensorflow as tf

from nmt.constants import METADATA_PATH
from nmt.data.tokenizer import BOS_ID, EOS_ID
from nmt.inference import precision
from nmt.inference.export import module_from_export
from nmt.inference.translator import Translator
from nmt.paths import resolve_version_dir
from nmt.types import DecodeOptions, Hypothesis, Translation

SENTENCES = ["I love you.", "The children read a book.", "Où est la gare ?"]


@pytest.fixture(scope="module")
def translator(tiny_model_dir) -> Translator:
    return Translator.load(tiny_model_dir)


@pytest.fixture(scope="module")
def exported_module(tiny_model_dir):
    """The in-process module of the same export (model weights and tokenizers)."""
    return module_from_export(tiny_model_dir / "1")


# ------------------------------------------------------------------------------ loading


def test_load_picks_the_highest_version(tiny_model_dir, tmp_path):
    for version in ("2", "10"):
        shutil.copytree(tiny_model_dir / "1", tmp_path / version)
    (tmp_path / "11").mkdir()  # not a SavedModel
    shutil.copytree(tiny_model_dir / "1", tmp_path / "v99")  # not a version number
    assert resolve_version_dir(tmp_path) == tmp_path / "10"
    assert resolve_version_dir(tmp_path / "2") == tmp_path / "2"
    info = Translator.load(tmp_path).info
    assert (info.version, info.path) == (10, str(tmp_path / "10"))


def test_load_without_a_model_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="No SavedModel"):
        Translator.load(tmp_path)


def test_model_info(translator, tiny_model_dir):
    info = translator.info
    assert (info.name, info.version) == ("tiny", 1)
    assert info.attention == "luong-general"
    assert info.source_vocab_size == info.target_vocab_size == 200
    assert info.metadata["attribution"] == "test fixture"


# ------------------------------------------------------------------------------ precision


@pytest.fixture(scope="module")
def both_model_dir(tiny_model_dir, tmp_path_factory):
    """The tiny model exported with both paths (float32 standard, bfloat16 parallel)."""
    from nmt.inference.export import export_saved_model

    base = tmp_path_factory.mktemp("both") / "tiny"
    export_saved_model(module_from_export(tiny_model_dir / "1", "both"), base, 1)
    return base


def fake_cpu(monkeypatch, tmp_path, flags: str) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nflags\t\t: fpu avx2 {flags}\n")
    monkeypatch.setattr(precision, "CPUINFO", cpuinfo)


@pytest.mark.parametrize("flags, expected", [("avx512f", "float32"),
                                             ("avx512f avx512_bf16", "bfloat16"),
                                             ("amx_tile amx_bf16", "bfloat16")])
def test_auto_translates_on_the_path_the_cpu_runs_best(both_model_dir, flags, expected,
                                                       monkeypatch, tmp_path, caplog):
    fake_cpu(monkeypatch, tmp_path, flags)
    with caplog.at_level(logging.INFO, logger="nmt.inference.translator"):
        auto = Translator.load(both_model_dir)
    named = Translator.load(both_model_dir, expected)

    assert auto.info.precision == expected and auto.info.precisions == ("float32", "bfloat16")
    assert auto.info.precision_reason.startswith("auto: the CPU has")
    assert f"translates with {expected} matrix products (auto: the CPU has" in caplog.text
    got, want = auto.translate(SENTENCES, beam_size=2), named.translate(SENTENCES, beam_size=2)
    assert [r.text for r in got] == [r.text for r in want]
    assert [r.score for r in got] == [r.score for r in want]


@pytest.mark.slow
def test_each_path_translates_as_the_one_path_export_of_its_precision(both_model_dir,
                                                                      tiny_model_dir, tmp_path):
    from nmt.inference.export import export_saved_model

    bfloat16_only = export_saved_model(module_from_export(tiny_model_dir / "1", "bfloat16"),
                                       tmp_path, 1)
    for path, single in (("float32", tiny_model_dir), ("bfloat16", bfloat16_only)):
        got = Translator.load(both_model_dir, path).translate(SENTENCES, beam_size=3)
        want = Translator.load(single).translate(SENTENCES, beam_size=3)
        assert Translator.load(single).info.precisions == (path,)
        for g, w in zip(got, want, strict=True):
            assert (g.text, g.score) == (w.text, w.score), path
            np.testing.assert_array_equal(g.best.alignment, w.best.alignment)
    # Forced alignment computes in float32 on both paths.
    pairs = SENTENCES, ["J'aime.", "Les enfants lisent.", "La gare ?"]
    assert ([r.score for r in Translator.load(both_model_dir, "bfloat16").align(*pairs)]
            == [r.score for r in Translator.load(both_model_dir, "float32").align(*pairs)])


def test_a_path_the_export_lacks_is_a_clear_error(tiny_model_dir):
    assert Translator.load(tiny_model_dir, "float32").info.precision == "float32"
    with pytest.raises(ValueError, match=r"carries no bfloat16 path \(it carries float32\): "
                                         r"re-export it with both"):
        Translator.load(tiny_model_dir, "bfloat16")
    with pytest.raises(ValueError, match="Received: precision='fastest'"):
        Translator.load(tiny_model_dir, "fastest")


def test_an_export_older_than_parallel_paths_loads_on_its_one_path(tiny_model_dir, tmp_path,
                                                                   monkeypatch):
    shutil.copytree(tiny_model_dir / "1", tmp_path / "1")
    metadata_path = tmp_path / "1" / METADATA_PATH
    metadata = json.loads(metadata_path.read_text())
    del metadata["precision"], metadata["precisions"]
    metadata_path.write_text(json.dumps(metadata))
    fake_cpu(monkeypatch, tmp_path, "avx512_bf16")

    info = Translator.load(tmp_path).info

    assert (info.precision, info.precisions) == ("float32", ("float32",))
    assert info.precision_reason == "auto: the export carries only float32"


# ------------------------------------------------------------------------------ results


def check_hypothesis(hypothesis: Hypothesis, source: str, source_tokens: tuple) -> None:
    assert isinstance(hypothesis.text, str) and isinstance(hypothesis.score, float)
    assert all(isinstance(token, str) and token for token in hypothesis.target_tokens)
    assert hypothesis.alignment.dtype == np.float32
    assert hypothesis.alignment.shape == (len(hypothesis.target_tokens), len(source_tokens))
    np.testing.assert_allclose(hypothesis.alignment.sum(axis=1), 1.0, atol=1e-5)
    n_source, n_target = len(source.split()), len(hypothesis.text.split())
    for s, t in hypothesis.word_alignment:
        assert isinstance(s, int) and 0 <= s < n_source
        assert isinstance(t, int) and 0 <= t < n_target
    assert hypothesis.pharaoh() == " ".join(f"{s}-{t}" for s, t in hypothesis.word_alignment)


def test_translate_returns_typed_results(translator):
    results = translator.translate(SENTENCES)
    assert [r.source for r in results] == SENTENCES
    for result in results:
        assert isinstance(result, Translation) and len(result.nbest) == 1
        assert result.source_tokens[-1] == "</s>" and "" not in result.source_tokens
        check_hypothesis(result.best, result.source, result.source_tokens)
        assert result.text == result.best.text and result.score == result.best.score


def test_n_best_lists_are_sorted(translator):
    results = translator.translate(SENTENCES, beam_size=4, n_best=3)
    for result in results:
        assert len(result.nbest) == 3
        scores = [h.score for h in result.nbest]
        assert scores == sorted(scores, reverse=True)
        assert len({h.target_tokens for h in result.nbest}) == 3
        for hypothesis in result.nbest:
            check_hypothesis(hypothesis, result.source, result.source_tokens)


def test_options_object_and_overrides(translator):
    greedy = translator.translate(SENTENCES[:1], DecodeOptions(beam_size=1))[0]
    overridden = translator.translate(SENTENCES[:1], DecodeOptions(beam_size=5), beam_size=1)[0]
    assert overridden.best.target_tokens == greedy.best.target_tokens
    assert translator.translate([]) == []


def test_align_scores_the_given_targets(translator):
    targets = ["Je t'aime!", "Les enfants lisent un livre.", "Où est la gare ?"]
    results = translator.align(SENTENCES, targets)
    for result, target in zip(results, targets, strict=True):
        assert result.text == target
        assert result.best.target_tokens[-1] == "</s>"
        assert np.isfinite(result.score) and result.score < 0
        check_hypothesis(result.best, result.source, result.source_tokens)
    assert translator.align([], []) == []


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"beam_size": 0}, "beam_size=0"),
        ({"beam_size": 2, "n_best": 3}, "n_best=3"),
        ({"max_length_ratio": 0.0}, "max_length_ratio=0.0"),
        ({"beam": 4}, "Unknown keys \\['beam'\\] in decoding options"),
    ],
)
def test_bad_options_are_rejected(translator, overrides, message):
    with pytest.raises(ValueError, match=message):
        translator.translate(SENTENCES[:1], **overrides)


def test_bad_inputs_are_rejected(translator):
    # TypeError, as from the gRPC clients (one check, `nmt.types.sentence_list`).
    with pytest.raises(TypeError, match="not a single string"):
        translator.translate("I love you.")
    with pytest.raises(TypeError, match="sentence 1 must be a str. Received: int"):
        translator.translate(["I love you.", 3])
    with pytest.raises(TypeError, match="targets must be a sequence of strings"):
        translator.align(SENTENCES[:1], "Je t'aime.")
    with pytest.raises(ValueError, match="2 sources and 1 targets"):
        translator.align(SENTENCES[:2], ["Je t'aime."])


# ------------------------------------------------------------------------------ alignments


def test_search_alignment_equals_teacher_forced_attention(translator, exported_module):
    """Every returned hypothesis carries the attention that produced it."""
    target = exported_module.target_tokenizer
    vocab = target.id_to_piece(tf.range(target.vocab_size)).numpy()
    piece_id = {piece.decode("utf-8"): i for i, piece in enumerate(vocab)}
    piece_id["</s>"] = EOS_ID
    for result in translator.translate(SENTENCES, beam_size=3, n_best=3):
        source = [*exported_module.source_tokenizer.tokenize(result.source).numpy(), EOS_ID]
        assert len(source) == len(result.source_tokens)
        for hypothesis in result.nbest:
            ids = [piece_id[token] for token in hypothesis.target_tokens]
            target_in = tf.constant([[BOS_ID, *ids[:-1]]], tf.int32)  # (1, T)
            _, attention = exported_module.model((tf.constant([source], tf.int32), target_in))
            np.testing.assert_allclose(hypothesis.alignment, attention.numpy()[0], atol=1e-5)


# ------------------------------------------------------------------------------ confidence


def _teacher_forced_log_probs(module, source_tokens, target_tokens, banned=()):
    """Each target piece's log-probability, with the model in-process and NumPy's softmax."""
    target = module.target_tokenizer
    vocab = target.id_to_piece(tf.range(target.vocab_size)).numpy()
    piece_id = {piece.decode("utf-8"): i for i, piece in enumerate(vocab)}
    piece_id["</s>"] = EOS_ID
    source = [*module.source_tokenizer.tokenize(" ".join(source_tokens)).numpy(), EOS_ID]
    ids = [piece_id[token] for token in target_tokens]
    logits, _ = module.model((tf.constant([source], tf.int32),
                              tf.constant([[BOS_ID, *ids[:-1]]], tf.int32)))
    logits = logits.numpy()[0].astype(np.float64)  # (T, V)
    logits[:, list(banned)] = -np.inf
    log_probs = logits - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1,
                                keepdims=True)) - logits.max(1, keepdims=True)
    return log_probs[np.arange(len(ids)), ids]  # (T,)


@pytest.mark.parametrize("coverage_penalty", [0.0, 0.4])
def test_translations_carry_their_searched_pieces_and_words_log_probabilities(
        translator, exported_module, coverage_penalty):
    from nmt.data.tokenizer import PAD_ID

    results = translator.translate(SENTENCES, beam_size=3, n_best=2, length_penalty=1.0,
                                   coverage_penalty=coverage_penalty)
    for result in results:
        for hypothesis in result.nbest:
            expected = _teacher_forced_log_probs(  # the search never picks PAD or BOS
                exported_module, [result.source], hypothesis.target_tokens, (PAD_ID, BOS_ID))
            np.testing.assert_allclose(hypothesis.piece_scores, expected, rtol=1e-4, atol=1e-5)
            assert hypothesis.confidence == pytest.approx(expected.mean(), rel=1e-4)
            assert len(hypothesis.word_scores) == len(hypothesis.text.split())
            np.testing.assert_allclose(
                hypothesis.word_scores,
                _word_means(hypothesis.target_tokens, hypothesis.piece_scores, hypothesis.text),
                rtol=1e-5)


@pytest.mark.parametrize("coverage_penalty", [0.0, 0.4])
def test_an_export_whose_translations_lack_piece_scores_still_gives_confidence(
        tiny_model_dir, exported_module, monkeypatch, coverage_penalty):
    # Exports from before the search kept piece log-probabilities: the confidence is
    # recovered from the normalised score, word and piece scores are None.
    from nmt.data.tokenizer import PAD_ID

    older = Translator.load(tiny_model_dir)
    signature = older._translate

    def without_piece_scores(**inputs):
        return {key: value for key, value in signature(**inputs).items()
                if key not in ("piece_scores", "word_scores")}

    monkeypatch.setattr(older, "_translate", without_piece_scores)
    results = older.translate(SENTENCES, beam_size=3, n_best=2, length_penalty=1.0,
                              coverage_penalty=coverage_penalty)
    for result in results:
        for hypothesis in result.nbest:
            expected = _teacher_forced_log_probs(
                exported_module, [result.source], hypothesis.target_tokens, (PAD_ID, BOS_ID))
            assert hypothesis.confidence == pytest.approx(expected.mean(), rel=1e-4)
            assert hypothesis.word_scores is None and hypothesis.piece_scores is None


def _word_means(tokens, scores, text):
    """NumPy reference: the mean score of the pieces of each whitespace word of `text`.

    Pieces form words where "▁" starts one; normalisation may split a given
    word ("aime!" is read as "aime !"), so those are joined back by their characters.
    """
    read: list[tuple[str, list[float]]] = []
    for token, score in zip(tokens, scores, strict=True):
        if token == "</s>":
            continue
        if token.startswith("▁") or not read:
            read.append(("", []))
        chars, values = read[-1]
        read[-1] = (chars + token.replace("▁", ""), [*values, score])
    means, k = [], 0
    for word in text.split():
        chars, values = "", []
        while chars != word:
            chars, values = chars + read[k][0], values + read[k][1]
            k += 1
        means.append(float(np.mean(values)))
    return means


def test_align_returns_piece_and_word_log_probabilities(translator, exported_module):
    from nmt.data.tokenizer import PAD_ID

    targets = ["Je t'aime!", "Les enfants lisent un livre.", "Où est la gare ?"]
    for result in translator.align(SENTENCES, targets):
        best = result.best
        # Normalised as the search normalises: PAD and BOS get no probability.
        expected = _teacher_forced_log_probs(exported_module, [result.source],
                                             best.target_tokens, banned=(PAD_ID, BOS_ID))
        np.testing.assert_allclose(best.piece_scores, expected, rtol=1e-4, atol=1e-5)
        assert best.score == pytest.approx(best.piece_scores.sum(), rel=1e-5)
        assert best.confidence == pytest.approx(best.score / len(best.target_tokens))
        assert len(best.word_scores) == len(result.text.split())
        np.testing.assert_allclose(best.word_scores,
                                   _word_means(best.target_tokens, best.piece_scores, result.text),
                                   rtol=1e-5)
