"""Version selection, warm-up before traffic, and broken versions, with a fake loader."""

import json
import logging
import os
import shutil
import types

import pytest

from nmt.types import DecodeOptions
from serving.errors import ModelUnavailable
from serving.metrics import ServingMetrics
from serving.model_store import WARMUP_SENTENCES, ModelStore, translator_loader


class FakeTranslator:
    def __init__(self, path):
        if (path / "BROKEN_LOAD").exists():
            raise OSError(f"cannot read {path}")
        self.info = types.SimpleNamespace(name="fake", version=int(path.name), attention="dot",
                                          precision="bfloat16",
                                          precision_reason="auto: the CPU has amx_bf16")
        self.fail_warmup = (path / "BROKEN_WARMUP").exists()
        self.calls = []

    def translate(self, sentences, options=None):
        self.calls.append(list(sentences))
        if self.fail_warmup:
            raise RuntimeError("graph error")
        return [f"v{self.info.version}:{s}" for s in sentences]

    def align(self, sources, targets):
        return [f"v{self.info.version}:{s}={t}" for s, t in zip(sources, targets, strict=True)]


class CountingLoader:
    def __init__(self):
        self.loaded = []

    def __call__(self, path):
        self.loaded.append(int(path.name))
        return FakeTranslator(path)


def _version(base, number, *markers):
    path = base / str(number)
    path.mkdir(parents=True)
    (path / "saved_model.pb").write_bytes(b"")
    for marker in markers:
        (path / marker).write_text("")
    return path


@pytest.fixture
def store(tmp_path):
    return ModelStore(tmp_path, ServingMetrics(), loader=CountingLoader())


def test_nothing_serves_before_the_first_load(store):
    with pytest.raises(ModelUnavailable, match="no model is loaded yet .* SERVING"):
        store.translate(["a"], DecodeOptions())
    with pytest.raises(ModelUnavailable, match="no model is loaded yet"):
        store.align(["a"], ["A"])
    assert store.version is None and store.refresh() is False


def test_the_highest_complete_version_serves_after_its_warm_up(store, tmp_path):
    _version(tmp_path, 1)
    _version(tmp_path, 3)
    (tmp_path / "7").mkdir()  # no saved_model.pb: still being written
    (tmp_path / "notes").mkdir()

    assert store.refresh() is True
    assert store.version == 3 and store._loader.loaded == [3]
    assert store.translator.calls == [list(WARMUP_SENTENCES)]
    assert store.translate(["a"], DecodeOptions()) == (3, ["v3:a"])
    assert store.align(["a", "b"], ["A", "B"]) == (3, ["v3:a=A", "v3:b=B"])
    assert store.refresh() is False and store._loader.loaded == [3]


def test_a_new_version_replaces_the_current_one(store, tmp_path):
    _version(tmp_path, 1)
    store.refresh()
    _version(tmp_path, 2)

    assert store.refresh() is True and store.version == 2
    sample = store._metrics.registry.get_sample_value
    assert sample("nmt_model_info", {"name": "fake", "version": "2", "attention": "dot",
                                     "precision": "bfloat16"}) == 1
    assert sample("nmt_model_loads_total", {"result": "success"}) == 2


def test_a_load_is_logged_with_its_precision_path(store, tmp_path, caplog):
    _version(tmp_path, 1)
    with caplog.at_level(logging.INFO, logger="nmt.serving.model_store"):
        store.refresh()
    record = json.loads(caplog.records[-1].getMessage())
    assert record["event"] == "model_loaded"
    assert record["precision"] == "bfloat16"
    assert record["precision_reason"] == "auto: the CPU has amx_bf16"


def test_the_default_loader_loads_on_the_path_asked_for(tiny_model_dir):
    assert translator_loader("float32")(tiny_model_dir / "1").info.precision == "float32"
    with pytest.raises(ValueError, match="carries no bfloat16 path"):
        translator_loader("bfloat16")(tiny_model_dir / "1")
    with pytest.raises(ValueError, match="Received: precision='fp16'"):
        translator_loader("fp16")


@pytest.mark.parametrize("marker", ["BROKEN_LOAD", "BROKEN_WARMUP"])
def test_a_broken_version_is_logged_and_the_current_one_keeps_serving(store, tmp_path, caplog,
                                                                        marker):
    _version(tmp_path, 1)
    store.refresh()
    _version(tmp_path, 2, marker)

    with caplog.at_level(logging.ERROR, logger="nmt.serving.model_store"):
        assert store.refresh() is False
    assert store.version == 1
    record = json.loads(caplog.records[-1].getMessage())
    assert record["event"] == "model_load_failed" and record["version"] == 2
    assert record["serving_version"] == 1 and record["path"].endswith("/2")
    assert store._metrics.registry.get_sample_value(
        "nmt_model_loads_total", {"result": "failure"}) == 1


def test_a_failed_version_is_retried_only_when_its_files_change(store, tmp_path):
    _version(tmp_path, 1)
    broken = _version(tmp_path, 2, "BROKEN_LOAD")
    store.refresh()
    store.refresh()
    assert store._loader.loaded == [2, 1]  # 2 failed once, then 1 served; 2 not retried

    (broken / "BROKEN_LOAD").unlink()
    stamp = broken.stat().st_mtime + 5
    os.utime(broken / "saved_model.pb", (stamp, stamp))
    assert store.refresh() is True and store.version == 2


def test_removing_the_served_version_rolls_back_to_the_next_one(store, tmp_path):
    _version(tmp_path, 1)
    newest = _version(tmp_path, 2)
    store.refresh()
    assert store.version == 2
    shutil.rmtree(newest)

    assert store.refresh() is True and store.version == 1
