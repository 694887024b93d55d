"""Training configs: `--set` overrides as parsed for `nmt train` and the benchmarks, and
the configs the project ships."""

from pathlib import Path

import pytest

from nmt.model import ModelConfig
from training.config import load_config, parse_overrides


def test_values_are_read_as_yaml():
    parsed = parse_overrides(["optim.max_tokens=1500", "model.input_feeding=true",
                              "optim.precision=float32", "optim.learning_rate=0.002"])
    assert parsed == {"optim.max_tokens": 1500, "model.input_feeding": True,
                      "optim.precision": "float32", "optim.learning_rate": 0.002}


@pytest.mark.parametrize("item", ["optim.max_tokens", "max_tokens=1500"])
def test_malformed_items_name_the_expected_form(item):
    with pytest.raises(ValueError, match="SECTION.KEY=VALUE"):
        parse_overrides([item])


CONFIGS = sorted((Path(__file__).resolve().parents[2] / "training" / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_every_shipped_config_is_valid(path):
    cfg = load_config(path)
    ModelConfig.from_dict({**cfg.model, "source_vocab_size": cfg.tokenizer.vocab_size,
                           "target_vocab_size": cfg.tokenizer.vocab_size})
    assert Path(cfg.data.train).name == "train.tsv" and Path(cfg.data.dev).name == "dev.tsv"


def test_domain_weights_are_numbers_and_nmt_train_refuses_them(tmp_path):
    import yaml

    from training.train import load_corpora

    config = {"name": "w", "data": {"train": "train.tsv", "dev": "dev.tsv",
                                    "domain_weights": {"anki": 3, "laws": 0.5}}}
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(config))
    cfg = load_config(path)
    assert cfg.data.domain_weights == {"anki": 3, "laws": 0.5}
    with pytest.raises(ValueError, match=r"nmt train reads its corpus as the recipe wrote it"):
        load_corpora(cfg, tmp_path / "run")
    with pytest.raises(ValueError, match=r"data.domain_weights.laws must be a number >= 0"):
        load_config(path, {"data.domain_weights": {"laws": -1}})
