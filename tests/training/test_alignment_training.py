"""Guided alignment and the alignment head in the Keras trainer (`training.alignment_training`),
here on the TensorFlow backend of the test process; tests/training/test_keras_trainer.py runs
a head under JAX and exports it."""

import json

import keras
import numpy as np
import pytest
import yaml

from nmt.alignment.guided_alignment import guided_alignment_loss
from nmt.data import shards
from nmt.data.shard_links import attach_links
from nmt.data.shard_writer import write_shards
from nmt.data.subwords import PlainTokenizer
from nmt.model import ModelConfig, Seq2Seq
from tests.training.test_guided_training import gold_links, reversal_pairs
from training import corpus_alignment as ca
from training.alignment_training import AlignmentTraining, head_weights
from training.keras_trainer import make_trainer
from training.weight_files import load_parts, save_parts

PAIRS = reversal_pairs(600, 0)
BASE = {
    "name": "tiny-aligned",
    "data": {"train": "unused.tsv", "dev": "unused.tsv", "max_tokens_per_sentence": 24},
    "model": {"embedding_dim": 32, "hidden_dim": 32, "attention_units": 16,
              "encoder_layers": 1, "dropout": 0.0},
    "optim": {"max_tokens": 400, "learning_rate": 0.01, "warmup_steps": 10,
              "precision": "float32", "checkpoint_every": 1000, "eval_every": 1000,
              "log_every": 50, "seed": 3},
}


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    """Shards of the reversal task and its true word links on their pieces."""
    from nmt.data.tokenizer import train_tokenizers

    root = tmp_path_factory.mktemp("aligned")
    (root / "train.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in PAIRS), encoding="utf-8")
    tokenizers = train_tokenizers(PAIRS, vocab_size=60, joint=True)
    proto = tokenizers.source.model_proto
    write_shards(root / "train.tsv", root / "shards",
                 (PlainTokenizer(proto, "en"), PlainTokenizer(proto, "fr")),
                 max_tokens_per_sentence=24)
    sources = ca.piece_word_indices(tokenizers.source, [s for s, _ in PAIRS])
    targets = ca.piece_word_indices(tokenizers.target, [t for _, t in PAIRS])
    ca.write_alignments(root / "gold.txt", [
        ca.word_links_to_pieces(gold_links(pair), s, t)
        for pair, s, t in zip(PAIRS, sources, targets, strict=True)])
    return root


def config(root, name, **sections):
    values = {**json.loads(json.dumps(BASE)), "name": name}
    for section, entries in sections.items():
        values.setdefault(section, {}).update(entries)
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(values))
    return path


def trainer_for(task, name, **sections):
    return make_trainer(config(task, name, **sections), task / "shards", task / name,
                        alignments=task / "gold.txt")


def batch(trainer):
    return next(trainer.batches())


def _log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def test_the_loss_is_translation_plus_weighted_guided_attention(task):
    """Against NumPy: label-smoothed cross-entropy over non-padding pieces, plus the weight
    times the mean over linked rows of -sum_s q_ts log(a_ts + 1e-6)."""
    trainer = trainer_for(task, "guided-loss", guided_alignment={"type": "ce", "weight": 0.5},
                          model={"label_smoothing": 0.1})
    source, target_in, target_out, gold = batch(trainer)
    out = trainer.trainee((source, target_in, target_out), training=False)
    loss = float(trainer.trainee.compute_loss(y=(target_out, gold), y_pred=out))

    log_probs = _log_softmax(np.asarray(out["logits"], np.float64))
    nll = -np.take_along_axis(log_probs, target_out[..., None], axis=-1)[..., 0]
    smoothed = 0.9 * nll + 0.1 * -log_probs.mean(axis=-1)
    mask = target_out > 0
    translation = smoothed[mask].mean()
    attention = np.asarray(out["attention"], np.float64)
    mass = gold.sum(axis=-1)
    linked = mass > 0
    q = gold[linked] / mass[linked][:, None]
    guided = (-(q * np.log(attention[linked] + 1e-6)).sum(axis=-1)).mean()
    assert linked.sum() > 20
    np.testing.assert_allclose(loss, translation + 0.5 * guided, rtol=1e-5)


def test_a_frozen_head_learns_alone_and_leaves_the_model_as_it_was(task):
    trainer = trainer_for(task, "frozen", model={"alignment_head": "general"},
                          alignment_head={"train": "frozen", "init_from": "unused"},
                          optim={"log_every": 10})
    head = {id(w) for w in head_weights(trainer.model)}
    assert head and {id(w) for w in trainer.trainee.trainable_variables} == head
    before = [np.array(w) for w in trainer.model.weights]
    trainer.fit(max_steps=30)
    after = [np.array(w) for w in trainer.model.weights]
    changed = {id(w) for w, old, new in zip(trainer.model.weights, before, after, strict=True)
               if not np.array_equal(old, new)}
    assert changed == head
    history = [json.loads(line) for line in (task / "frozen" / "history.jsonl").open()]
    assert not any("dev_loss" in record for record in history)  # translations unchanged
    summary = json.loads((task / "frozen" / "summary.json").read_text())
    assert summary["objective"] == "alignment head (frozen model)"
    losses = [record["loss"] for record in history if "loss" in record]
    assert losses and all(np.isfinite(losses))


