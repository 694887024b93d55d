"""`nmt train` on two workers (MultiWorkerMirroredStrategy over TF_CONFIG on 127.0.0.1).

Two processes train a tiny model together, are stopped, resume from the
chief's checkpoint and stop again; then the run is exported and translates.
Each worker process runs `nmt train` through a small driver that saves the
worker's final weights and step, so the test compares what each worker
ended with. Every process is killed when the test fails or times out.
"""

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from nmt.data.datasets import deal_to_replicas, plan_epoch
from training import train as train_module
from training.config import load_config
from training.train import load_corpora

# End-to-end: `make test-slow` (and CI) runs it; `make test` leaves it out.
pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REPO = Path(__file__).resolve().parents[2]
WORKERS = 2
LAUNCH_TIMEOUT_S = 420  # per launch; generous for a loaded machine, processes killed past it

# Runs `nmt train` (argv[2:]) and saves the worker's final step and weights to argv[1].
DRIVER = """
import sys

import numpy as np

from training import train

out, argv = sys.argv[1], sys.argv[2:]
original = train.Trainer.train


def train_and_save(self, *args, **kwargs):
    reason = original(self, *args, **kwargs)
    np.savez(out, *[w.numpy() for w in self.model.weights], step=int(self.state["step"]),
             iterations=int(self.optimizer.iterations.numpy()), out_dir=str(self.out_dir))
    return reason


train.Trainer.train = train_and_save
from nmt_cli.main import main  # noqa: E402

sys.exit(main(argv))
"""


def tiny_config(tmp_path: Path) -> Path:
    config = {
        "name": "tiny",
        "data": {"train": str(FIXTURES / "tiny_pairs.tsv"),
                 "dev": str(FIXTURES / "tiny_pairs.tsv"), "dev_limit": 4},
        "tokenizer": {"vocab_size": 150, "joint": True},
        "model": {"embedding_dim": 16, "hidden_dim": 16, "attention_units": 8,
                  "encoder_layers": 1, "dropout": 0.1, "input_feeding": False},
        "optim": {"max_tokens": 400, "learning_rate": 0.01, "warmup_steps": 2,
                  "precision": "float32", "checkpoint_every": 2, "eval_every": 4,
                  "log_every": 1, "max_epochs": 50},
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def launch_workers(tmp_path: Path, name: str, train_args: list[str]) -> list[dict]:
    """Runs `nmt train train_args` as WORKERS processes of one cluster; returns what
    each saved (worker 0 first). Fails with the workers' logs if one fails."""
    cluster = {"worker": [f"127.0.0.1:{port}" for port in free_ports(WORKERS)]}
    processes, logs, outs = [], [], []
    try:
        for index in range(WORKERS):
            tf_config = {"cluster": cluster, "task": {"type": "worker", "index": index}}
            env = {**os.environ, "TF_CONFIG": json.dumps(tf_config), "PYTHONPATH": str(REPO)}
            logs.append(tmp_path / f"{name}-worker{index}.log")
            outs.append(tmp_path / f"{name}-worker{index}.npz")
            with open(logs[-1], "wb") as log:
                processes.append(subprocess.Popen(
                    [sys.executable, "-c", DRIVER, str(outs[-1]), "train", *train_args],
                    cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + LAUNCH_TIMEOUT_S
        for process in processes:
            process.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pytest.fail(f"workers still running after {LAUNCH_TIMEOUT_S}s:\n{tails(logs)}")
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    codes = [process.returncode for process in processes]
    assert codes == [0] * WORKERS, f"exit codes {codes}:\n{tails(logs)}"
    saved = []
    for out, log in zip(outs, logs, strict=True):
        with np.load(out) as arrays:
            weights = [arrays[f"arr_{i}"] for i in range(len(arrays.files) - 3)]
            saved.append({"step": int(arrays["step"]), "iterations": int(arrays["iterations"]),
                          "out_dir": str(arrays["out_dir"]), "weights": weights,
                          "log": log.read_text(errors="replace")})
    return saved


def tails(logs: list[Path]) -> str:
    return "\n".join(f"--- {log.name}:\n" + "\n".join(
        log.read_text(errors="replace").splitlines()[-30:]) for log in logs if log.exists())


def check_in_step(workers: list[dict], steps: int, run_dir: Path) -> None:
    chief, other = workers
    assert [w["step"] for w in workers] == [steps] * WORKERS
    assert [w["iterations"] for w in workers] == [steps] * WORKERS
    assert len(chief["weights"]) == len(other["weights"]) > 0
    for a, b in zip(chief["weights"], other["weights"], strict=True):
        np.testing.assert_array_equal(a, b)
    assert chief["out_dir"] == str(run_dir)
    assert not Path(other["out_dir"]).exists(), "the other worker's files are removed"
    assert not Path(other["out_dir"]).is_relative_to(run_dir)


def expected_target_tokens(run_dir: Path, steps: int) -> int:
    """Target tokens (EOS included) of the first `steps` steps of two replicas, from the
    epoch plans: each step trains one planned batch per replica."""
    cfg = load_config(run_dir / "config.yaml")
    _, corpus, _ = load_corpora(cfg, run_dir)
    tokens, epoch = [], 0
    while len(tokens) < steps:
        plan = plan_epoch(corpus, max_tokens=cfg.optim.max_tokens, seed=cfg.optim.seed,
                          epoch=epoch)
        dealt = deal_to_replicas(plan, replicas=WORKERS, first=0, count=WORKERS)
        per_batch = [int((corpus.target.lengths[b] + 1).sum()) for b in dealt]
        tokens += [sum(per_batch[i:i + WORKERS]) for i in range(0, len(per_batch), WORKERS)]
        epoch += 1
    return sum(tokens[:steps])


def test_two_workers_train_in_step_resume_and_export(tmp_path):
    config, run_dir = tiny_config(tmp_path), tmp_path / "run"
    common = ["--config", str(config), "--run", str(run_dir)]

    first = launch_workers(tmp_path, "first", [*common, "--set", "optim.max_steps=4"])
    check_in_step(first, 4, run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["steps"], summary["workers"], summary["replicas"]) == (4, 2, 2)

    # A new launch of the stopped cluster resumes from the chief's last checkpoint.
    second = launch_workers(tmp_path, "second",
                            [*common, "--resume", "--set", "optim.max_steps=7"])
    assert all("at step 4" in w["log"] for w in second), tails([tmp_path / "second-worker1.log"])
    check_in_step(second, 7, run_dir)
    assert any(not np.array_equal(a, b)
               for a, b in zip(first[0]["weights"], second[0]["weights"], strict=True))
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 7
    # Every step trained the two replicas on two different planned batches.
    assert summary["target_tokens"] == expected_target_tokens(run_dir, 7)
    history = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    assert [h["step"] for h in history] == [4, 7]
    documented = set(re.findall(r"<run>/([^/\s]+)", train_module.__doc__))
    assert {p.name for p in run_dir.iterdir()} == documented - {"alignments.txt"}

    from nmt.inference.translator import Translator
    from nmt_cli.main import main

    assert main(["export", "--run", str(run_dir), "--out", str(tmp_path / "models"),
                 "--version", "1"]) == 0
    translator = Translator.load(tmp_path / "models")
    [translation] = translator.translate(["I like coffee."], beam_size=1)
    assert translation.source_tokens[-1] == "</s>"
    assert np.asarray(translation.best.alignment).shape == (
        len(translation.target_tokens), len(translation.source_tokens))
