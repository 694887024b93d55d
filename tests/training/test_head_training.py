"""The alignment head trained end to end on a synthetic reversal task: frozen on a trained
run (translations byte-identical, alignments far better) and jointly with the model."""

import numpy as np
import pytest
import tensorflow as tf
import yaml

from nmt.evaluation.metrics import alignment_scores
from nmt.model import ModelConfig, Seq2Seq
from tests.training.test_guided_training import (
    gold_links,
    reversal_pairs,
    write_gold_piece_links,
    write_run_config,
)
from training import train as train_module
from training.config import load_config
from training.export_run import module_from_run

TEST = reversal_pairs(60, 1)


def forced(run_dir):
    module = module_from_run(run_dir)
    return module, module.align(tf.constant([s for s, _ in TEST]),
                                tf.constant([t for _, t in TEST]))


def aer(out) -> float:
    predicted = [
        {tuple(int(x) for x in link.split("-")) for link in text.decode().split()}
        for text in out["word_alignments"].numpy()
    ]
    gold = [gold_links(pair) for pair in TEST]
    return alignment_scores(predicted, gold, gold).aer


def head_config(tmp_path, name: str, train: str, init_from=None, steps: int = 200,
                context: int = 0, agreement: str = "none"):
    path = write_run_config(tmp_path, name, guided=False)
    config = yaml.safe_load(path.read_text())
    config["model"]["alignment_head"] = "general"
    config["model"]["alignment_head_context"] = context
    config["model"]["alignment_head_agreement"] = agreement
    config["data"]["train_alignments"] = str(tmp_path / "gold.txt")
    config["alignment_head"] = {"train": train, **({"init_from": str(init_from)}
                                                    if init_from else {})}
    config["optim"]["max_steps"] = steps
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory):
    """An unguided model trained on the task, and the gold piece links of its corpus."""
    tmp_path = tmp_path_factory.mktemp("head")
    run = train_module.run(write_run_config(tmp_path, "plain", False), tmp_path / "plain")
    write_gold_piece_links(tmp_path / "plain.yaml", run, tmp_path / "gold.txt")
    return tmp_path, run


@pytest.mark.slow
@pytest.mark.parametrize("context, agreement", [(0, "none"), (8, "none"), (8, "separate")])
def test_frozen_head_aligns_far_better_and_changes_no_translation(plain_run, context,
                                                                  agreement):
    tmp_path, plain = plain_run
    name = f"frozen{context}-{agreement}"
    config = head_config(tmp_path, name, "frozen", init_from=plain, steps=150, context=context,
                         agreement=agreement)
    run = train_module.run(config, tmp_path / name)
    plain_module, plain_out = forced(plain)
    head_module, head_out = forced(run)
    assert aer(head_out) < 0.1, aer(head_out)
    assert aer(head_out) < aer(plain_out) - 0.2, (aer(head_out), aer(plain_out))
    # Every weight but the head's is the starting run's, so translations are identical.
    head_layers = head_module.model.decoder.head_layers
    assert len(head_layers) == 1 + bool(context) + (agreement == "separate")
    head_ids = {id(w) for layer in head_layers for w in layer.weights}
    rest = [w for w in head_module.model.weights if id(w) not in head_ids]
    for weight, start in zip(rest, plain_module.model.weights, strict=True):
        np.testing.assert_array_equal(weight.numpy(), start.numpy())
    sources = tf.constant([s for s, _ in TEST[:8]])
    ours, theirs = head_module.translate(sources), plain_module.translate(sources)
    assert ours["translations"].numpy().tolist() == theirs["translations"].numpy().tolist()
    np.testing.assert_array_equal(ours["scores"].numpy(), theirs["scores"].numpy())
    np.testing.assert_array_equal(ours["attention"].numpy(), theirs["alignments"].numpy())
    summary = yaml.safe_load((run / "summary.json").read_text())
    assert summary["alignment_head"]["init_from"] == "../plain"  # relative, no machine paths
    assert summary["starting_model"]["training"]["steps"] == 250  # for the model card
    assert (run / "tokenizer" / "tokenizer.json").exists()


@pytest.mark.slow
def test_joint_head_trains_with_the_model(plain_run):
    tmp_path, _ = plain_run
    run = train_module.run(head_config(tmp_path, "joint", "joint", steps=250),
                           tmp_path / "joint")
    _, out = forced(run)
    assert aer(out) < 0.15, aer(out)


@pytest.mark.slow
def test_frozen_needs_a_start_and_a_matching_model(plain_run):
    tmp_path, plain = plain_run
    path = head_config(tmp_path, "nostart", "frozen")
    with pytest.raises(ValueError, match="init_from"):
        load_config(path)
    bad = head_config(tmp_path, "bigger", "frozen", init_from=plain)
    config = yaml.safe_load(bad.read_text())
    config["model"]["hidden_dim"] = 48
    bad.write_text(yaml.safe_dump(config))
    with pytest.raises(ValueError, match="architecture"):
        train_module.run(bad, tmp_path / "bigger")
    missing = head_config(tmp_path, "missing", "frozen", init_from=tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="neither an exported model"):
        train_module.run(missing, tmp_path / "missing")


def tiny_model(head: bool) -> Seq2Seq:
    config = ModelConfig(source_vocab_size=40, target_vocab_size=40, embedding_dim=8,
                         hidden_dim=16, alignment_head="general" if head else None,
                         alignment_head_context=4 if head else 0)
    model = Seq2Seq(config)
    model.build_for()
    return model


def test_a_start_with_the_same_head_gives_every_weight_its_head_included():
    start, model = tiny_model(head=True), tiny_model(head=True)
    assert train_module.copy_weights(start, model) == len(model.weights)
    for weight, value in zip(model.weights, start.weights, strict=True):
        np.testing.assert_array_equal(weight.numpy(), value.numpy())


def test_a_start_without_a_head_gives_every_weight_but_the_new_heads():
    start, model = tiny_model(head=False), tiny_model(head=True)
    head_ids = {id(w) for layer in model.decoder.head_layers for w in layer.weights}
    fresh_head = [w.numpy() for w in model.weights if id(w) in head_ids]
    assert train_module.copy_weights(start, model) == len(start.weights)
    rest = [w for w in model.weights if id(w) not in head_ids]
    for weight, value in zip(rest, start.weights, strict=True):
        np.testing.assert_array_equal(weight.numpy(), value.numpy())
    for weight, value in zip([w for w in model.weights if id(w) in head_ids], fresh_head,
                             strict=True):
        np.testing.assert_array_equal(weight.numpy(), value)  # left as initialised


def test_a_start_with_another_head_gives_every_weight_but_the_heads():
    start = tiny_model(head=True)
    model = Seq2Seq(ModelConfig(source_vocab_size=40, target_vocab_size=40, embedding_dim=8,
                                hidden_dim=16, alignment_head="general",
                                alignment_head_context=4, alignment_head_reader="conv"))
    model.build_for()
    copied = train_module.copy_weights(start, model)
    start_head = {id(w) for layer in start.decoder.head_layers for w in layer.weights}
    head_ids = {id(w) for layer in model.decoder.head_layers for w in layer.weights}
    assert copied == len(start.weights) - len(start_head)
    rest = [w for w in model.weights if id(w) not in head_ids]
    for weight, value in zip(rest, [w for w in start.weights if id(w) not in start_head],
                             strict=True):
        np.testing.assert_array_equal(weight.numpy(), value.numpy())