def test_links_are_asked_for_when_the_config_needs_them(task):
    path = config(task, "no-links", guided_alignment={"type": "ce", "weight": 1.0})
    with pytest.raises(ValueError, match="pass --alignments FILE"):
        make_trainer(path, task / "shards", task / "no-links")


def test_weights_without_a_head_start_a_model_with_one(tmp_path):
    keras.utils.set_random_seed(1)
    common = {"source_vocab_size": 30, "target_vocab_size": 30, "embedding_dim": 8,
              "hidden_dim": 8, "attention_units": 4}
    plain = Seq2Seq(ModelConfig(**common))
    plain.build_for()
    save_parts(plain, tmp_path / "weights")
    with_head = Seq2Seq(ModelConfig(**common, alignment_head="general"))
    with_head.build_for()
    head = head_weights(with_head)
    fresh = [np.array(w) for w in head]
    load_parts(with_head, tmp_path / "weights", new=head)
    rest = [w for w in with_head.weights if id(w) not in {id(h) for h in head}]
    for theirs, ours in zip(plain.weights, rest, strict=True):
        np.testing.assert_array_equal(np.array(theirs), np.array(ours))
    for value, weight in zip(fresh, head, strict=True):
        np.testing.assert_array_equal(value, np.array(weight))
    with pytest.raises(ValueError, match="another architecture"):
        load_parts(with_head, tmp_path / "weights")


@pytest.mark.slow
def test_guided_attention_follows_the_links_the_unguided_does_not(task):
    """After the same steps, the guided model's attention is far nearer the true links."""
    linked = attach_links(shards.load_split(task / "shards"), task / "gold.txt", len(PAIRS))
    source, target_in, target_out, gold = next(shards.iter_batches(
        linked, max_tokens=400, seed=9, epoch=0, gold=True))
    distance = {}
    for name, guide in (("plain", {}), ("guided", {"type": "ce", "weight": 1.0})):
        sections = {"guided_alignment": guide} if guide else {}
        trainer = trainer_for(task, f"learn-{name}", **sections)
        trainer.fit(max_steps=250)
        out = trainer.model.teacher_forced(source, target_in, target_out)
        distance[name] = float(guided_alignment_loss(out["attention"], gold))
    assert distance["guided"] < 0.5 * distance["plain"], distance


def test_a_trainer_without_links_trains_the_model_itself(task):
    trainer = make_trainer(config(task, "plain-only"), task / "shards", task / "plain-only")
    assert trainer.trainee is trainer.model and not isinstance(trainer.trainee,
                                                              AlignmentTraining)
    assert len(batch(trainer)) == 3


def test_a_run_records_what_it_started_from_and_its_time_over_resumes(task, tmp_path):
    """The summary keys a model card follows (`training.model_card_data.run_chain`)."""
    first = make_trainer(config(task, "first"), task / "shards", tmp_path / "first")
    first.fit(max_steps=3)
    out = tmp_path / "first-out"
    save_parts(first.model, out / "weights", metadata={"steps": [3]})
    (out / "summary.json").write_text((tmp_path / "first" / "summary.json").read_text())
    second = make_trainer(config(task, "second"), task / "shards", tmp_path / "second")
    second.start_from(out / "weights")
    for theirs, ours in zip(first.model.weights, second.model.weights, strict=True):
        np.testing.assert_array_equal(np.array(theirs), np.array(ours))
    before = second.fit(max_steps=2)
    start = before["starting_model"]
    assert start["name"] == "first" and start["training"]["steps"] == 3
    assert start["training"]["averaged_checkpoints"] == [3]
    resumed = make_trainer(config(task, "second"), task / "shards", tmp_path / "second",
                           resume=True)
    assert resumed.starting_model == start
    after = resumed.fit(max_steps=4)
    assert (after["name"], after["steps"], after["starting_model"]) == ("second", 4, start)
    assert after["train_seconds"] > before["train_seconds"] > 0
    assert after["part_hours"] * 3600 < after["train_seconds"]
    assert after["machine"]["cpu"] and after["machine"]["accelerators"] == []
    kept = shards.read_manifest(task / "shards")["splits"]["train"]["examples"]
    assert after["train_pairs"] == kept
