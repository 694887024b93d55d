"""Guided alignment end to end: on a synthetic reversal task, guided attention aligns better."""

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import yaml

from nmt.evaluation.metrics import alignment_scores
from training import corpus_alignment as ca
from training import train as train_module
from training.config import load_config
from training.export_run import module_from_run

ENGLISH = ["red", "blue", "cat", "dog", "sun", "moon", "tree", "fish", "bird", "star"]
FRENCH = ["rouge", "bleu", "chat", "chien", "soleil", "lune", "arbre", "poisson", "oiseau",
          "neige"]


def reversal_pairs(count: int, seed: int) -> list[tuple[str, str]]:
    """Target = the source words translated one by one, in reverse order."""
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(count):
        ids = rng.choice(len(ENGLISH), size=int(rng.integers(3, 7)), replace=False)
        pairs.append((" ".join(ENGLISH[i] for i in ids),
                      " ".join(FRENCH[i] for i in reversed(ids))))
    return pairs


def gold_links(pair: tuple[str, str]) -> set[tuple[int, int]]:
    n = len(pair[0].split())
    return {(i, n - 1 - i) for i in range(n)}


def write_run_config(tmp_path: Path, name: str, guided: bool) -> Path:
    train = tmp_path / "train.tsv"
    if not train.exists():
        train.write_text("".join(f"{s}\t{t}\n" for s, t in reversal_pairs(600, 0)))
    config = {
        "name": name,
        "data": {"train": str(train), "dev": str(train), "dev_limit": 8},
        "tokenizer": {"vocab_size": 60, "joint": True},
        "model": {"embedding_dim": 32, "hidden_dim": 32, "attention_units": 16,
                  "encoder_layers": 1, "dropout": 0.0, "decoder": "bahdanau",
                  "attention": "bahdanau"},
        "optim": {"max_tokens": 400, "learning_rate": 0.01, "warmup_steps": 10,
                  "precision": "float32", "checkpoint_every": 1000, "eval_every": 1000,
                  "log_every": 100, "max_steps": 250, "seed": 3},
    }
    if guided:
        config["data"]["train_alignments"] = str(tmp_path / "gold.txt")
        config["guided_alignment"] = {"type": "ce", "weight": 1.0}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def write_gold_piece_links(config: Path, run_dir: Path, out: Path) -> None:
    """The task's true word links, mapped onto the run's pieces."""
    cfg = load_config(config)
    pairs = reversal_pairs(600, 0)
    tokenizers = train_module.prepare_tokenizers(cfg, run_dir, pairs)
    sources = ca.piece_word_indices(tokenizers.source, [s for s, _ in pairs])
    targets = ca.piece_word_indices(tokenizers.target, [t for _, t in pairs])
    ca.write_alignments(out, [
        ca.word_links_to_pieces(gold_links(pair), s, t)
        for pair, s, t in zip(pairs, sources, targets, strict=True)
    ])


def attention_aer(run_dir: Path) -> float:
    test = reversal_pairs(60, 1)
    module = module_from_run(run_dir, average=1)
    out = module.align(tf.constant([s for s, _ in test]), tf.constant([t for _, t in test]))
    predicted = [
        {tuple(int(x) for x in link.split("-")) for link in text.decode().split()}
        for text in out["word_alignments"].numpy()
    ]
    gold = [gold_links(pair) for pair in test]
    return alignment_scores(predicted, gold, gold).aer


@pytest.mark.slow
def test_guided_attention_aligns_better_than_unguided(tmp_path):
    plain = train_module.run(write_run_config(tmp_path, "plain", False), tmp_path / "plain")
    guided_config = write_run_config(tmp_path, "guided", True)
    write_gold_piece_links(guided_config, tmp_path / "guided", tmp_path / "gold.txt")
    guided = train_module.run(guided_config, tmp_path / "guided", resume=True)
    plain_aer, guided_aer = attention_aer(plain), attention_aer(guided)
    assert guided_aer < plain_aer - 0.1, (guided_aer, plain_aer)
    assert guided_aer < 0.3, guided_aer
