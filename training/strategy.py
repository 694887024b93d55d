"""Picks a tf.distribute strategy: several machines per `TF_CONFIG`, else the local hardware.

Several workers train with `tf.distribute.MultiWorkerMirroredStrategy`:
every worker holds the whole model, each step trains every replica (a
device of a worker) on its own batch, and the gradients are summed across
all replicas before every update, so all workers keep identical weights.
The helpers below let the workers agree on what each decides alone (when
to stop, that they read the same corpus).
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Callable, Sequence

import numpy as np
import tensorflow as tf

log = logging.getLogger("nmt.train")

# Task types of a TF_CONFIG cluster that train (MultiWorkerMirroredStrategy's roles).
TRAINING_TASKS = ("chief", "worker")


def cluster_training_tasks(tf_config: str | None = None) -> int:
    """The number of training tasks (chief and workers) that `TF_CONFIG` names.

    Args:
        tf_config: the JSON of `TF_CONFIG`; None reads the environment.

    Returns:
        0 without `TF_CONFIG` (or without a cluster in it).

    Raises:
        ValueError: it is not JSON, or names parameter servers or an
            evaluator, which this trainer has no role for.
    """
    text = os.environ.get("TF_CONFIG", "") if tf_config is None else tf_config
    if not text.strip():
        return 0
    try:
        config = json.loads(text)
        cluster = config.get("cluster") or {}
        task_type = (config.get("task") or {}).get("type")
    except (json.JSONDecodeError, AttributeError) as error:
        raise ValueError(
            "TF_CONFIG must be JSON like {\"cluster\": {\"worker\": [\"host1:port\", "
            f"\"host2:port\"]}}, \"task\": {{\"type\": \"worker\", \"index\": 0}}}}. "
            f"Received: TF_CONFIG={text!r}"
        ) from error
    others = sorted(set(cluster) - set(TRAINING_TASKS))
    if others or (task_type is not None and task_type not in TRAINING_TASKS):
        raise ValueError(
            "nmt train runs every task of TF_CONFIG as a chief or a worker of "
            "MultiWorkerMirroredStrategy; remove the other task types. "
            f"Received: cluster task types {sorted(cluster)}, this task {task_type!r}"
        )
    return sum(len(cluster.get(name) or []) for name in TRAINING_TASKS)


def multi_worker_strategy() -> tf.distribute.MultiWorkerMirroredStrategy:
    """The strategy of the workers that `TF_CONFIG` names.

    Collectives use `CommunicationImplementation.AUTO`: ring all-reduce
    between CPUs, NCCL between GPUs.

    Raises:
        RuntimeError: TensorFlow already ran an operation in this process
            (collectives are set up before the first one).
    """
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.AUTO)
    try:
        strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    except RuntimeError as error:
        raise RuntimeError(
            "TF_CONFIG names several workers, but TensorFlow already ran in this process; "
            "the multi-worker strategy must be made first (start the training in a fresh "
            "process, e.g. `nmt train`)"
        ) from error
    resolver = strategy.cluster_resolver
    log.info("training as %s %d of %d workers (%d replicas)", resolver.task_type,
             resolver.task_id, worker_count(strategy), strategy.num_replicas_in_sync)
    return strategy


def pick_strategy() -> tf.distribute.Strategy:
    """Several workers if `TF_CONFIG` names them, else a TPU if one is attached
    (Colab/Kaggle), all GPUs if several, else the default.

    Call it before TensorFlow runs anything else in the process: a
    multi-worker strategy cannot be made afterwards.

    On a TPU, batches must have static shapes; the data pipeline pads to the
    batch's longest sentence, so each new length compiles once.
    """
    if cluster_training_tasks() > 1:
        return multi_worker_strategy()
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        log.info("training on TPU %s", resolver.master())
        return tf.distribute.TPUStrategy(resolver)
    except (ValueError, RuntimeError, tf.errors.NotFoundError):
        pass
    gpus = tf.config.list_logical_devices("GPU")
    if len(gpus) > 1:
        log.info("training on %d GPUs", len(gpus))
        return tf.distribute.MirroredStrategy()
    log.info("training on %s", gpus[0].name if gpus else "the CPU")
    return tf.distribute.get_strategy()


def worker_count(strategy: tf.distribute.Strategy) -> int:
    """The number of workers (processes) that train together; 1 on one machine."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) or resolver is None:
        return 1
    tasks = resolver.cluster_spec().as_dict()
    return max(1, sum(len(tasks.get(name) or []) for name in TRAINING_TASKS))


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """Whether this worker writes the run (checkpoints, logs, exports); True on one machine."""
    return bool(strategy.extended.should_checkpoint)


def distributes_input(strategy: tf.distribute.Strategy) -> bool:
    """Whether training batches go to the replicas through
    `distribute_datasets_from_function`, each replica its own batch.

    Not on a TPU, whose compiled steps need static shapes (each replica
    then trains on the same batch), nor with one replica.
    """
    return strategy.num_replicas_in_sync > 1 and not isinstance(
        strategy, tf.distribute.TPUStrategy)


def gather_from_workers(strategy: tf.distribute.Strategy, values: Sequence[int]) -> np.ndarray:
    """Every replica's `values`, exchanged between all workers.

    Every worker must call it at the same point of its run (it is a
    collective: a worker that does not call it leaves the others waiting).

    Args:
        strategy: the training strategy.
        values: integers of this worker, the same count on every worker.

    Returns:
        int64 `(replicas, len(values))`, in replica order.
    """
    return _gatherer(strategy)(tf.constant([list(values)], tf.int64)).numpy()


@functools.cache
def _gatherer(strategy: tf.distribute.Strategy) -> Callable:
    @tf.function
    def gather(values):  # (1, n) -> (replicas, n)
        return strategy.gather(strategy.run(tf.identity, args=(values,)), axis=0)

    return gather


def check_same_on_workers(strategy: tf.distribute.Strategy, what: str, value: int,
                          hint: str) -> None:
    """Raises on every worker unless all workers hold the same `value`.

    Args:
        strategy: the training strategy; nothing is exchanged on one worker.
        what: what `value` stands for, for the error.
        value: this worker's integer (e.g. a checksum or the training step).
        hint: what to change when they differ.

    Raises:
        ValueError: the workers' values differ.
    """
    if worker_count(strategy) == 1:
        return
    values = gather_from_workers(strategy, [value])[:, 0]
    if len(set(values.tolist())) > 1:
        raise ValueError(f"The workers differ in {what}: {values.tolist()} (by replica). {hint}")


def chief_first(strategy: tf.distribute.Strategy, work: Callable[[], None]) -> bool:
    """Runs `work` on the chief while the other workers wait for it.

    Args:
        strategy: the training strategy; on one worker `work` just runs.
        work: what only the chief does (e.g. write the run's files).

    Returns:
        True on the chief (which ran `work`), False on the other workers.

    Raises:
        RuntimeError: on the other workers, when `work` failed on the chief
            (the chief raises its own error).
    """
    if worker_count(strategy) == 1:
        work()
        return True
    chief, done = is_chief(strategy), False
    try:
        if chief:
            work()
        done = True
    finally:
        failed = gather_from_workers(strategy, [0 if done else 1]).max()
    if failed and not chief:
        raise RuntimeError("The chief worker could not start the run (see its log)")
    return chief
