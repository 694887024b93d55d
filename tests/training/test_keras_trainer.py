"""The Keras trainer on JAX, and its weights exported on TensorFlow.

Trains a tiny model a few steps under JAX from shards of the tiny corpus
(`python -m training.accelerator.train`, a subprocess: the backend is fixed at
import), brings the weights back with `training.accelerator.import_weights` and
exports the run with `nmt export`'s code; the SavedModel translates as the
TensorFlow model holding those weights does.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from nmt.data.shard_writer import write_shards
from nmt.data.subwords import PlainTokenizer

REPO = Path(__file__).resolve().parents[2]
LINES = ["I like tea.", "Where is the station?", "He is my friend."]

pytestmark = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                                reason="jax is not installed (the dev extra installs it)")

CONFIG = {
    "name": "tiny-keras",
    "data": {"train": "unused.tsv", "dev": "unused.tsv", "join_fraction": 0.05,
             "max_tokens_per_sentence": 24},
    "model": {"embedding_dim": 16, "hidden_dim": 16, "attention_units": 8,
              "share_embeddings": True, "input_feeding": False, "dropout": 0.1},
    "optim": {"max_tokens": 400, "learning_rate": 0.01, "warmup_steps": 2, "precision": "float32",
              "checkpoint_every": 3, "eval_every": 4, "log_every": 2, "keep_checkpoints": 2},
}


@pytest.fixture(scope="module")
def jax_run(tmp_path_factory, tiny_pairs, tiny_tokenizers):
    """A run of 6 steps under JAX: its `--out` directory, shards and run directory."""
    root = tmp_path_factory.mktemp("keras-trainer")
    corpus = root / "corpus"
    corpus.mkdir()
    lines = [f"{e}\t{f}\t{'ab'[n % 2]}" for n, (e, f) in enumerate(tiny_pairs)]
    (corpus / "train.tsv").write_text("\n".join(lines[40:]) + "\n", encoding="utf-8")
    (corpus / "dev.tsv").write_text("\n".join(lines[:40]) + "\n", encoding="utf-8")
    proto = tiny_tokenizers.source.model_proto
    shards_dir = root / "shards"
    write_shards(corpus, shards_dir, (PlainTokenizer(proto, "en"), PlainTokenizer(proto, "fr")),
                 max_tokens_per_sentence=24)
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    out, run = root / "out", root / "run"
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    result = subprocess.run(
        [sys.executable, "-m", "training.accelerator.train", "--config", str(config),
         "--shards", str(shards_dir), "--run", str(run), "--backend", "jax",
         "--max-steps", "6", "--average", "2", "--out", str(out)],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return out, shards_dir, run


@pytest.mark.slow
def test_a_jax_run_leaves_checkpoints_a_history_and_averaged_weights(jax_run):
    out, _, run = jax_run
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["steps"], summary["stop"], summary["backend"]) == (6, "max_steps", "jax")
    history = [json.loads(line) for line in (out / "history.jsonl").read_text().splitlines()]
    logged = [record for record in history if "loss" in record]
    assert [record["step"] for record in logged] == [2, 4, 6]
    assert all(record["target_tokens_per_s"] > 0 for record in logged)
    dev = [record for record in history if "dev_loss" in record]
    assert dev and set(dev[0]["dev_loss"]) == set(dev[0]["dev"]) == {"a", "b", "all"}
    assert all(0 <= scores["chrf"] <= 100 for scores in dev[0]["dev"].values())
    assert sorted(p.name for p in (run / "checkpoints").glob("*.weights.h5")) == [
        "step-00000003.weights.h5", "step-00000006.weights.h5"]  # keep_checkpoints: 2
    index = json.loads((out / "weights" / "weights.json").read_text())
    assert index["steps"] == [3, 6]


@pytest.mark.slow
def test_resume_continues_from_the_last_checkpoint(jax_run, tmp_path):
    _, shards_dir, run = jax_run
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    copy = tmp_path / "run"
    subprocess.run(["cp", "-r", str(run), str(copy)], check=True)
    result = subprocess.run(
        [sys.executable, "-m", "training.accelerator.train", "--config",
         str(run.parent / "config.yaml"), "--shards", str(shards_dir), "--run", str(copy),
         "--backend", "jax", "--resume", "--max-steps", "8"],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "resumed at step 6" in result.stdout
    assert json.loads((copy / "summary.json").read_text())["steps"] == 8


@pytest.mark.slow
def test_jax_weights_export_on_tensorflow_and_translate_as_the_model_does(jax_run, tmp_path):
    import tensorflow as tf

    from nmt.inference.export import export_saved_model
    from training.accelerator.import_weights import import_weights
    from training.export_run import module_from_run

    out, shards_dir, _ = jax_run
    run = tmp_path / "run"
    import_weights(out, shards_dir, run)
    module = module_from_run(run)
    # The weights are those JAX averaged, not a fresh initialisation.
    with np.load(out / "weights" / "weights-0.npz") as part:
        np.testing.assert_array_equal(module.model.weights[0].numpy(), part["0000"])
    path = export_saved_model(module, tmp_path / "export", 1)
    loaded = tf.saved_model.load(str(path))
    exported = loaded.signatures["serving_default"](sentences=tf.constant(LINES))
    in_process = module.translate(tf.constant(LINES))
    assert [t.decode() for t in exported["translations"].numpy()] == [
        t.decode() for t in in_process["translations"].numpy()]
    np.testing.assert_allclose(exported["scores"].numpy(), in_process["scores"].numpy(),
                               atol=1e-5)


def test_nmt_train_on_another_backend_asks_for_shards(tmp_path, capsys):
    from nmt_cli.main import main

    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    code = main(["train", "--config", str(config), "--run", str(tmp_path / "run"),
                 "--backend", "jax"])
    assert code == 2
    assert "nmt shards" in capsys.readouterr().err


@pytest.mark.slow
def test_two_devices_train_as_one_with_data_parallelism(jax_run, tmp_path):
    """Two virtual CPU devices (keras.distribution.DataParallel): the same steps give
    the same weights as one device, up to the order of float additions."""
    _, shards_dir, run = jax_run
    config = run.parent / "config.yaml"
    weights = {}
    for devices in (1, 2):
        env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu",
               "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}"}
        out = tmp_path / f"out-{devices}"
        result = subprocess.run(
            [sys.executable, "-m", "training.accelerator.train", "--config", str(config),
             "--shards", str(shards_dir), "--run", str(tmp_path / f"run-{devices}"),
             "--backend", "jax", "--max-steps", "2", "--average", "1", "--out", str(out),
             "--set", "model.dropout=0.0", "--set", "optim.max_tokens=384"],
            env=env, cwd=REPO, capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, result.stderr[-3000:]
        assert json.loads((out / "summary.json").read_text())["devices"] == devices
        with np.load(out / "weights" / "weights-0.npz") as part:
            weights[devices] = {key: part[key] for key in part.files}
    for key, value in weights[1].items():
        np.testing.assert_allclose(weights[2][key], value, atol=1e-5, err_msg=key)


def test_greedy_decode_picks_what_teacher_forcing_scores_highest():
    """Each piece greedy search picks is the argmax of the teacher-forced logits
    given the pieces before it; nothing follows EOS but padding."""
    from nmt.data.subwords import BOS_ID, EOS_ID, PAD_ID
    from nmt.model import ModelConfig, Seq2Seq
    from training.keras_trainer import greedy_decode

    model = Seq2Seq(ModelConfig(source_vocab_size=30, target_vocab_size=30, embedding_dim=8,
                                hidden_dim=8, attention_units=4, dropout=0.0))
    model.build_for()
    source = np.array([[5, 6, 7, EOS_ID], [8, 9, EOS_ID, PAD_ID]], np.int32)
    ids = greedy_decode(model, source, max_steps=6)
    target_in = np.concatenate([np.full((2, 1), BOS_ID, np.int32), ids[:, :-1]], axis=1)
    logits, _ = model((source, target_in))
    best = np.argmax(np.asarray(logits), axis=-1)
    for row in range(2):
        ended = np.flatnonzero(ids[row] == EOS_ID)
        length = ended[0] + 1 if len(ended) else ids.shape[1]
        np.testing.assert_array_equal(ids[row, :length], best[row, :length])
        assert (ids[row, length:] == PAD_ID).all()


@pytest.mark.slow
def test_a_head_trained_under_jax_on_frozen_weights_exports_and_translates_the_same(
        jax_run, tmp_path, tiny_tokenizers):
    """`--init-weights` of a model without a head and `--alignments`: the head trains alone
    under JAX; exported on TensorFlow, it translates as the model did and gives its own
    alignment matrices."""
    import tensorflow as tf

    from nmt.data import shards
    from nmt.data.corpus import read_pairs
    from nmt.inference.export import export_saved_model
    from training.accelerator.import_weights import import_weights
    from training.export_run import module_from_run

    out, shards_dir, _ = jax_run
    pairs = read_pairs(shards.read_manifest(shards_dir)["splits"]["train"]["from"])
    tokenizer = PlainTokenizer(tiny_tokenizers.source.model_proto, "en")
    sources = [len(ids) for ids in tokenizer.tokenize([e for e, _ in pairs])]
    targets = [len(ids) for ids in tokenizer.tokenize([f for _, f in pairs])]
    links = tmp_path / "links.txt"
    links.write_text("".join(" ".join(f"{j * s // t}-{j}" for j in range(t)) + "\n"
                             for s, t in zip(sources, targets, strict=True)), encoding="utf-8")
    config = json.loads(json.dumps(CONFIG))
    config["model"]["alignment_head"] = "general"
    config["alignment_head"] = {"train": "frozen", "init_from": str(out / "weights")}
    (tmp_path / "head.yaml").write_text(yaml.safe_dump(config))
    head_out = tmp_path / "head-out"
    result = subprocess.run(
        [sys.executable, "-m", "training.accelerator.train", "--config",
         str(tmp_path / "head.yaml"), "--shards", str(shards_dir), "--run",
         str(tmp_path / "head-run"), "--backend", "jax", "--max-steps", "4", "--average", "1",
         "--init-weights", str(out / "weights"), "--alignments", str(links),
         "--out", str(head_out)],
        env={**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}, cwd=REPO,
        capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((head_out / "summary.json").read_text())
    assert summary["objective"] == "alignment head (frozen model)" and summary["steps"] == 4

    plain, head = tmp_path / "plain", tmp_path / "head"
    import_weights(out, shards_dir, plain)
    import_weights(head_out, shards_dir, head)
    plain_module, head_module = module_from_run(plain), module_from_run(head)
    assert head_module.has_head and not plain_module.has_head
    path = export_saved_model(head_module, tmp_path / "export", 1)
    exported = tf.saved_model.load(str(path)).signatures["serving_default"](
        sentences=tf.constant(LINES))
    theirs = plain_module.translate(tf.constant(LINES))
    assert [t.decode() for t in exported["translations"].numpy()] == [
        t.decode() for t in theirs["translations"].numpy()]
    in_process = head_module.translate(tf.constant(LINES))
    np.testing.assert_allclose(exported["alignments"].numpy(),
                               in_process["alignments"].numpy(), atol=1e-5)
    assert not np.allclose(exported["alignments"].numpy(), theirs["alignments"].numpy())
