"""`nmt train`: trains a Seq2Seq model with checkpoints, dev BLEU and a time budget.

A run directory holds everything a run needs to resume or be exported:

    <run>/config.yaml       the effective config (overrides applied, data paths
                            relative to the run directory)
    <run>/tokenizer/        SentencePiece models: source.model, target.model,
                            tokenizer.json
    <run>/alignments.txt    piece links of the training pairs (only with guided
                            alignment and no data.train_alignments file)
    <run>/checkpoints/      the latest optim.keep_checkpoints training states
                            (weights, optimizer, position, dropout seeds)
    <run>/best/             weights with the best dev BLEU so far
    <run>/logs/             TensorBoard events
    <run>/history.jsonl     one line per evaluation
    <run>/summary.json      steps, time, best dev BLEU, machine and config, written
                            when a run (or a resumed part of it) ends

Under a `TF_CONFIG` that names several workers, every worker runs the same
command (same config, same `--run` path, on a filesystem they all share) and
they train together with `MultiWorkerMirroredStrategy` (`training.strategy`).
Only the chief writes the run directory: it prepares the tokenizers and
links first, the other workers then read them, and write their own
checkpoints and logs to a temporary directory removed when they end.
`optim.max_tokens` bounds each replica's batch: a step trains every replica
on its own batch, so it takes about `replicas x max_tokens` padded tokens and
an epoch has about `1 / replicas` as many steps; the learning rate schedule
counts steps as on one machine.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import shutil
import signal
import sys
import tempfile
import time
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import keras
import tensorflow as tf
import yaml

from nmt.alignment.guided_alignment import guided_alignment_loss, two_way_alignment_loss
from nmt.data.corpus import clean_pairs_with_indices, iter_pairs, read_pairs
from nmt.data.datasets import make_train_dataset
from nmt.data.encoding import concatenate_examples, encode_pairs
from nmt.data.tokenizer import TokenizerPair, train_tokenizers
from nmt.evaluation.metrics import (
    corpus_scores,
    domains_of,
    group_references,
    scores_by_domain,
)
from nmt.inference.export import TranslationModule
from nmt.model import Seq2Seq, sequence_loss
from training import corpus_alignment
from training.config import TrainConfig, parse_duration
from training.machine import cpu_model
from training.progress import TrainingProgress
from training.run_files import model_config
from training.strategy import (
    check_same_on_workers,
    chief_first,
    distributes_input,
    gather_from_workers,
    is_chief,
    pick_strategy,
    worker_count,
)

log = logging.getLogger("nmt.train")

ALIGNMENTS_FILE = "alignments.txt"


class TrainingInterrupted(RuntimeError):
    """A multi-worker run stopped by a signal (its checkpoint saved), so that every
    worker exits with an error and a job controller starts them again."""


class WarmupInverseSqrt(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup to `peak`, then decay with 1/sqrt(step) (Vaswani et al. 2017)."""

    def __init__(self, peak: float, warmup_steps: int):
        self.peak = peak
        self.warmup_steps = max(1, warmup_steps)

    def __call__(self, step):
        step = tf.cast(step, tf.float32) + 1.0
        warmup = tf.cast(self.warmup_steps, tf.float32)
        return self.peak * tf.minimum(step / warmup, tf.sqrt(warmup / step))

    def get_config(self):
        return {"peak": self.peak, "warmup_steps": self.warmup_steps}


def prepare_tokenizers(cfg: TrainConfig, run_dir: Path, pairs) -> TokenizerPair:
    """Loads the run's tokenizers, or takes those of the model the run starts from
    (`init_from`, `alignment_head.init_from`), or trains them on the training pairs."""
    directory = run_dir / "tokenizer"
    if (directory / "tokenizer.json").exists():
        return TokenizerPair.load(directory)
    if cfg.starts_from:
        tokenizers = starting_module(cfg.starts_from).tokenizers
        tokenizers.save(directory)
        return tokenizers
    log.info("training SentencePiece (vocab %d, joint=%s)", cfg.tokenizer.vocab_size,
             cfg.tokenizer.joint)
    tokenizers = train_tokenizers(pairs, cfg.tokenizer.vocab_size, joint=cfg.tokenizer.joint)
    tokenizers.save(directory)
    return tokenizers


