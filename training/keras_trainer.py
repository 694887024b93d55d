"""Training on any Keras backend (JAX, PyTorch, TensorFlow) from pre-tokenized shards.

`nmt train` trains on TensorFlow from a corpus (tf.data, tf.distribute). This
trainer needs no TensorFlow: it reads the shards of `nmt shards`
(`nmt.data.shards`) and trains the same `Seq2Seq` with `train_on_batch`, which
each backend compiles (XLA under JAX) once per batch shape; the batches of a
length bucket share one shape. What version 9's recipe needs is here:
token-budget batches bucketed by length, warm-up and inverse-square-root
schedule, global-norm clipping, label smoothing, checkpoints by steps and by
time, `resume` (weights, optimizer state, the place in the epoch), dev loss and
greedy dev BLEU/chrF per domain, early stop, tokens per second; and, from the
corpus's word links (`nmt align-corpus`), guided alignment and the alignment
head, joint or frozen (`training.alignment_training`).

A run directory written here:

    <run>/config.yaml        the effective training config
    <run>/tokenizer/         the shards' SentencePiece models (what an export embeds)
    <run>/checkpoints/       step-<N>.weights.h5 (Keras weights, any backend) and
                             step-<N>.state.npz (optimizer, position, RNG)
    <run>/history.jsonl      one line per log and per evaluation
    <run>/starting_model.json  what `start_from` loaded (kept for a resumed run)
    <run>/summary.json       steps, epochs, hours over every resumed part, backend,
                             device, machine, what the run started from; the keys
                             of `nmt train`'s summary, so a model card follows the
                             chain of runs through it

`nmt export --run <run>` reads it on TensorFlow (`training.export_run`).
The backend is chosen before Keras is imported (`KERAS_BACKEND`, or
`python -m training.accelerator.train --backend jax`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import platform
import shutil
import sys
import time
from pathlib import Path

import keras
import numpy as np
import yaml
from keras import ops

from nmt.data import shards
from nmt.data.shard_links import attach_links
from nmt.data.subwords import BOS_ID, EOS_ID, PAD_ID
from nmt.evaluation.metrics import corpus_scores
from nmt.model import ModelConfig, Seq2Seq
from training.alignment_training import AlignmentTraining, head_weights
from training.config import TrainConfig, load_config, parse_duration, read_raw_config
from training.machine import cpu_model
from training.weight_files import load_parts

log = logging.getLogger("nmt.keras_trainer")

CHECKPOINT_PATTERN = "step-*.weights.h5"
STARTING_MODEL_FILE = "starting_model.json"
BUCKET_WIDTH = 8
# Few length buckets, so few batch shapes to compile (each costs seconds under XLA):
# half the examples fit in 16 pieces, 87% in 64 (the v10 corpus).
BUCKET_BOUNDS = (16, 24, 32, 48, 64, 96, 128)


@keras.saving.register_keras_serializable(package="nmt")
class WarmupInverseSqrt(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up to `peak`, then decay with 1/sqrt(step) (Vaswani et al. 2017);
    the schedule of `nmt train`, in `keras.ops`."""

    def __init__(self, peak: float, warmup_steps: int):
        self.peak = peak
        self.warmup_steps = max(1, warmup_steps)

    def __call__(self, step):
        step = ops.cast(step, "float32") + 1.0
        warmup = float(self.warmup_steps)
        return self.peak * ops.minimum(step / warmup, ops.sqrt(warmup / step))

    def get_config(self):
        return {"peak": self.peak, "warmup_steps": self.warmup_steps}


@dataclasses.dataclass
class Position:
    """Where a run is: optimizer steps done, the epoch, batches of it done."""

    step: int = 0
    epoch: int = 0
    batch: int = 0


def device_name() -> str:
    """The device the backend computes on, e.g. `gpu: NVIDIA H200` or `cpu: x86_64`."""
    backend = keras.backend.backend()
    # Keras has imported its backend's framework already; read it, import nothing.
    framework = sys.modules.get(backend)
    try:
        if backend == "jax" and framework is not None:
            device = framework.devices()[0]
            return f"{device.platform}: {getattr(device, 'device_kind', device)}"
        if backend == "torch" and framework is not None and framework.cuda.is_available():
            return f"cuda: {framework.cuda.get_device_name(0)}"
    except Exception:  # the name is for the log and the summary only
        pass
    return f"cpu: {platform.processor() or platform.machine()}"


