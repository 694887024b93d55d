"""`bench/train_speed.py` times the training step of `nmt train` itself."""

import numpy as np
import yaml

from bench.flops import forward_macs
from bench.train_speed import time_steps
from nmt.data.datasets import make_train_dataset
from nmt.data.encoding import encode_pairs
from nmt.data.tokenizer import train_tokenizers
from training.config import load_config
from training.train import Trainer

TINY = {
    "name": "tiny",
    "data": {"train": "unused.tsv", "dev": "unused.tsv"},
    "tokenizer": {"vocab_size": 150},
    "model": {"embedding_dim": 16, "hidden_dim": 16, "attention_units": 8,
              "encoder_layers": 1, "input_feeding": False},
    "optim": {"max_tokens": 400, "precision": "float32"},
}


def test_time_steps_updates_through_the_trainer(tmp_path, tiny_pairs):
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY))
    cfg = load_config(path)
    tokenizers = train_tokenizers(tiny_pairs, vocab_size=150)
    corpus = encode_pairs(tiny_pairs, tokenizers)
    batches = list(make_train_dataset(corpus, max_tokens=400, seed=1, epoch=0).take(7))
    trainer = Trainer(cfg, tmp_path / "run", tokenizers, corpus, dev_pairs=[])
    before = [w.numpy().copy() for w in trainer.model.trainable_weights]

    seconds, tokens, macs = time_steps(trainer, batches)

    assert int(trainer.optimizer.iterations) == len(batches)  # 5 warm-up + 2 timed updates
    assert any(not np.array_equal(b, w.numpy())
               for b, w in zip(before, trainer.model.trainable_weights, strict=True))
    timed = batches[5:]
    assert tokens == sum(int((target_out.numpy() > 0).sum()) for _, target_out in timed)
    assert macs == sum(len(s) * forward_macs(trainer.model.config, s.shape[1], t.shape[1])
                       for (s, t), _ in timed)
    assert seconds > 0
    trainer.writer.close()
