"""`bench/step_variants.py`: the variants it times compute what the export computes."""

import numpy as np
import tensorflow as tf

from bench.step_variants import batches, decoder_step, int8_matmul, search_inputs
from nmt.inference.export import module_from_export

SENTENCES = ["the cat sleeps .", "i like green tea very much .", "he is here ."]


def test_xla_step_equals_the_exported_step(tiny_model_dir):
    module = module_from_export(tiny_model_dir / "1")
    tokens, state, memory = search_inputs(module, SENTENCES, beam=3)
    plain = decoder_step(module, tf.float32, jit_compile=False)(tokens, state, memory)
    xla = decoder_step(module, tf.float32, jit_compile=True)(tokens, state, memory)
    assert plain[0].shape == (9, module.model.config.target_vocab_size)
    for expected, got in zip(tf.nest.flatten(plain), tf.nest.flatten(xla), strict=True):
        np.testing.assert_allclose(got.numpy(), expected.numpy(), atol=1e-5)


def test_int8_product_approximates_the_float_product():
    rng = np.random.default_rng(0)
    x = rng.normal(0, 0.5, (16, 64)).astype(np.float32)
    w = rng.normal(0, 0.2, (64, 48)).astype(np.float32)
    expected = x @ w
    got = int8_matmul(tf.constant(x), tf.constant(w)).numpy()
    # 256 levels over each operand's range: errors of a few hundredths.
    assert np.abs(got - expected).max() < 0.03 * np.abs(expected).max()
    assert np.corrcoef(got.ravel(), expected.ravel())[0, 1] > 0.999


def test_batches_pick_by_character_length():
    sentences = [f"{'w ' * n}." for n in range(200)]
    groups = batches(sentences)
    assert [len(g) for g in groups.values()] == [1, 1, 64, 64]
    assert groups["64 sentences, longest"][-1] == sentences[-1]
    assert groups["1 sentence, median"] == [sentences[100]]