def load_corpora(cfg: TrainConfig, run_dir: Path):
    """-> (tokenizers, encoded train corpus, dev pairs); the corpus carries
    guided-alignment links when the config asks for them."""
    if cfg.data.domain_weights:
        raise ValueError("data.domain_weights re-weights the domains of shards for the Keras "
                         "trainer (--shards); nmt train reads its corpus as the recipe wrote "
                         "it: set the sources' weights in the corpus recipe (nmt corpus)")
    raw_pairs = read_pairs(cfg.data.train)
    pairs, kept, stats = clean_pairs_with_indices(raw_pairs, cfg.data.cleaning)
    log.info("train pairs kept %d (%s)", stats.kept, stats)
    tokenizers = prepare_tokenizers(cfg, run_dir, pairs)
    corpus = encode_pairs(
        pairs, tokenizers, max_tokens_per_sentence=cfg.data.max_tokens_per_sentence
    )
    if cfg.needs_links:
        path = prepare_alignments(cfg, run_dir, raw_pairs, tokenizers)
        alignments = corpus_alignment.read_training_alignments(path, len(raw_pairs))
        corpus = corpus.with_alignments(corpus_alignment.corpus_links(
            alignments, kept[corpus.indices], corpus.source.lengths - 1,
            corpus.target.lengths, path,
        ))
    if cfg.data.join_fraction:
        corpus = concatenate_examples(
            corpus,
            count=round(cfg.data.join_fraction * len(corpus)),
            max_pairs=cfg.data.join_max_pairs,
            max_tokens_per_sentence=cfg.data.max_tokens_per_sentence,
            seed=cfg.optim.seed,
        )
    dev = read_dev_pairs(cfg.data.dev)
    if cfg.data.dev_limit:
        dev = dev[: cfg.data.dev_limit]
    return tokenizers, corpus, dev


def read_dev_pairs(path: str | Path) -> list[tuple[str, str, str]]:
    """`(source, reference, domain)` of a dev file; the domain is its third column
    (`nmt corpus` writes the source's name there), "" where there is none."""
    return [(english, french, domain) for _, english, french, domain in iter_pairs(path)]


def prepare_alignments(cfg: TrainConfig, run_dir: Path, raw_pairs, tokenizers) -> Path:
    """The Pharaoh file of the training pairs: the config's, or the run's own
    `alignments.txt`, made with eflomal on first use."""
    if cfg.data.train_alignments:
        return Path(cfg.data.train_alignments)
    path = run_dir / ALIGNMENTS_FILE
    if not path.exists():
        write_corpus_alignments(path, raw_pairs, tokenizers, cfg.guided_alignment.symmetrization)
    return path


def write_corpus_alignments(path: Path, raw_pairs, tokenizers, method: str) -> None:
    """Aligns the training pairs with eflomal and writes their piece links to `path`."""
    started = time.time()
    corpus_alignment.write_alignments(
        path, corpus_alignment.align_pairs(raw_pairs, tokenizers, method)
    )
    log.info("aligned %d training pairs (%s) in %.0fs -> %s", len(raw_pairs), method,
             time.time() - started, path)


def align_training_corpus(config_path: str | Path, run_dir: str | Path, *,
                          out: str | Path | None = None, symmetrization: str | None = None,
                          overrides: dict | None = None) -> tuple[Path, int]:
    """`nmt align-corpus`: writes the Pharaoh piece links of the config's training pairs.

    Uses (or trains and saves) the run's tokenizers, so the links index the
    pieces of the model that `nmt train --run` will train.

    Returns:
        `(path written, pairs aligned)`.
    """
    from training.config import load_config

    cfg = load_config(config_path, overrides)
    run_dir = Path(run_dir)
    raw_pairs = read_pairs(cfg.data.train)
    pairs, _, _ = clean_pairs_with_indices(raw_pairs, cfg.data.cleaning)
    tokenizers = prepare_tokenizers(cfg, run_dir, pairs)
    path = Path(out) if out else run_dir / ALIGNMENTS_FILE
    write_corpus_alignments(path, raw_pairs, tokenizers,
                            symmetrization or cfg.guided_alignment.symmetrization)
    return path, len(raw_pairs)


