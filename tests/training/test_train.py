"""Training loop: a tiny run end to end, exact resume, signals and the time budget."""

import json
import re
import signal
import threading
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import yaml

from training import train as train_module
from training.config import load_config, parse_duration

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def write_config(tmp_path: Path, name: str = "tiny", guided: dict | None = None,
                 data: dict | None = None, **optim) -> Path:
    config = {
        "name": "tiny",
        "data": {"train": str(FIXTURES / "tiny_pairs.tsv"), "dev": str(FIXTURES / "tiny_pairs.tsv"),
                 "dev_limit": 16},
        "tokenizer": {"vocab_size": 150, "joint": True},
        "model": {"embedding_dim": 16, "hidden_dim": 16, "attention_units": 8,
                  "encoder_layers": 1, "dropout": 0.1, "input_feeding": False},
        "optim": {"max_tokens": 400, "learning_rate": 0.01, "warmup_steps": 2,
                  "precision": "float32", "checkpoint_every": 2, "eval_every": 4,
                  "log_every": 2, "max_epochs": 50, **optim},
    }
    if guided:
        config["guided_alignment"] = guided
    config["data"].update(data or {})
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def final_weights(run_dir: Path) -> list[np.ndarray]:
    reader = tf.train.load_checkpoint(str(run_dir / "checkpoints"))
    names = sorted(n for n in reader.get_variable_to_shape_map() if n.startswith("weights/"))
    return [reader.get_tensor(n) for n in names]


def test_parse_duration():
    assert parse_duration("90m") == 5400
    assert parse_duration("1h30m") == 5400
    assert parse_duration("45s") == 45
    assert parse_duration("120") == 120
    with pytest.raises(ValueError, match="90m"):
        parse_duration("ninety minutes")


def test_config_rejects_unknown_keys(tmp_path):
    path = write_config(tmp_path)
    raw = yaml.safe_load(path.read_text())
    raw["optim"]["learning_rat"] = 1.0
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ValueError, match="learning_rat"):
        load_config(path)


def test_tiny_run_trains_evaluates_and_summarises(tmp_path):
    run_dir = train_module.run(write_config(tmp_path, max_steps=8), tmp_path / "run")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 8
    history = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    assert [h["step"] for h in history] == [4, 8]
    assert all(0.0 <= h["bleu"] <= 100.0 for h in history)
    assert (run_dir / "best" / "weights.index").exists()
    assert (run_dir / "tokenizer" / "tokenizer.json").exists()
    assert list((run_dir / "logs").iterdir()), "TensorBoard events were written"
    # What the module docstring lists; alignments.txt only comes with guided alignment.
    assert {p.name for p in run_dir.iterdir()} == documented_run_files() - {"alignments.txt"}


def test_training_plans_every_pair_the_corpus_kept(tmp_path, monkeypatch):
    """Batches are planned up to the config's sentence limit, not the planner's default 100."""
    planned = []
    real = train_module.make_train_dataset

    def recording(*args, **kwargs):
        planned.append(kwargs.get("max_length"))
        return real(*args, **kwargs)

    monkeypatch.setattr(train_module, "make_train_dataset", recording)
    config = write_config(tmp_path, max_steps=2, data={"max_tokens_per_sentence": 120})
    train_module.run(config, tmp_path / "run")

    assert planned and set(planned) == {120}


def documented_run_files() -> set[str]:
    """The `<run>/...` entries of `training.train`'s docstring."""
    return set(re.findall(r"<run>/([^/\s]+)", train_module.__doc__))


