"""Bidirectional recurrent encoder."""

from __future__ import annotations

import keras
from keras import ops

from nmt.layers.bidirectional import bidirectional

_CELLS = {"lstm": keras.layers.LSTM, "gru": keras.layers.GRU}


@keras.saving.register_keras_serializable(package="nmt")
class Encoder(keras.layers.Layer):
    """Embedding followed by N bidirectional LSTM or GRU layers.

    Each layer reads the previous layer's output in both directions and
    concatenates the two, so every layer outputs `hidden_dim` features
    (`hidden_dim / 2` per direction). With `residual=True`, every layer after
    the first adds its input to its output (Wu et al. 2016), which keeps
    deeper stacks trainable.

    Args:
        embedding: the source embedding layer (may be shared with the decoder).
        hidden_dim: output size of every layer; must be even.
        num_layers: number of bidirectional layers.
        cell: `"lstm"` or `"gru"`.
        dropout: dropout rate on the embeddings and between layers.
        residual: residual connections between upper layers.

    Call arguments:
        source: int `(batch, S)` token ids, 0 = padding.

    Returns:
        `(memory, mask)`: memory `(batch, S, hidden_dim)`, mask bool `(batch, S)`.
    """

    def __init__(self, embedding, hidden_dim: int, num_layers: int = 2, cell: str = "lstm",
                 dropout: float = 0.0, residual: bool = True, **kwargs):
        super().__init__(**kwargs)
        if hidden_dim % 2:
            raise ValueError(f"hidden_dim must be even. Received: hidden_dim={hidden_dim!r}")
        if cell not in _CELLS:
            raise ValueError(f"cell must be one of {sorted(_CELLS)}. Received: cell={cell!r}")
        self.embedding = embedding
        self.hidden_dim = hidden_dim
        self.num_layers = num_layers
        self.cell = cell
        self.residual = residual
        self.dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy)
        self.rnn_layers = [
            bidirectional(
                _CELLS[cell](hidden_dim // 2, return_sequences=True, dtype=self.dtype_policy),
                name=f"bi_{cell}_{i}",
                dtype=self.dtype_policy,
            )
            for i in range(num_layers)
        ]

    def get_config(self):
        return {
            **super().get_config(),
            "embedding": keras.saving.serialize_keras_object(self.embedding),
            "hidden_dim": self.hidden_dim,
            "num_layers": self.num_layers,
            "cell": self.cell,
            "dropout": self.dropout.rate,
            "residual": self.residual,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["embedding"] = keras.saving.deserialize_keras_object(config["embedding"])
        return cls(**config)

    def call(self, source, training=False):
        mask = ops.not_equal(source, 0)  # (batch, S)
        x = self.dropout(self.embedding(source), training=training)  # (batch, S, emb)
        for i, layer in enumerate(self.rnn_layers):
            y = layer(x, mask=mask, training=training)  # (batch, S, hidden)
            if self.residual and i >= 1:
                y = y + x
            x = self.dropout(y, training=training) if i < self.num_layers - 1 else y
        # Padding positions carry no information; zero them so pooled states are clean.
        memory = x * ops.cast(mask, x.dtype)[:, :, None]  # (batch, S, hidden)
        return memory, mask