def starting_module(path: str | Path) -> TranslationModule:
    """The model a run starts from: an exported version directory or a training run."""
    path = Path(path)
    if (path / "saved_model.pb").exists():
        from nmt.inference.export import module_from_export

        return module_from_export(path, "float32")
    if (path / "config.yaml").exists():
        from training.export_run import module_from_run

        return module_from_run(path)
    raise FileNotFoundError(
        f"alignment_head.init_from={str(path)!r} is neither an exported model version "
        "(a directory with saved_model.pb, e.g. models/en-fr/5) nor a training run "
        "(a directory with config.yaml)"
    )


# What a run records of the model it started from (its model card describes that training).
_STARTING_FACTS = ("name", "training", "averaged_checkpoints", "precision", "precisions",
                   "scores")


def starting_record(path: str | Path, metadata: dict) -> dict:
    """The facts of a starting model that a run keeps in its summary: an export's own
    metadata file (as exported, e.g. its precision), or `metadata` of a run."""
    path = Path(path)
    if (path / "saved_model.pb").exists():
        from nmt.inference.export import read_metadata

        metadata = read_metadata(path)
    record = {key: _plain(metadata[key]) for key in _STARTING_FACTS if key in metadata}
    if path.name.isdigit():
        record["version"] = int(path.name)
    return record