@pytest.mark.slow
def test_resume_continues_exactly(tmp_path):
    config = write_config(tmp_path, max_steps=6, eval_every=100)
    straight = train_module.run(config, tmp_path / "straight")
    config_half = write_config(tmp_path, "half", max_steps=3, eval_every=100)
    halves = train_module.run(config_half, tmp_path / "halves")
    train_module.run(config, halves, resume=True)
    assert json.loads((halves / "summary.json").read_text())["steps"] == 6
    for a, b in zip(final_weights(straight), final_weights(halves), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


GUIDED = {"type": "ce", "weight": 1.0}


@pytest.mark.slow
def test_resume_continues_exactly_with_guided_alignment(tmp_path):
    # eflomal samples without a settable seed, so both runs read the first run's file;
    # a resumed run always reads its own run's file.
    straight = train_module.run(
        write_config(tmp_path, guided=GUIDED, max_steps=6, eval_every=100), tmp_path / "straight")
    links = {"train_alignments": str(straight / "alignments.txt")}
    config = write_config(tmp_path, "full", guided=GUIDED, data=links, max_steps=6,
                          eval_every=100)
    config_half = write_config(tmp_path, "half", guided=GUIDED, data=links, max_steps=3,
                               eval_every=100)
    halves = train_module.run(config_half, tmp_path / "halves")
    train_module.run(config, halves, resume=True)
    for a, b in zip(final_weights(straight), final_weights(halves), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
    summary = json.loads((halves / "summary.json").read_text())
    assert summary["guided_alignment"]["type"] == "ce"


def test_guided_run_aligns_the_corpus_itself(tmp_path):
    run_dir = train_module.run(write_config(tmp_path, guided=GUIDED, max_steps=2,
                                            eval_every=100), tmp_path / "run")
    assert "alignments.txt" in documented_run_files()
    lines = (run_dir / "alignments.txt").read_text(encoding="utf-8").splitlines()
    pairs = (FIXTURES / "tiny_pairs.tsv").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len([p for p in pairs if p.strip()])
    assert sum(bool(line) for line in lines) > len(lines) // 2, "most pairs have links"


def test_joined_examples_are_added_to_the_training_corpus(tmp_path):
    joins = {"join_fraction": 0.5, "join_max_pairs": 3}
    run_dir = train_module.run(write_config(tmp_path, guided=GUIDED, data=joins, max_steps=2,
                                            eval_every=100), tmp_path / "run")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert 0 < summary["joined_examples"] <= round(0.5 * summary["train_pairs"])


@pytest.mark.parametrize("data", [{"join_fraction": 1.5}, {"join_fraction": True},
                                  {"join_max_pairs": 1}])
def test_join_settings_are_checked(tmp_path, data):
    with pytest.raises(ValueError, match=next(iter(data))):
        load_config(write_config(tmp_path, data=data))


@pytest.mark.slow
def test_guidance_changes_the_update(tmp_path):
    plain = train_module.run(write_config(tmp_path, "plain", max_steps=3, eval_every=100),
                             tmp_path / "plain")
    guided = train_module.run(
        write_config(tmp_path, "guided", guided=GUIDED, max_steps=3, eval_every=100),
        tmp_path / "guided")
    differs = [not np.allclose(a, b)
               for a, b in zip(final_weights(plain), final_weights(guided), strict=True)]
    assert any(differs)


def test_alignment_file_with_the_wrong_line_count_is_refused(tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("0-0\n0-0\n", encoding="utf-8")
    config = write_config(tmp_path, guided=GUIDED, data={"train_alignments": str(short)},
                          max_steps=1)
    with pytest.raises(ValueError, match="has 2 lines but the training file has"):
        train_module.run(config, tmp_path / "run")


def test_alignment_link_outside_the_pair_names_the_line(tmp_path):
    count = len([p for p in (FIXTURES / "tiny_pairs.tsv").read_text().splitlines() if p.strip()])
    bad = tmp_path / "bad.txt"
    bad.write_text("0-0\n" * 2 + "0-99\n" + "0-0\n" * (count - 3), encoding="utf-8")
    config = write_config(tmp_path, guided=GUIDED, data={"train_alignments": str(bad)},
                          max_steps=1)
    with pytest.raises(ValueError, match=r"bad.txt:3: link 0-99 is outside the pair"):
        train_module.run(config, tmp_path / "run")


def test_existing_run_needs_resume(tmp_path):
    config = write_config(tmp_path, max_steps=1, eval_every=100)
    train_module.run(config, tmp_path / "run")
    with pytest.raises(ValueError, match="--resume"):
        train_module.run(config, tmp_path / "run")


def test_sigterm_stops_cleanly_with_a_checkpoint(tmp_path):
    config = write_config(tmp_path, max_steps=10_000, eval_every=10_000, checkpoint_every=10_000)
    timer = threading.Timer(8.0, lambda: signal.raise_signal(signal.SIGTERM))
    timer.start()
    try:
        run_dir = train_module.run(config, tmp_path / "run")
    finally:
        timer.cancel()
    summary = json.loads((run_dir / "summary.json").read_text())
    steps = summary["steps"]
    assert 0 < steps < 10_000
    assert summary["stopped_by"] == "signal SIGTERM"  # what `nmt distill` reads to go on later
    assert tf.train.latest_checkpoint(str(run_dir / "checkpoints")).endswith(f"-{steps}")


def test_time_budget_ends_training(tmp_path):
    config = write_config(tmp_path, max_steps=10_000, eval_every=10_000, max_time="3s")
    run_dir = train_module.run(config, tmp_path / "run")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert 0 < summary["steps"] < 10_000
    assert "stopped_by" not in summary  # a budget ends the run; only a signal interrupts it


def test_run_directory_keeps_the_effective_config(tmp_path):
    config = write_config(tmp_path, max_steps=1, eval_every=100)
    run_dir = train_module.run(config, tmp_path / "run", overrides={"model.hidden_dim": 12})
    saved = load_config(run_dir / "config.yaml")
    assert saved.model["hidden_dim"] == 12
    assert Path(saved.data.train).is_absolute()


@pytest.mark.slow
@pytest.mark.parametrize("model", [{}, {"alignment_head": "general", "alignment_head_context": 8}])
def test_a_mixed_bfloat16_run_evaluates_on_dev(tmp_path, model):
    """Under the mixed_bfloat16 policy the model's states come in bfloat16 while the
    search's step kernels compute in float32: the dev evaluation (greedy search through
    the export module) must still run, with and without an alignment head."""
    import keras

    path = write_config(tmp_path, max_steps=4, precision="mixed_bfloat16")
    raw = yaml.safe_load(path.read_text())
    raw["model"].update(model)
    if model:
        raw["alignment_head"] = {"train": "joint"}
    path.write_text(yaml.safe_dump(raw))
    try:
        run_dir = train_module.run(path, tmp_path / "run")
    finally:
        keras.mixed_precision.set_global_policy("float32")
    history = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    assert [h["step"] for h in history] == [4]
    assert 0.0 <= history[0]["bleu"] <= 100.0


def test_a_dev_set_with_domains_scores_each_domain(tmp_path):
    pairs = (FIXTURES / "tiny_pairs.tsv").read_text(encoding="utf-8").splitlines()[:16]
    dev = tmp_path / "dev.tsv"
    dev.write_text("".join(f"{line}\t{'laws' if i % 2 else 'anki'}\n"
                           for i, line in enumerate(pairs)), encoding="utf-8")
    run_dir = train_module.run(write_config(tmp_path, max_steps=4, data={"dev": str(dev)}),
                               tmp_path / "run")
    (record,) = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    assert set(record["domains"]) == {"anki", "laws"}
    for scores in record["domains"].values():
        assert 0.0 <= scores["bleu"] <= 100.0 and 0.0 <= scores["chrf"] <= 100.0


@pytest.mark.slow
def test_a_run_can_start_from_another_run(tmp_path):
    first = train_module.run(write_config(tmp_path, max_steps=4), tmp_path / "first")
    path = write_config(tmp_path, name="warm", max_steps=2, learning_rate=1e-9)
    raw = yaml.safe_load(path.read_text())
    raw["init_from"] = str(first)
    path.write_text(yaml.safe_dump(raw))
    second = train_module.run(path, tmp_path / "second")
    # A learning rate of 1e-9: two steps leave the first run's weights (as they were).
    for start, end in zip(final_weights(first), final_weights(second), strict=True):
        np.testing.assert_allclose(end, start, atol=1e-6)
    assert (second / "tokenizer" / "tokenizer.json").read_bytes() == (
        first / "tokenizer" / "tokenizer.json").read_bytes()
    summary = json.loads((second / "summary.json").read_text())
    assert summary["starting_model"]["name"] == "tiny"
    # The run's own config names its start relative to the run (it moves with it).
    assert yaml.safe_load((second / "config.yaml").read_text())["init_from"] == "../first"


def test_a_warm_start_and_a_head_start_are_not_both_given(tmp_path):
    path = write_config(tmp_path)
    raw = yaml.safe_load(path.read_text())
    raw["init_from"] = "models/en-fr/8"
    raw["model"]["alignment_head"] = "general"
    raw["alignment_head"] = {"init_from": "models/en-fr/8"}
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ValueError, match="not both"):
        load_config(path)


def test_checkpoints_are_also_taken_by_time(tmp_path):
    # checkpoint_every=1000 never comes; a checkpoint_minutes this small is due every step.
    run_dir = train_module.run(
        write_config(tmp_path, max_steps=3, checkpoint_every=1000, eval_every=1000,
                     checkpoint_minutes=1e-6, keep_checkpoints=5), tmp_path / "run")
    steps = sorted(int(p.name.split("-")[1].split(".")[0])
                   for p in (run_dir / "checkpoints").glob("ckpt-*.index"))
    assert steps == [1, 2, 3]


def test_checkpoint_minutes_must_be_a_number(tmp_path):
    with pytest.raises(ValueError, match="checkpoint_minutes"):
        load_config(write_config(tmp_path, checkpoint_minutes=-1))


def test_progress_counts_down_to_the_next_evaluation(caplog):
    from training.progress import TrainingProgress

    progress = TrainingProgress(budget=0, log_every=1, eval_every=10)
    progress.bar.disable = True
    progress.window = [(0.0, 0), (2.0, 100), (4.0, 100)]  # two seconds a step
    assert progress.seconds_to_evaluation(3) == 14.0
    assert progress.seconds_to_evaluation(10) == 20.0
    assert TrainingProgress(budget=0, log_every=1).seconds_to_evaluation(3) is None
    with caplog.at_level("INFO", logger="nmt.train"):
        progress.update(4, 1.0, 100, 1e-3, 0)
    assert "next dev evaluation in" in caplog.records[-1].getMessage()
