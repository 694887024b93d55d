"""`training.strategy` on one machine, and how it reads TF_CONFIG (two workers train in
tests/training/test_multi_worker.py)."""

import json

import pytest
import tensorflow as tf

from training import strategy


def tf_config(cluster: dict, task_type: str = "worker") -> str:
    return json.dumps({"cluster": cluster, "task": {"type": task_type, "index": 0}})


def test_training_tasks_are_counted_from_tf_config():
    assert strategy.cluster_training_tasks("") == 0
    assert strategy.cluster_training_tasks(tf_config({"worker": ["a:1"]})) == 1
    two = tf_config({"chief": ["a:1"], "worker": ["b:1"]}, "chief")
    assert strategy.cluster_training_tasks(two) == 2


@pytest.mark.parametrize("text, message", [
    ("{not json", "must be JSON"),
    (tf_config({"worker": ["a:1"], "ps": ["b:1"]}), r"Received: cluster task types \['ps'"),
    (tf_config({"worker": ["a:1"]}, "evaluator"), "this task 'evaluator'"),
])
def test_tf_config_without_a_training_role_is_refused(text, message):
    with pytest.raises(ValueError, match=message):
        strategy.cluster_training_tasks(text)


def test_one_machine_keeps_the_local_strategy(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", tf_config({"worker": ["127.0.0.1:1"]}))
    local = strategy.pick_strategy()
    assert not isinstance(local, tf.distribute.MultiWorkerMirroredStrategy)
    assert strategy.worker_count(local) == 1 and strategy.is_chief(local)
    assert not strategy.distributes_input(local)
    strategy.check_same_on_workers(local, "a value", 1, "nothing to compare on one worker")
    ran = []
    assert strategy.chief_first(local, lambda: ran.append(True)) is True
    assert ran == [True]
