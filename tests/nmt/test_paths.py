"""`nmt.paths`: the data directory setting and the scan of an export's version directories."""

from pathlib import Path

import pytest

from nmt.paths import DATA_DIR_ENV, data_dir, resolve_version_dir, version_dirs

REPO = Path(__file__).resolve().parents[2]


def test_data_dir_is_the_environment_variable_else_shared_data_beside_the_checkout(
        monkeypatch, tmp_path):
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    assert data_dir() == tmp_path
    monkeypatch.delenv(DATA_DIR_ENV)
    assert data_dir() == REPO.parent / "shared" / "data"
    monkeypatch.setenv(DATA_DIR_ENV, "")  # set but empty: the default
    assert data_dir() == REPO.parent / "shared" / "data"


def _version(base: Path, name: str, complete: bool = True) -> Path:
    path = base / name
    path.mkdir(parents=True)
    if complete:
        (path / "saved_model.pb").write_bytes(b"")
    return path


def test_version_dirs_keep_numbered_complete_saved_models(tmp_path):
    two, ten = _version(tmp_path, "2"), _version(tmp_path, "10")
    _version(tmp_path, "11", complete=False)  # still being written
    _version(tmp_path, "v3")  # not a version number
    assert version_dirs(tmp_path) == {2: two, 10: ten}
    assert version_dirs(tmp_path / "missing") == {}


def test_resolve_version_dir_takes_a_version_or_the_highest_in_a_base(tmp_path):
    two, ten = _version(tmp_path, "2"), _version(tmp_path, "10")
    assert resolve_version_dir(tmp_path) == ten  # 10 > 2, not "10" < "2"
    assert resolve_version_dir(two) == two
    with pytest.raises(FileNotFoundError, match=f"No SavedModel at {tmp_path / 'missing'}"):
        resolve_version_dir(tmp_path / "missing")
