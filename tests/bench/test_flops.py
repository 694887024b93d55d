"""`bench/flops.py`: multiply-adds counted from shapes match the model's own weights."""

import pytest

from bench.flops import decoder_step_macs, encoder_macs, forward_macs
from nmt.model import ModelConfig, Seq2Seq

TINY = dict(source_vocab_size=90, target_vocab_size=90, embedding_dim=12, hidden_dim=16,
            encoder_layers=2, attention_units=8)


def kernel_sizes(layer) -> int:
    """Entries of the layer's matrices, biases and embeddings aside, and the
    decoder's bridge (it maps the encoder state once per sentence, not per step)."""
    return sum(int(w.shape.num_elements()) for w in layer.weights
               if len(w.shape) == 2 and "embedding" not in w.path and "bridge" not in w.path)


def test_encoder_count_is_one_multiply_add_per_kernel_entry():
    config = ModelConfig(**TINY, decoder="luong", attention="dot", input_feeding=False)
    model = Seq2Seq(config)
    model.build_for()
    assert encoder_macs(config) == kernel_sizes(model.encoder)


@pytest.mark.parametrize("settings", [
    dict(decoder="luong", attention="dot", input_feeding=False),
    dict(decoder="luong", attention="dot", input_feeding=True),
    dict(decoder="bahdanau", attention="bahdanau"),
])
def test_decoder_step_without_source_is_its_matrices_once(settings):
    """With no source positions only the query projections, RNN, combination and
    output matrices are used, each once per step (the tied output projection is
    the embedding matrix)."""
    config = ModelConfig(**TINY, **settings)
    model = Seq2Seq(config)
    model.build_for()
    matrices = kernel_sizes(model.decoder) + config.target_vocab_size * config.embedding_dim
    if config.attention == "bahdanau":  # the key projection runs once per source token
        matrices -= config.hidden_dim * config.attention_units
    assert decoder_step_macs(config, source_len=0) == matrices


def test_forward_is_encoder_per_source_token_and_steps_per_target_token():
    config = ModelConfig(**TINY, decoder="luong", attention="general", input_feeding=False)
    assert forward_macs(config, 7, 5) == 7 * encoder_macs(config) + 5 * decoder_step_macs(config, 7)
