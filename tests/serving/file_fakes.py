"""A server on a fake model for the whole-file tests: every word upper-cased and linked to
itself, so a translated file reads as its input shouted (a failure is readable), and no
TensorFlow is loaded.

    with fake_server(tmp_path) as (server, model):
        TranslationClient(server.target).translate_file(data, "messages.pot")
        model.calls   # the sentences of every model call

A plain module, not a conftest: `conftest` is the shared root module that other tests
import by that name.
"""

from __future__ import annotations

import contextlib
import types
from pathlib import Path

import numpy as np

from nmt.types import DecodeOptions, Hypothesis, Translation
from serving.server import ServerConfig
from serving.testing import ServerThread


def shouted(sentence: str) -> Translation:
    """`sentence` upper-cased word by word, each target word linked to its source word."""
    words = sentence.split()
    source_tokens = (*words, "</s>")
    target_tokens = tuple(w.upper() for w in words)
    weights = np.full((len(target_tokens), len(source_tokens)), 1 / len(source_tokens),
                      np.float32)
    hypothesis = Hypothesis(text=" ".join(target_tokens), target_tokens=target_tokens,
                            score=-1.0, alignment=weights,
                            word_alignment=tuple((i, i) for i in range(len(words))))
    return Translation(source=sentence, source_tokens=source_tokens, nbest=(hypothesis,))


class ShoutingModel:
    """Stands for `Translator` in the server (`loader=`); records each call's sentences."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def __call__(self, path: Path) -> ShoutingModel:
        self.info = types.SimpleNamespace(
            name="shouting", version=int(path.name), path=str(path), attention="none",
            source_vocab_size=1, target_vocab_size=1, metadata={}, alignment="attention",
            word_links="argmax", default_options=DecodeOptions(), precision="float32",
            precisions=("float32",), precision_reason="fake")
        return self

    def translate(self, sentences, options=None) -> list[Translation]:
        self.calls.append(list(sentences))
        return [shouted(s) for s in sentences]

    @property
    def read(self) -> list[str]:
        """Every sentence of every call but the warm-up, in order."""
        return [s for call in self.calls[1:] for s in call]


def fake_model_dir(base: Path) -> Path:
    """`base/1/saved_model.pb` (empty): a version directory for the fake to "load"."""
    (base / "1").mkdir(parents=True, exist_ok=True)
    (base / "1" / "saved_model.pb").write_bytes(b"")
    return base


@contextlib.contextmanager
def fake_server(base: Path, **config):
    """`(ServerThread, ShoutingModel)`: a serving server on the fake model, 127.0.0.1,
    free ports; `config` overrides `ServerConfig` fields (e.g. `http_port`, `limits`)."""
    model = ShoutingModel()
    settings = {"host": "127.0.0.1", "port": 0, "metrics_port": 0, "poll_interval_s": 0,
                **config}
    with ServerThread(ServerConfig(model_dir=fake_model_dir(base), **settings),
                      loader=model) as server:
        server.wait_until_serving()
        yield server, model