def _plain(value):
    """A module's metadata is tracked by tf.Module (wrapped dicts and lists): plain values."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [_plain(item) for item in value]
    return value


def copy_weights(source: Seq2Seq, target: Seq2Seq) -> int:
    """Copies `source`'s weights into `target`: all of them when both have the same
    alignment head; else all but the heads' (`target`'s head, new or of another shape,
    starts afresh).

    Weights are matched by position (Keras numbers layer names per process,
    so paths differ between two models of one architecture).

    Returns:
        The number of weights copied.

    Raises:
        ValueError: the architectures differ (other weight count or shapes).
    """
    shapes = lambda weights: [tuple(w.shape) for w in weights]  # noqa: E731
    wanted, given = list(target.weights), list(source.weights)
    if shapes(wanted) != shapes(given):
        wanted, given = _without_head(target), _without_head(source)
    if shapes(wanted) != shapes(given):
        raise ValueError(
            "The starting model does not match the model to train: its model section must "
            "match the starting model's architecture (only the model.alignment_head* "
            f"settings may differ). Received: {len(given)} weights to start from, "
            f"{len(wanted)} expected"
        )
    for weight, value in zip(wanted, given, strict=True):
        weight.assign(value)
    return len(given)


def _without_head(model: Seq2Seq) -> list:
    head_ids = {id(w) for layer in model.decoder.head_layers for w in layer.weights}
    return [w for w in model.weights if id(w) not in head_ids]


class Trainer:
    """Owns the model, optimizer, checkpoints and the training loop.

    Args:
        strategy: the `tf.distribute` strategy (default: `pick_strategy()`).
        out_dir: where checkpoints, best weights, logs and history are written
            (default: `run_dir`; a temporary directory on workers other than
            the chief). Checkpoints are resumed from `run_dir`.
    """

    def __init__(self, cfg: TrainConfig, run_dir: Path, tokenizers, corpus, dev_pairs,
                 strategy: tf.distribute.Strategy | None = None, out_dir: Path | None = None):
        self.cfg, self.run_dir = cfg, run_dir
        self.out_dir = out_dir or run_dir
        self.corpus, self.tokenizers = corpus, tokenizers
        self.dev_sources, self.dev_references = group_references(
            (source, reference) for source, reference, *_ in dev_pairs)
        self.dev_domains = domains_of(dev_pairs, self.dev_sources)
        self.strategy = strategy or pick_strategy()
        self.workers = worker_count(self.strategy)
        keras.mixed_precision.set_global_policy(cfg.optim.precision)
        self.head = cfg.alignment_head
        with self.strategy.scope():
            self.model = Seq2Seq(model_config(cfg, tokenizers))
            self.model.build_for()
            self.starting_model: dict = {}
            if cfg.starts_from:
                start = starting_module(cfg.starts_from)
                copied = copy_weights(start.model, self.model)
                log.info("started from %s (%d weights)", cfg.starts_from, copied)
                self.starting_model = starting_record(cfg.starts_from, start.metadata)
            self.trained_variables = (
                [v for layer in self.model.decoder.head_layers for v in layer.trainable_variables]
                if self.head.frozen
                else self.model.trainable_variables)
            self.optimizer = self._make_optimizer()
            self.optimizer.build(self.trained_variables)
        self.state = {
            name: tf.Variable(value, trainable=False, name=name)
            for name, value in [("step", 0), ("epoch", 0), ("batch_in_epoch", 0),
                                ("evals_since_best", 0), ("best_bleu", -1.0),
                                ("train_seconds", 0.0),
                                ("target_tokens", tf.constant(0, tf.int64))]
        }
        weight_ids = {id(v) for v in self.model.weights}
        # Dropout seed states, so a resumed run draws the same masks.
        self.rng = [v for v in self.model.variables if id(v) not in weight_ids]
        self.checkpoint = tf.train.Checkpoint(
            weights=list(self.model.weights), optimizer=list(self.optimizer.variables),
            rng=self.rng, **self.state,
        )
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, self.out_dir / "checkpoints", cfg.optim.keep_checkpoints
        )
        self.best = tf.train.Checkpoint(weights=list(self.model.weights))
        self.writer = tf.summary.create_file_writer(str(self.out_dir / "logs"))
        self.module = TranslationModule(self.model, tokenizers)
        self.stop_reason: str | None = None

    def _make_optimizer(self):
        o = self.cfg.optim
        schedule = WarmupInverseSqrt(o.learning_rate, o.warmup_steps)
        optimizer = keras.optimizers.Adam(schedule, global_clipnorm=o.clip_norm)
        if o.precision == "mixed_float16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        return optimizer

    # --- one step -------------------------------------------------------------------

    @tf.function(reduce_retracing=True)
    def train_step(self, inputs, target_out, gold=None):
        """One optimizer update on one batch (what `bench/train_speed.py` times).

        Args:
            inputs: `(source, target_in)`, int32 `(batch, S)` and `(batch, T)`.
            target_out: int32 `(batch, T)`, 0 = padding.
            gold: float32 `(batch, T, S)` gold alignment for guided alignment,
                or None without guidance.

        Returns:
            `(translation loss, alignment loss, head loss)`, scalars; the
            second is 0 without guided alignment, the third without a head;
            a frozen-head run computes only the third (the first is 0).
        """
        guide, head, frozen = self.cfg.guided_alignment, self.head, self.head.frozen
        zero = tf.constant(0.0)

        def replica_step(inputs, target_out, gold):
            with tf.GradientTape() as tape:
                # A frozen model runs as it translates: no dropout, no logits.
                out = self.model.teacher_forced(*inputs, target_out, training=not frozen,
                                         project=not frozen)
                loss = align_loss = head_loss = zero
                if not frozen:
                    loss = sequence_loss(target_out, out["logits"],
                                         self.model.config.label_smoothing)
                if gold is not None and guide.enabled and not frozen:
                    align_loss = guided_alignment_loss(out["attention"], gold, guide.type)
                if gold is not None and "head_columns" in out:  # two directions
                    head_loss = two_way_alignment_loss(out["head_rows"], out["head_columns"],
                                                       gold, head.type)
                elif gold is not None and "head" in out:
                    head_loss = guided_alignment_loss(out["head"], gold, head.type)
                total = loss + guide.weight * align_loss + head.weight * head_loss
                scaled = total / self.strategy.num_replicas_in_sync
                if isinstance(self.optimizer, keras.optimizers.LossScaleOptimizer):
                    scaled = self.optimizer.scale_loss(scaled)
            grads = tape.gradient(scaled, self.trained_variables)
            self.optimizer.apply(grads, self.trained_variables)
            return loss, align_loss, head_loss

        losses = self.strategy.run(replica_step, args=(inputs, target_out, gold))
        return tuple(
            self.strategy.reduce(tf.distribute.ReduceOp.MEAN, value, axis=None)
            for value in losses
        )

    # --- evaluation -----------------------------------------------------------------

    def evaluate(self) -> dict:
        hypotheses, started = [], time.time()
        for start in range(0, len(self.dev_sources), 256):
            batch = tf.constant(self.dev_sources[start:start + 256])
            out = self.module.translate_greedy(batch)
            hypotheses.extend(t.decode("utf-8") for t in out["translations"].numpy())
        scores = corpus_scores(hypotheses, self.dev_references)
        result = {"bleu": scores.bleu, "chrf": scores.chrf, "seconds": time.time() - started,
                  "example": hypotheses[0] if hypotheses else ""}
        if len(set(self.dev_domains)) > 1:  # a mixed dev set (`nmt corpus`): each domain too
            result["domains"] = {
                domain or "unnamed": {"bleu": round(part.bleu, 2), "chrf": round(part.chrf, 2)}
                for domain, part in scores_by_domain(hypotheses, self.dev_references,
                                                     self.dev_domains).items()}
        return result

    def _log_attention_image(self, step: int) -> None:
        from nmt.alignment.plots import attention_figure_png

        if not self.dev_sources:
            return
        out = self.module.translate_greedy(tf.constant(self.dev_sources[:1]))
        png = attention_figure_png(out)
        image = tf.io.decode_png(png, channels=4)[None]
        with self.writer.as_default():
            tf.summary.image("dev_attention", image, step=step)

    # --- the loop -------------------------------------------------------------------

    def restore(self) -> bool:
        """Loads the latest checkpoint of `run_dir` (the chief's, on every worker)."""
        path = tf.train.latest_checkpoint(str(self.run_dir / "checkpoints"))
        if not path:
            return False
        core = tf.train.Checkpoint(
            weights=list(self.model.weights), optimizer=list(self.optimizer.variables),
            **self.state,
        )
        core.restore(path).expect_partial().assert_existing_objects_matched()
        try:
            status = tf.train.Checkpoint(rng=self.rng).restore(path).expect_partial()
            status.assert_existing_objects_matched()
        except AssertionError:
            log.warning("%s has no dropout RNG state (an older run): the resumed run draws "
                        "other dropout masks than an uninterrupted one would", path)
        log.info("resumed from %s at step %d", path, int(self.state["step"]))
        return True

    def _agreed_stop(self, started: float, budget: float) -> str | None:
        """`_should_stop`, agreed by all workers: they stop when any of them would.

        A signal that reached one worker stops all of them as a signal does
        (no last evaluation)."""
        reason = self._should_stop(started, budget)
        if self.workers == 1:
            return reason
        code = 0 if reason is None else 2 if self.stop_reason else 1
        codes = gather_from_workers(self.strategy, [code])[:, 0]
        if codes.max() == 2 and not self.stop_reason:
            self.stop_reason = "signal to another worker"
        if codes.max() and reason is None:
            reason = self.stop_reason or "another worker stopped"
        return reason

    def _should_stop(self, started: float, budget: float) -> str | None:
        o = self.cfg.optim
        if self.stop_reason:
            return self.stop_reason
        if budget and time.time() - started >= budget:
            return f"time budget of {o.max_time} reached"
        if o.max_steps and int(self.state["step"]) >= o.max_steps:
            return f"max_steps={o.max_steps} reached"
        if int(self.state["evals_since_best"]) >= o.patience:
            return f"no dev BLEU improvement in {o.patience} evaluations"
        return None

    def train(self, max_time: float | None = None) -> str:
        """Runs until a stop condition; returns why it stopped."""
        o = self.cfg.optim
        budget = parse_duration(o.max_time) if max_time is None else max_time
        started = time.time()
        base_seconds = float(self.state["train_seconds"])
        progress = TrainingProgress(budget=budget, log_every=o.log_every,
                                    eval_every=0 if self.head.frozen else o.eval_every)
        self.last_checkpoint = time.time()
        reason = None
        while reason is None and int(self.state["epoch"]) < o.max_epochs:
            reason = self._run_epoch(progress, started, budget, base_seconds)
            if reason is None:
                self.state["epoch"].assign_add(1)
                self.state["batch_in_epoch"].assign(0)
        reason = reason or f"max_epochs={o.max_epochs} reached"
        step = int(self.state["step"])
        if not self.stop_reason and step % o.eval_every and not self.head.frozen:
            # Budgets end between evaluations; score the last weights too.
            self._evaluate_and_keep_best(step)
        self.state["train_seconds"].assign(base_seconds + time.time() - started)
        self.manager.save(checkpoint_number=int(self.state["step"]))
        progress.close()
        log.info("stopped: %s", reason)
        return reason

    def _run_epoch(self, progress, started, budget, base_seconds) -> str | None:
        o = self.cfg.optim
        epoch, skip = int(self.state["epoch"]), int(self.state["batch_in_epoch"])

        def epoch_dataset(context: tf.distribute.InputContext | None = None) -> tf.data.Dataset:
            # The corpus kept pairs up to the config's limit: plan them all (the planner's
            # own default, 100, would skip the longer ones the config asked for).
            return make_train_dataset(self.corpus, max_tokens=o.max_tokens, seed=o.seed,
                                      epoch=epoch, skip_batches=skip, input_context=context,
                                      max_length=self.cfg.data.max_tokens_per_sentence)

        dataset = (self.strategy.distribute_datasets_from_function(epoch_dataset)
                   if distributes_input(self.strategy) else epoch_dataset())
        for inputs, target_out, *gold in dataset:
            reason = self._agreed_stop(started, budget)
            if reason:
                return reason
            loss, align_loss, head_loss = (
                float(v) for v in self.train_step(inputs, target_out, *gold))
            if self.head.frozen:
                loss = head_loss  # what the run optimises, for the log and the check
            if not math.isfinite(loss):
                raise FloatingPointError(
                    f"loss became {loss} at step {int(self.state['step'])}; lower "
                    "optim.learning_rate or use precision: float32"
                )
            step = int(self.state["step"].assign_add(1))
            self.state["batch_in_epoch"].assign_add(1)
            tokens = self._step_tokens(target_out)
            self.state["target_tokens"].assign_add(tokens)
            lr = float(self.optimizer.learning_rate)
            progress.update(step, loss, tokens, lr, int(self.state["epoch"]))
            with self.writer.as_default():
                tf.summary.scalar("train/loss", loss, step=step)
                tf.summary.scalar("train/learning_rate", lr, step=step)
                if gold and self.cfg.guided_alignment.enabled and not self.head.frozen:
                    tf.summary.scalar("train/alignment_loss", align_loss, step=step)
                if gold and self.cfg.has_head:
                    tf.summary.scalar("train/head_loss", head_loss, step=step)
            self.state["train_seconds"].assign(base_seconds + time.time() - started)
            # By time only on one machine: workers must save at the same steps.
            if step % o.checkpoint_every == 0 or (
                    o.checkpoint_minutes and self.workers == 1
                    and time.time() - self.last_checkpoint >= 60 * o.checkpoint_minutes):
                self.manager.save(checkpoint_number=step)
                self.last_checkpoint = time.time()
            if step % o.eval_every == 0 and not self.head.frozen:
                # A frozen head leaves the translations (and dev BLEU) as they were.
                self._evaluate_and_keep_best(step)
        return self._agreed_stop(started, budget)

    def _step_tokens(self, target_out) -> int:
        """Target tokens of a step, over all replicas and workers."""
        tokens = sum(int(tf.reduce_sum(tf.cast(part > 0, tf.int64)))
                     for part in self.strategy.experimental_local_results(target_out))
        if self.workers == 1:
            return tokens
        # Each replica's row holds its worker's count.
        local = len(self.strategy.experimental_local_results(target_out))
        return int(gather_from_workers(self.strategy, [tokens])[::local, 0].sum())

    def _evaluate_and_keep_best(self, step: int) -> None:
        result = self.evaluate()
        improved = result["bleu"] > float(self.state["best_bleu"])
        if improved:
            self.state["best_bleu"].assign(result["bleu"])
            self.state["evals_since_best"].assign(0)
            self.best.write(str(self.out_dir / "best" / "weights"))
        else:
            self.state["evals_since_best"].assign_add(1)
        record = {"step": step, "epoch": int(self.state["epoch"]),
                  "train_seconds": round(float(self.state["train_seconds"]), 1),
                  "best": improved, **result}
        with open(self.out_dir / "history.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
        with self.writer.as_default():
            tf.summary.scalar("dev/bleu", result["bleu"], step=step)
            tf.summary.scalar("dev/chrf", result["chrf"], step=step)
            for domain, scores in result.get("domains", {}).items():
                tf.summary.scalar(f"dev_{domain}/bleu", scores["bleu"], step=step)
                tf.summary.scalar(f"dev_{domain}/chrf", scores["chrf"], step=step)
        self._log_attention_image(step)
        log.info("step %d dev BLEU %.2f chrF %.2f%s (%.0fs) e.g. %r", step, result["bleu"],
                 result["chrf"], " *best*" if improved else "", result["seconds"],
                 result["example"])
        self.manager.save(checkpoint_number=step)

    def request_stop(self, signum, _frame) -> None:
        self.stop_reason = f"signal {signal.Signals(signum).name}"


def run(config_path: str | Path, run_dir: str | Path, *, resume: bool = False,
        max_time: str | None = None, overrides: dict | None = None) -> Path:
    """Trains per `config_path` into `run_dir`; returns the run directory.

    Under a multi-worker `TF_CONFIG`, every worker calls it with the same
    arguments (see the module docstring).

    Raises:
        TrainingInterrupted: on every worker of a multi-worker run that a
            signal stopped (one machine returns normally after a signal).
    """
    from training.config import load_config

    strategy = pick_strategy()  # first: a multi-worker strategy is made before any TF op
    cfg = load_config(config_path, overrides)
    run_dir = Path(run_dir)
    corpora: list = []

    def prepare() -> None:  # the run's own files, written by the chief alone
        start_run_directory(config_path, run_dir, resume=resume, overrides=overrides)
        keras.utils.set_random_seed(cfg.optim.seed)
        corpora.extend(load_corpora(cfg, run_dir))

    if not chief_first(strategy, prepare):
        if not (run_dir / "config.yaml").exists():
            raise FileNotFoundError(
                f"{run_dir / 'config.yaml'}, written by the chief worker, is not here: every "
                "worker must see the run directory at the same path (a shared filesystem)")
        keras.utils.set_random_seed(cfg.optim.seed)
        corpora.extend(load_corpora(cfg, run_dir))  # the chief's tokenizers and links
    tokenizers, corpus, dev = corpora
    check_same_on_workers(
        strategy, "training corpus and tokenizers (checksums)", corpus_checksum(corpus, tokenizers),
        "Every worker must read the same data.train file and the run's tokenizer/.")
    out_dir = run_dir if is_chief(strategy) else Path(tempfile.mkdtemp(prefix="nmt-worker-"))
    try:
        trainer = Trainer(cfg, run_dir, tokenizers, corpus, dev, strategy=strategy,
                          out_dir=out_dir)
        if resume:
            trainer.restore()
        check_same_on_workers(
            strategy, "the step they start from", int(trainer.state["step"]),
            f"Every worker must see the chief's checkpoints in {run_dir / 'checkpoints'}.")
        previous = {s: signal.signal(s, trainer.request_stop)
                    for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            trainer.train(None if max_time is None else parse_duration(max_time))
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
        if out_dir == run_dir:
            _write_summary(trainer, run_dir)
    finally:
        if out_dir != run_dir:
            shutil.rmtree(out_dir, ignore_errors=True)
    if trainer.workers > 1 and trainer.stop_reason:
        # Exit code 0 would tell a job controller (Kubernetes, Vertex AI) the run is done.
        raise TrainingInterrupted(
            f"training stopped by a {trainer.stop_reason} at step {int(trainer.state['step'])} "
            f"on all {trainer.workers} workers, checkpoint saved: start every worker again "
            "with --resume to continue")
    return run_dir


def start_run_directory(config_path: str | Path, run_dir: Path, *, resume: bool,
                        overrides: dict | None) -> None:
    """Creates `run_dir` with the effective config, or checks it is resumed.

    Raises:
        ValueError: `run_dir` already holds files and `resume` is False.
    """
    from training.config import read_raw_config

    if run_dir.exists() and any(run_dir.iterdir()) and not resume:
        raise ValueError(
            f"{run_dir} already holds a run; pass --resume to continue it or choose another "
            "--run directory"
        )
    run_dir.mkdir(parents=True, exist_ok=True)
    if not (run_dir / "config.yaml").exists():
        # The effective config (overrides applied), so export rebuilds the same model;
        # data paths relative to the run directory, so the run can move with its data.
        effective = read_raw_config(config_path, overrides)
        effective["data"] = relative_data_paths(effective["data"], run_dir)
        if effective.get("init_from"):
            effective["init_from"] = os.path.relpath(effective["init_from"], run_dir.resolve())
        if (effective.get("alignment_head") or {}).get("init_from"):
            head = effective["alignment_head"]
            head["init_from"] = os.path.relpath(head["init_from"], run_dir.resolve())
        (run_dir / "config.yaml").write_text(yaml.safe_dump(effective, sort_keys=False))


def corpus_checksum(corpus, tokenizers: TokenizerPair) -> int:
    """CRC-32 of the tokenizers' models and the encoded corpus (ids and links)."""
    parts = [tokenizers.source.model_proto, tokenizers.target.model_proto]
    for ids in (corpus.source, corpus.target, corpus.alignments):
        if ids is not None:
            parts += [ids.values.tobytes(), ids.row_splits.tobytes()]
    checksum = 0
    for part in parts:
        checksum = zlib.crc32(part, checksum)
    return checksum


def relative_data_paths(data: dict, run_dir: Path) -> dict:
    """`data` with its file paths (absolute) made relative to `run_dir`."""
    data = dict(data)
    for key in ("train", "dev", "train_alignments"):
        if data.get(key):
            data[key] = os.path.relpath(data[key], run_dir.resolve())
    return data


def _relative_start(head: dict, run_dir: Path) -> dict:
    """The head settings with `init_from` relative to the run (no machine paths)."""
    if head.get("init_from"):
        head = {**head, "init_from": os.path.relpath(head["init_from"], run_dir.resolve())}
    return head


def machine_summary() -> dict:
    """What the run trained on, for its summary and model card."""
    devices = [d.device_type for d in tf.config.list_physical_devices() if d.device_type != "CPU"]
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "accelerators": devices}


def _write_summary(trainer: Trainer, run_dir: Path) -> None:
    summary = {
        "name": trainer.cfg.name,
        "steps": int(trainer.state["step"]),
        "epochs_completed": int(trainer.state["epoch"]),
        "train_seconds": round(float(trainer.state["train_seconds"]), 1),
        "best_dev_bleu": round(float(trainer.state["best_bleu"]), 2),
        "target_tokens": int(trainer.state["target_tokens"]),
        "target_tokens_per_second": round(
            int(trainer.state["target_tokens"]) / max(float(trainer.state["train_seconds"]), 1e-9)
        ),
        "parameters": int(trainer.model.count_params()),
        "train_pairs": int((trainer.corpus.indices >= 0).sum()),
        "joined_examples": int((trainer.corpus.indices < 0).sum()),
        "dev_sources": len(trainer.dev_sources),
        "machine": machine_summary(),
        "workers": trainer.workers,
        "replicas": int(trainer.strategy.num_replicas_in_sync),
        "model_config": trainer.model.config.to_dict(),
        "guided_alignment": dataclasses.asdict(trainer.cfg.guided_alignment),
        "alignment_head": _relative_start(dataclasses.asdict(trainer.cfg.alignment_head),
                                          run_dir),
        **({"starting_model": trainer.starting_model} if trainer.starting_model else {}),
        # A signal stopped this part of the run (checkpoint saved; --resume goes on).
        **({"stopped_by": trainer.stop_reason} if trainer.stop_reason else {}),
        "python": sys.version.split()[0],
        "tensorflow": tf.__version__,
    }
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    log.info("summary: %s", yaml.safe_dump(summary, sort_keys=False))