class KerasTrainer:
    """Trains a `Seq2Seq` on shards with the current Keras backend.

    Args:
        cfg: the training config (`training.config.load_config`); its `model`
            and `optim` sections are used, `data.join_fraction` and
            `data.join_max_pairs` join pairs as `nmt train` does.
        shards_dir: a directory written by `nmt shards`.
        run_dir: the run directory (created; an existing one is resumed
            with `resume=True` only).
        fixed_rows: one batch shape per length bucket (fewer compilations).
        alignments: the training TSV's word links, a Pharaoh line per pair
            (`nmt align-corpus`), for guided alignment or an alignment head;
            default: the config's `data.train_alignments`.
    """

    def __init__(self, cfg: TrainConfig, shards_dir: str | Path, run_dir: str | Path,
                 resume: bool = False, fixed_rows: bool = True, raw_config: dict | None = None,
                 dev_translate: int = 200, alignments: str | Path | None = None):
        self.cfg = cfg
        self.dev_translate = dev_translate
        self.raw_config = raw_config or {}
        self.shards_dir = Path(shards_dir)
        self.run_dir = Path(run_dir)
        self.fixed_rows = fixed_rows
        self.manifest = shards.read_manifest(self.shards_dir)
        existing = (self.run_dir / "checkpoints").exists()
        if existing and not resume:
            raise FileExistsError(f"{self.run_dir} already holds a run: pass resume=True "
                                  "(--resume) to continue it, or choose another run directory")
        o = cfg.optim
        keras.utils.set_random_seed(o.seed)
        keras.mixed_precision.set_global_policy(o.precision)
        # Data parallelism over every device the backend sees (keras.distribution:
        # JAX only): each batch's rows are split evenly over them.
        self.devices = 1
        if keras.backend.backend() == "jax" and len(keras.distribution.list_devices()) > 1:
            keras.distribution.set_distribution(keras.distribution.DataParallel())
            self.devices = len(keras.distribution.list_devices())
        train = shards.load_split(self.shards_dir, "train")
        self.links = cfg.needs_links
        if self.links:
            train = self._with_links(train, alignments or cfg.data.train_alignments)
        if cfg.data.domain_weights:
            train = shards.reweight_domains(train, cfg.data.domain_weights, seed=o.seed)
        joined = round(cfg.data.join_fraction * len(train))
        if joined:
            train = shards.join_examples(train, count=joined, max_pairs=cfg.data.join_max_pairs,
                                         seed=o.seed)
        self.train = train
        self.dev = shards.load_split(self.shards_dir, "dev") if (
            self.shards_dir / "dev.npz").exists() else None
        tokenizers = self.manifest["tokenizers"]
        self.model_config = ModelConfig.from_dict({
            **cfg.model, "source_vocab_size": tokenizers["source"]["vocab_size"],
            "target_vocab_size": tokenizers["target"]["vocab_size"]})
        self.model = Seq2Seq(self.model_config)
        self.model.build_for()
        self.optimizer = keras.optimizers.Adam(
            WarmupInverseSqrt(o.learning_rate, o.warmup_steps), global_clipnorm=o.clip_norm)
        # XLA under JAX. TensorFlow's XLA cannot differentiate some of the recurrent
        # loops (a TensorArray of unknown size: without dropout, or carrying the head's
        # keys), so TensorFlow runs plain graphs, as `nmt train` does.
        jit = keras.backend.backend() == "jax"
        # What train_on_batch trains: the model, or the model with its alignment losses.
        self.trainee = self.model
        if self.links:
            self.trainee = AlignmentTraining(self.model, cfg)
            self.trainee.build_for()
            self.model.compile(jit_compile=jit)  # for the dev loss (test_on_batch)
        self.frozen = self.links and self.trainee.frozen
        self.trainee.compile(optimizer=self.optimizer, jit_compile=jit)
        self.position = Position()
        self.train_seconds = 0.0  # over every part of a resumed run
        self.starting_model: dict | None = None
        self.best_dev = math.inf
        self.evaluations_without_gain = 0
        if existing:
            self._restore_latest()
        else:
            self._write_run_files()

    def _with_links(self, train: shards.ShardSplit, path) -> shards.ShardSplit:
        if not path:
            raise ValueError(
                "guided alignment and the alignment head learn from the training pairs' word "
                "links: pass --alignments FILE (one Pharaoh line of piece links per pair of "
                "the shards' train TSV; `nmt align-corpus` writes it) or set "
                "data.train_alignments")
        pairs = self.manifest["splits"]["train"]["pairs_read"]
        train = attach_links(train, path, pairs)
        log.info("word links of %d pairs from %s", pairs, path)
        return train

    # --- run directory -------------------------------------------------------------

    def _write_run_files(self) -> None:
        (self.run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
        (self.run_dir / "config.yaml").write_text(yaml.safe_dump(self.raw_config,
                                                                 sort_keys=False))
        tokenizer = self.run_dir / "tokenizer"
        tokenizer.mkdir(exist_ok=True)
        tokenizers = self.manifest["tokenizers"]
        for side in ("source", "target"):
            shutil.copyfile(self.shards_dir / tokenizers[side]["file"],
                            tokenizer / f"{side}.model")
        (tokenizer / "tokenizer.json").write_text(json.dumps({
            "source_language": tokenizers["source"]["language"],
            "target_language": tokenizers["target"]["language"],
            "joint": bool(tokenizers["joint"])}, indent=2) + "\n")

    def _checkpoints(self) -> list[Path]:
        return sorted((self.run_dir / "checkpoints").glob(CHECKPOINT_PATTERN),
                      key=checkpoint_step)

    def save_checkpoint(self) -> Path:
        """Writes the weights and the training state of this step; keeps the last
        `optim.keep_checkpoints`."""
        directory = self.run_dir / "checkpoints"
        stem = directory / f"step-{self.position.step:08d}"
        self.model.save_weights(f"{stem}.weights.h5")
        state = {f"optimizer_{i:04d}": keras.ops.convert_to_numpy(v.value)
                 for i, v in enumerate(self.optimizer.variables)}
        np.savez(f"{stem}.state.npz", **state, position=np.array(dataclasses.astuple(
            self.position)), best_dev=np.array(self.best_dev),
            stale=np.array(self.evaluations_without_gain),
            train_seconds=np.array(self.train_seconds))
        for old in self._checkpoints()[:-self.cfg.optim.keep_checkpoints]:
            old.unlink()
            old.with_name(old.name.replace(".weights.h5", ".state.npz")).unlink(missing_ok=True)
        return Path(f"{stem}.weights.h5")

    def _restore_latest(self) -> None:
        paths = self._checkpoints()
        if not paths:
            raise FileNotFoundError(f"{self.run_dir / 'checkpoints'} has no checkpoint to resume")
        self.model.load_weights(paths[-1])
        state = np.load(str(paths[-1]).replace(".weights.h5", ".state.npz"))
        self.optimizer.build(self.trainee.trainable_variables)
        for i, variable in enumerate(self.optimizer.variables):
            variable.assign(state[f"optimizer_{i:04d}"])
        self.position = Position(*(int(v) for v in state["position"]))
        self.best_dev = float(state["best_dev"])
        self.evaluations_without_gain = int(state["stale"])
        if "train_seconds" in state.files:
            self.train_seconds = float(state["train_seconds"])
        started = self.run_dir / STARTING_MODEL_FILE
        if started.exists():
            self.starting_model = json.loads(started.read_text())
        log.info("resumed at step %d (epoch %d, batch %d)", self.position.step,
                 self.position.epoch, self.position.batch)

    def start_from(self, weights_dir: str | Path) -> None:
        """Starts from the weights a previous run handed back (`save_parts`, e.g. a
        `--out` directory's `weights/`), and records that run: its name and its summary
        (the `summary.json` beside `weights_dir`), as `nmt train` records `init_from`.
        A model with an alignment head starts from weights without one: the head
        starts afresh."""
        weights_dir = Path(weights_dir)
        metadata = load_parts(self.model, weights_dir, new=head_weights(self.model))
        summary_path = weights_dir.parent / "summary.json"
        summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
        config_path = weights_dir.parent / "config.yaml"
        name = summary.get("name")
        if not name and config_path.exists():
            name = (yaml.safe_load(config_path.read_text()) or {}).get("name")
        name = name or weights_dir.parent.name
        training = {"name": name, **summary, "averaged_checkpoints": metadata.get("steps", [])}
        self.starting_model = {"name": name, "training": training}
        (self.run_dir / STARTING_MODEL_FILE).write_text(
            json.dumps(self.starting_model, indent=2) + "\n")

    def _append_history(self, record: dict) -> None:
        with open(self.run_dir / "history.jsonl", "a") as f:
            f.write(json.dumps(record) + "\n")

    # --- evaluation -----------------------------------------------------------------

    def dev_loss(self) -> dict[str, float]:
        """Label-smoothed dev loss per target token: `all`, and per domain where the
        dev split names domains (the corpus's sources)."""
        if self.dev is None or not len(self.dev):
            return {}
        groups = {name: np.flatnonzero(self.dev.domain == index)
                  for index, name in enumerate(self.dev.domains)}
        groups = groups or {"all": np.arange(len(self.dev))}
        length = np.maximum(self.dev.source_lengths, self.dev.target_lengths)
        bucket = shards.bucket_lengths(length, BUCKET_WIDTH, BUCKET_BOUNDS)
        scores = {}
        for name, members in groups.items():
            total = count = 0.0
            for width in np.unique(bucket[members]):
                in_bucket = members[bucket[members] == width]
                rows = max(1, self.cfg.optim.max_tokens // int(width))
                rows = max(self.devices, rows // self.devices * self.devices)
                for start in range(0, len(in_bucket), rows):
                    batch = shards.make_batch(self.dev, in_bucket[start:start + rows],
                                              length=int(width))
                    # Rows of padding alone fill the batch up: one shape per bucket, as in
                    # training, and they add nothing to the loss.
                    source, target_in, target_out = (
                        np.pad(a, ((0, rows - len(a)), (0, 0))) for a in batch)
                    tokens = int(np.count_nonzero(target_out))
                    loss = self.model.test_on_batch((source, target_in), target_out)
                    total += float(loss) * tokens
                    count += tokens
            scores[name] = (total, count)
        # `all` weighs every target token alike, whatever its domain.
        scores["all"] = tuple(map(sum, zip(*scores.values(), strict=True)))
        return {name: total / max(count, 1.0) for name, (total, count) in scores.items()}

    def dev_translations(self, per_domain: int = 200, batch: int = 100) -> dict[str, dict]:
        """Greedy translations of the first `per_domain` dev pairs of each domain,
        scored against their references: `{domain: {"bleu", "chrf"}}` and `all`."""
        if self.dev is None or not len(self.dev) or self.dev.references is None:
            return {}
        groups = {name: np.flatnonzero(self.dev.domain == index)[:per_domain]
                  for index, name in enumerate(self.dev.domains)}
        groups = groups or {"all": np.arange(min(len(self.dev), per_domain))}
        tokenizer = self._target_tokenizer()
        results, everything = {}, ([], [])
        for name, members in groups.items():
            hypotheses = []
            for start in range(0, len(members), batch):
                source, _, _ = shards.make_batch(self.dev, members[start:start + batch],
                                                 pad_to=BUCKET_WIDTH)
                ids = greedy_decode(self.model, source, max_steps=2 * source.shape[1] + 10)
                hypotheses += tokenizer.detokenize(ids)
            references = [[self.dev.references[i]] for i in members]
            scores = corpus_scores(hypotheses, references)
            results[name] = {"bleu": scores.bleu, "chrf": scores.chrf}
            everything[0].extend(hypotheses)
            everything[1].extend(references)
        if len(groups) > 1:
            scores = corpus_scores(*everything)
            results["all"] = {"bleu": scores.bleu, "chrf": scores.chrf}
        return results

    def _target_tokenizer(self):
        from nmt.data.subwords import PlainTokenizer

        target = self.manifest["tokenizers"]["target"]
        return PlainTokenizer.from_file(self.shards_dir / target["file"], target["language"])

    # --- training -------------------------------------------------------------------

    def batches(self):
        """The rest of the epoch from the current position, then the next epochs."""
        o = self.cfg.optim
        while True:
            yield from shards.iter_batches(
                    self.train, max_tokens=o.max_tokens, seed=o.seed, epoch=self.position.epoch,
                    skip_batches=self.position.batch, bucket_width=BUCKET_WIDTH,
                    pad_to=BUCKET_WIDTH, max_length=self.cfg.data.max_tokens_per_sentence,
                    fixed_rows=self.fixed_rows, bucket_bounds=BUCKET_BOUNDS,
                    rows_multiple=self.devices, gold=self.links)
            self.position.epoch += 1
            self.position.batch = 0

    def train_step(self, batch: tuple) -> float:
        """One optimizer update on a `batches()` batch; returns its loss (with word
        links: the whole objective, `training.alignment_training`)."""
        if self.links:
            source, target_in, target_out, gold = batch
            return self.trainee.train_on_batch((source, target_in, target_out),
                                               (target_out, gold))
        source, target_in, target_out = batch
        return self.model.train_on_batch((source, target_in), target_out)

    def fit(self, max_steps: int | None = None, max_time: float | None = None,
            on_checkpoint=None) -> dict:
        """Trains until `max_steps` (total), `max_time` seconds, `optim.max_epochs`,
        or the dev loss stops improving for `optim.patience` evaluations (a frozen
        head leaves translations as they were: no dev evaluation).
        `on_checkpoint(trainer)` runs after each checkpoint (e.g. to copy the
        weights somewhere a killed job still leaves them)."""
        o = self.cfg.optim
        max_steps = max_steps if max_steps is not None else (o.max_steps or None)
        max_time = max_time if max_time is not None else (parse_duration(o.max_time) or None)
        started = last_checkpoint = time.monotonic()
        base_seconds = self.train_seconds
        window_tokens, window_padded, window_start = 0, 0, time.monotonic()
        stop = "max_epochs"
        losses = []
        for batch in self.batches():
            if self.position.epoch >= o.max_epochs:
                break
            loss = self.train_step(batch)
            target_out = batch[2]
            self.position.step += 1
            self.position.batch += 1
            window_tokens += int(np.count_nonzero(target_out))
            window_padded += target_out.size
            step = self.position.step
            if step % o.log_every == 0:
                losses.append(float(loss))
                elapsed = time.monotonic() - window_start
                record = {"step": step, "epoch": self.position.epoch, "loss": float(loss),
                          "target_tokens_per_s": window_tokens / elapsed,
                          "padded_tokens_per_s": window_padded / elapsed,
                          "learning_rate": float(self.optimizer.learning_rate),
                          "elapsed_s": time.monotonic() - started}
                self._append_history(record)
                log.info("step %d epoch %d loss %.3f %.0f target tokens/s", step,
                         self.position.epoch, float(loss), record["target_tokens_per_s"])
                window_tokens, window_padded, window_start = 0, 0, time.monotonic()
            if step % o.eval_every == 0 and not self.frozen:
                scores = self.dev_loss()
                translated = self.dev_translations(self.dev_translate) if (
                    self.dev_translate) else {}
                self._append_history({"step": step, "epoch": self.position.epoch,
                                      "dev_loss": scores, "dev": translated})
                log.info("step %d dev loss %s", step,
                         ", ".join(f"{k} {v:.3f}" for k, v in scores.items()))
                if translated:
                    log.info("step %d dev chrF (greedy) %s", step, ", ".join(
                        f"{k} {v['chrf']:.2f}" for k, v in translated.items()))
                if scores.get("all", math.inf) < self.best_dev:
                    self.best_dev, self.evaluations_without_gain = scores["all"], 0
                else:
                    self.evaluations_without_gain += 1
                if self.evaluations_without_gain >= o.patience:
                    stop = "patience"
                    break
            self.train_seconds = base_seconds + time.monotonic() - started
            minutes = (time.monotonic() - last_checkpoint) / 60
            if step % o.checkpoint_every == 0 or (
                    o.checkpoint_minutes and minutes >= o.checkpoint_minutes):
                self.save_checkpoint()
                if on_checkpoint is not None:
                    on_checkpoint(self)
                last_checkpoint = time.monotonic()
            if max_steps and step >= max_steps:
                stop = "max_steps"
                break
            if max_time and time.monotonic() - started >= max_time:
                stop = "max_time"
                break
        self.train_seconds = base_seconds + time.monotonic() - started
        self.save_checkpoint()
        summary = self.summary(stop, part_hours=(time.monotonic() - started) / 3600)
        (self.run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        return summary

    def summary(self, stop: str, part_hours: float) -> dict:
        """The run's `summary.json`: the keys of `nmt train`'s (`training.train`) that a
        model card reads, and the backend's."""
        device = device_name()
        return {
            "name": self.cfg.name,
            "steps": self.position.step, "epochs": self.position.epoch,
            "epochs_completed": self.position.epoch,
            "stop": stop, "train_seconds": round(self.train_seconds, 1),
            "hours": self.train_seconds / 3600, "part_hours": part_hours,
            "backend": keras.backend.backend(), "keras": keras.__version__,
            "device": device, "devices": self.devices,
            "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                        "accelerators": [] if device.startswith("cpu") else [device]},
            "precision": self.cfg.optim.precision, "objective": self.objective(),
            "best_dev_loss": self.best_dev,
            "train_pairs": int((self.train.pair_index >= 0).sum()),
            "train_examples": len(self.train),
            "model_config": self.model_config.to_dict(),
            "guided_alignment": dataclasses.asdict(self.cfg.guided_alignment),
            "alignment_head": dataclasses.asdict(self.cfg.alignment_head),
            **({"starting_model": self.starting_model} if self.starting_model else {}),
            "python": platform.python_version(),
        }


    def objective(self) -> str:
        """What the run optimises, in words (for the summary and the model card)."""
        if self.frozen:
            return "alignment head (frozen model)"
        parts = ["translation"]
        if self.cfg.guided_alignment.enabled:
            parts.append("guided alignment")
        if self.cfg.has_head:
            parts.append("alignment head")
        return " + ".join(parts)


def greedy_decode(model: Seq2Seq, source, max_steps: int) -> np.ndarray:
    """Greedy search on any backend: int32 `(batch, steps)` target ids, EOS included,
    PAD after it (what `PlainTokenizer.detokenize` reads)."""
    memory = model.encode(source)
    state = model.initial_state(memory)
    tokens = np.full((source.shape[0],), BOS_ID, np.int32)
    finished = np.zeros(source.shape[0], bool)
    steps = []
    for _ in range(max_steps):
        logits, state, _ = model.decode_step(tokens, state, memory)
        tokens = keras.ops.convert_to_numpy(ops.argmax(logits, axis=-1)).astype(np.int32)
        tokens = np.where(finished, PAD_ID, tokens)
        steps.append(tokens)
        finished |= tokens == EOS_ID
        if finished.all():
            break
    return np.stack(steps, axis=1)


def checkpoint_step(path: Path) -> int:
    """The step of a `step-<N>.weights.h5` checkpoint."""
    return int(path.name.split("-", 1)[1].split(".", 1)[0])


def make_trainer(config: str | Path, shards_dir: str | Path, run_dir: str | Path,
                 overrides: dict | None = None, resume: bool = False,
                 dev_translate: int = 200, alignments: str | Path | None = None) -> KerasTrainer:
    """A trainer for the YAML `config` (with `section.key` overrides)."""
    cfg = load_config(config, overrides)
    return KerasTrainer(cfg, shards_dir, run_dir, resume=resume,
                        raw_config=read_raw_config(config, overrides),
                        dev_translate=dev_translate, alignments=alignments)
