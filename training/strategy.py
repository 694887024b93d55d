"""Picks a tf.distribute strategy from the hardware that is present."""

from __future__ import annotations

import logging

import tensorflow as tf

log = logging.getLogger("nmt.train")


def pick_strategy() -> tf.distribute.Strategy:
    """TPU if one is attached (Colab/Kaggle), all GPUs if several, else the default.

    On a TPU, batches must have static shapes; the data pipeline pads to the
    batch's longest sentence, so each new length compiles once.
    """
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
