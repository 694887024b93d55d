"""Work counted from a model's shapes, and the machine's matrix-multiply peak.

The benchmarks report how far a measured rate is from what these cores can
do: multiply-adds per encoded source token and per decoder step come from
the layer shapes of `nmt.model.ModelConfig` (matrix products only; element-
wise ops, softmax and the search itself are not counted), the peak from a
timed square matrix multiply.
"""

from __future__ import annotations

import time

import tensorflow as tf

from nmt.model import ModelConfig


def matmul_peak(dtype: tf.DType, n: int = 2048, repeats: int = 20) -> float:
    """Measured GFLOP/s of an n x n matrix multiply."""
    a = tf.cast(tf.random.normal([n, n], dtype=tf.float32), dtype)
    product = tf.function(lambda x: tf.matmul(x, x))
    product(a).numpy()
    started = time.perf_counter()
    for _ in range(repeats):
        result = product(a)
    result.numpy()
    return 2 * n**3 * repeats / (time.perf_counter() - started) / 1e9


def encoder_macs(config: ModelConfig) -> float:
    """Multiply-adds per source token: the bidirectional encoder and the attention keys."""
    e, h = config.embedding_dim, config.hidden_dim
    half = h // 2
    encoder = 2 * 4 * half * (e + half) + (config.encoder_layers - 1) * 2 * 4 * half * (h + half)
    if config.attention in ("bahdanau", "concat"):
        keys = h * config.attention_units
    else:
        keys = h * h if config.attention == "general" else 0
    return encoder + keys


def decoder_step_macs(config: ModelConfig, source_len: int) -> float:
    """Multiply-adds of one decoder step for one hypothesis over `source_len` tokens."""
    e, h, v = config.embedding_dim, config.hidden_dim, config.target_vocab_size
    decoder_in = e + (e if config.decoder == "luong" and config.input_feeding else 0)
    decoder_in += h if config.decoder == "bahdanau" else 0
    rnn = 4 * h * (decoder_in + h) + (config.decoder_layers - 1) * 4 * h * (2 * h)
    per_query = 0
    if config.attention in ("bahdanau", "concat"):
        per_query = h * config.attention_units + source_len * config.attention_units
    attention = per_query + 2 * source_len * h  # scores and context
    combine = (2 * h * e) if config.decoder == "luong" else (h + h + e) * e
    return rnn + attention + combine + e * v


def forward_macs(config: ModelConfig, source_len: int, target_len: int) -> float:
    """Multiply-adds of one sentence pair's teacher-forced forward pass."""
    return source_len * encoder_macs(config) + target_len * decoder_step_macs(config, source_len)
