"""Shared test setup: quiet TensorFlow logs, the shipped fixtures and the shared corpus."""

import os
from pathlib import Path

import pytest

# Before any test module imports TensorFlow.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
FIXTURES_DIR = TESTS_DIR / "fixtures"
SHARED_DATA_DIR = REPO_ROOT / ".." / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """`<repo>/../shared/data`; skips the test when it is not there."""
    if not SHARED_DATA_DIR.is_dir():
        pytest.skip(
            "needs ../shared/data (the Anki fra-eng corpus beside the checkout); absent here"
        )
    return SHARED_DATA_DIR.resolve()


@pytest.fixture(scope="session")
def tiny_pairs_path() -> Path:
    """~300 hand-written English<TAB>French pairs for tiny tokenizers and models."""
    return FIXTURES_DIR / "tiny_pairs.tsv"


@pytest.fixture(scope="session")
def tiny_pairs(tiny_pairs_path: Path) -> list[tuple[str, str]]:
    """The pairs of `tiny_pairs.tsv` as `(english, french)` tuples."""
    lines = tiny_pairs_path.read_text(encoding="utf-8").splitlines()
    return [tuple(line.split("\t")) for line in lines if line]
