"""Shared test setup: quiet TensorFlow logs, the shipped fixtures and the shared corpus."""

import os
import random
from pathlib import Path

import numpy as np
import pytest

# Before any test module imports TensorFlow.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
FIXTURES_DIR = TESTS_DIR / "fixtures"
# A worker holds TensorFlow and its module's exports (up to about 4 GB): `-n auto` makes one
# a core, at most this many.
MAX_WORKERS = 4
# The directories whose modules take longest, scheduled first so that no long module is
# left running alone at the end of a parallel run (`--dist loadfile` hands out modules in
# collection order).
LONGEST_FIRST = ("training", "nmt/inference", "nmt/test_backends.py", "nmt/test_model.py",
                 "nmt_cli", "batch", "bench")


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto`: a worker per core this process may use, at most `MAX_WORKERS`."""
    cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")  # not on macOS
             else os.cpu_count() or 1)
    return max(1, min(cores, MAX_WORKERS))


def pytest_collection_modifyitems(config, items) -> None:
    """The longest directories first; the order within each stays as collected."""
    def rank(item) -> int:
        where = Path(str(item.path)).relative_to(TESTS_DIR).as_posix()
        return next((k for k, prefix in enumerate(LONGEST_FIRST) if where.startswith(prefix)),
                    len(LONGEST_FIRST))

    items.sort(key=rank)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The data directory (`nmt.paths.data_dir()`); skips the test when it is not there."""
    from nmt.paths import DATA_DIR_ENV, data_dir

    directory = data_dir()
    if not directory.is_dir():
        pytest.skip(f"needs the data directory (the Anki fra-eng corpus), absent at {directory}; "
                    f"set {DATA_DIR_ENV} to where it is")
    return directory.resolve()


@pytest.fixture(scope="session")
def tiny_pairs_path() -> Path:
    """~300 hand-written English<TAB>French pairs for tiny tokenizers and models."""
    return FIXTURES_DIR / "tiny_pairs.tsv"


@pytest.fixture(scope="session")
def tiny_pairs(tiny_pairs_path: Path) -> list[tuple[str, str]]:
    """The pairs of `tiny_pairs.tsv` as `(english, french)` tuples."""
    lines = tiny_pairs_path.read_text(encoding="utf-8").splitlines()
    return [tuple(line.split("\t")) for line in lines if line]


@pytest.fixture(scope="session")
def tiny_tokenizers(tiny_pairs):
    """A joint 200-piece SentencePiece pair trained on the tiny fixture corpus.

    Any later `tf.random.set_seed` (`keras.utils.set_random_seed`, `nmt train`)
    clears TensorFlow's kernel cache and frees these tokenizers' SentencePiece
    resources, so a test that tokenizes rebuilds them from `model_proto`
    (`SubwordTokenizer(tiny_tokenizers.source.model_proto, "en")`).
    """
    from nmt.data.tokenizer import train_tokenizers

    return train_tokenizers(tiny_pairs, vocab_size=200, joint=True)


def make_tiny_module(tokenizers, **model_overrides):
    """An untrained tiny model wrapped for export; translations are gibberish.

    Its tokenizers are rebuilt from `tokenizers`' SentencePiece protos, so the
    module tokenizes even when an earlier `tf.random.set_seed` has freed the
    resources of `tokenizers` themselves (see `tiny_tokenizers`).
    """
    from nmt.data.tokenizer import SubwordTokenizer, TokenizerPair
    from nmt.inference.export import build_module
    from nmt.model import ModelConfig

    # Keras draws default initializer seeds from Python's `random`, so this makes the
    # tiny model the same in every run. Not keras.utils.set_random_seed: its
    # tf.random.set_seed clears TensorFlow's kernel cache, which frees the
    # SentencePiece resources of tokenizers that already exist (`tiny_tokenizers`).
    random.seed(7)
    np.random.seed(7)
    config = ModelConfig(**{
        "source_vocab_size": tokenizers.source.vocab_size,
        "target_vocab_size": tokenizers.target.vocab_size,
        "embedding_dim": 16, "hidden_dim": 32, "attention_units": 8,
        "input_feeding": False, "dropout": 0.0,
        **model_overrides,
    })
    live = TokenizerPair(source=SubwordTokenizer(tokenizers.source.model_proto, "en"),
                         target=SubwordTokenizer(tokenizers.target.model_proto, "fr"),
                         joint=tokenizers.joint)
    return build_module(config, live, {"name": "tiny", "attribution": "test fixture"})


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, tiny_tokenizers) -> Path:
    """`<base>/1/`: a tiny exported SavedModel in the TF Serving layout (base dir returned)."""
    from nmt.inference.export import export_saved_model

    base = tmp_path_factory.mktemp("models") / "tiny"
    export_saved_model(make_tiny_module(tiny_tokenizers), base, 1)
    return base


@pytest.fixture(scope="module")
def tiny_server(tiny_model_dir):
    """The gRPC server on the tiny model (127.0.0.1, free ports), serving."""
    from serving.server import ServerConfig
    from serving.testing import ServerThread

    config = ServerConfig(model_dir=tiny_model_dir, host="127.0.0.1", port=0, metrics_port=0,
                          poll_interval_s=0)
    with ServerThread(config) as running:
        running.wait_until_serving()
        yield running
