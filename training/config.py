"""Training configuration: one YAML file, validated once when it is read."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import yaml

from nmt.alignment.guided_alignment import GUIDED_ALIGNMENT_TYPES
from nmt.data.corpus import CleaningConfig
from nmt.types import dataclass_from_dict

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")


# How two directions' word links combine (`training.corpus_alignment.symmetrize`).
SYMMETRIZATIONS = ("forward", "reverse", "intersection", "union", "grow-diag-final-and")

@dataclasses.dataclass(frozen=True)
class DataConfig:
    """Where the corpus is. Relative paths are resolved against the config file."""

    train: str
    dev: str
    dev_limit: int = 0  # evaluate on the first N dev pairs only (0 = all)
    cleaning: CleaningConfig = CleaningConfig()
    max_tokens_per_sentence: int = 100
    # Pharaoh links on the model's pieces, one line per training pair (guided
    # alignment); None: `nmt train` aligns the corpus itself when guidance is on.
    train_alignments: str | None = None
    # Long examples made by joining random training pairs
    # (`nmt.data.encoding.concatenate_examples`): this many per training pair,
    # each of 2 to `join_max_pairs` pairs.
    join_fraction: float = 0.0
    join_max_pairs: int = 3
    # The Keras trainer's shards, re-weighted by domain (the corpus's sources): each
    # named domain's examples times its weight (`nmt.data.shards.reweight_domains`),
    # e.g. a last phase towards everyday sentences from the same shards. `nmt train`
    # reads the corpus as its recipe wrote it.
    domain_weights: dict | None = None

    def __post_init__(self) -> None:
        for name, weight in (self.domain_weights or {}).items():
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
                raise ValueError(f"data.domain_weights.{name} must be a number >= 0. "
                                 f"Received: {weight!r}")
        if isinstance(self.join_fraction, bool) or not (
            isinstance(self.join_fraction, (int, float)) and 0 <= self.join_fraction <= 1
        ):
            raise ValueError(
                "data.join_fraction must be a number from 0 to 1. "
                f"Received: join_fraction={self.join_fraction!r}"
            )
        if isinstance(self.join_max_pairs, bool) or not (
            isinstance(self.join_max_pairs, int) and self.join_max_pairs >= 2
        ):
            raise ValueError(
                "data.join_max_pairs must be an integer >= 2. "
                f"Received: join_max_pairs={self.join_max_pairs!r}"
            )


@dataclasses.dataclass(frozen=True)
class TokenizerConfig:
    vocab_size: int = 8000
    joint: bool = True


@dataclasses.dataclass(frozen=True)
class OptimConfig:
    """Optimisation and schedule; times accept `90m`, `1h30m`, `45s` or seconds."""

    max_tokens: int = 6000  # padded tokens per batch (batch x longest side)
    learning_rate: float = 2e-3
    warmup_steps: int = 300
    clip_norm: float = 1.0
    precision: str = "mixed_bfloat16"
    seed: int = 1
    max_epochs: int = 100
    max_steps: int = 0  # 0 = no limit
    max_time: str = "0"  # wall-clock budget, 0 = none
    checkpoint_every: int = 200
    # Also a checkpoint when this many minutes have passed since the last one (0 = steps
    # only; one machine only): a run stopped without a signal loses at most this much.
    checkpoint_minutes: float = 0
    eval_every: int = 500
    patience: int = 8  # evaluations without a better dev BLEU before stopping
    log_every: int = 20
    keep_checkpoints: int = 2  # latest checkpoints kept (`nmt export --average N` reads them)

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ValueError(
                f"precision must be one of {PRECISIONS}. Received: precision={self.precision!r}"
            )
        for name in ("max_tokens", "checkpoint_every", "eval_every", "log_every", "patience",
                     "keep_checkpoints"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1. Received: {name}={getattr(self, name)!r}")
        parse_duration(self.max_time)
        if isinstance(self.checkpoint_minutes, bool) or not isinstance(
                self.checkpoint_minutes, (int, float)) or self.checkpoint_minutes < 0:
            raise ValueError("checkpoint_minutes must be a number >= 0. "
                             f"Received: checkpoint_minutes={self.checkpoint_minutes!r}")


@dataclasses.dataclass(frozen=True)
class GuidedAlignmentConfig:
    """Guided alignment: an added loss pulling attention towards word alignments.

    Attributes:
        type: `"none"`, `"ce"` or `"mse"` (see `nmt.alignment.guided_alignment`).
        weight: the loss is `translation + weight * alignment`.
        symmetrization: how `nmt train` / `nmt align-corpus` combine eflomal's
            two directions when they align the corpus themselves.
    """

    type: str = "none"
    weight: float = 0.0
    symmetrization: str = "intersection"

    def __post_init__(self) -> None:
        if self.type not in ("none", *GUIDED_ALIGNMENT_TYPES):
            raise ValueError(
                f"guided_alignment.type must be one of {('none', *GUIDED_ALIGNMENT_TYPES)}. "
                f"Received: type={self.type!r}"
            )
        if isinstance(self.weight, bool) or not isinstance(self.weight, (int, float)) or (
            self.weight < 0 or (self.enabled and self.weight == 0)
        ):
            raise ValueError(
                "guided_alignment.weight must be a number > 0 when type is ce or mse "
                f"(>= 0 otherwise). Received: weight={self.weight!r}"
            )
        if self.symmetrization not in SYMMETRIZATIONS:
            raise ValueError(
                f"guided_alignment.symmetrization must be one of {SYMMETRIZATIONS}. "
                f"Received: symmetrization={self.symmetrization!r}"
            )

    @property
    def enabled(self) -> bool:
        return self.type != "none"


HEAD_TRAINING = ("joint", "frozen")


@dataclasses.dataclass(frozen=True)
class AlignmentHeadConfig:
    """How the alignment head (`model.alignment_head`) is trained.

    The head is supervised by the corpus word links (the same file and step
    convention as guided alignment: `data.train_alignments`, or eflomal's links
    combined by `guided_alignment.symmetrization`).

    Attributes:
        train: `"joint"`: with the model, the loss is `translation [+ guided
            alignment] + weight * head loss`; `"frozen"`: only the head's
            weights change, every other weight is `init_from`'s, so its
            translations stay byte-identical (no dev BLEU is computed).
        init_from: an exported model version directory or a training run
            whose weights start the model (required for `frozen`); the run
            then uses its tokenizers, and `model` must match its architecture;
            its head, if it has the same, starts the head too (a distilled
            student started from its teacher), else the head starts afresh.
        type: `"ce"` or `"mse"` (see `nmt.alignment.guided_alignment`).
        weight: the head loss's weight in joint training.
    """

    train: str = "joint"
    init_from: str | None = None
    type: str = "ce"
    weight: float = 1.0

    def __post_init__(self) -> None:
        if self.train not in HEAD_TRAINING:
            raise ValueError(f"alignment_head.train must be one of {HEAD_TRAINING}. "
                             f"Received: train={self.train!r}")
        if self.train == "frozen" and not self.init_from:
            raise ValueError("alignment_head.train: frozen needs alignment_head.init_from (an "
                             "exported model version or a training run to start from)")
        if self.type not in GUIDED_ALIGNMENT_TYPES:
            raise ValueError(f"alignment_head.type must be one of {GUIDED_ALIGNMENT_TYPES}. "
                             f"Received: type={self.type!r}")
        if isinstance(self.weight, bool) or not isinstance(self.weight, (int, float)) or (
                self.weight <= 0):
            raise ValueError("alignment_head.weight must be a number > 0. "
                             f"Received: weight={self.weight!r}")

    @property
    def frozen(self) -> bool:
        return self.train == "frozen"


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    name: str
    data: DataConfig
    tokenizer: TokenizerConfig
    model: dict[str, Any]
    optim: OptimConfig
    guided_alignment: GuidedAlignmentConfig = GuidedAlignmentConfig()
    alignment_head: AlignmentHeadConfig = AlignmentHeadConfig()
    # Warm start: an exported model version or a training run whose tokenizers and
    # weights (all but an alignment head of another shape) start this run; its
    # `model` section must match that model's architecture.
    init_from: str | None = None

    def __post_init__(self) -> None:
        if self.model.get("alignment_head") is None and self.alignment_head.init_from:
            raise ValueError("alignment_head.init_from is set but the model has no head: "
                             "set model.alignment_head (general, bahdanau or concat), or "
                             "start the whole model with the top-level init_from")
        if self.init_from and self.alignment_head.init_from:
            raise ValueError("Set init_from (a warm start) or alignment_head.init_from (a head "
                             "trained on a model), not both")

    @property
    def starts_from(self) -> str | None:
        """The model whose tokenizers and weights start the run, if any."""
        return self.init_from or self.alignment_head.init_from

    @property
    def has_head(self) -> bool:
        return self.model.get("alignment_head") is not None

    @property
    def needs_links(self) -> bool:
        """Whether training reads corpus word links (guided alignment or a head)."""
        return self.guided_alignment.enabled or self.has_head


def parse_duration(text: str | int | float) -> float:
    """`"90m"`, `"1h30m"`, `"45s"`, `"120"` -> seconds."""
    if isinstance(text, (int, float)):
        return float(text)
    match = re.fullmatch(r"\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+(?:\.\d+)?)s?)?\s*", text)
    if not text.strip() or not match:
        raise ValueError(
            f"A duration looks like '90m', '1h30m', '45s' or '120'. Received: {text!r}"
        )
    hours, minutes, seconds = match.groups()
    return int(hours or 0) * 3600 + int(minutes or 0) * 60 + float(seconds or 0)


def _section(cls, values: dict | None, where: str):
    return dataclass_from_dict(cls, values, f"config section '{where}'")


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """`--set SECTION.KEY=VALUE` arguments as overrides; values are read as YAML."""
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or "." not in key:
            raise ValueError(
                f"--set takes SECTION.KEY=VALUE, e.g. optim.max_steps=100. Received: {item!r}"
            )
        overrides[key] = yaml.safe_load(value)
    return overrides


def read_raw_config(path: str | Path, overrides: dict[str, Any] | None = None) -> dict:
    """The YAML mapping with `overrides` (`section.key` -> value) applied and the
    data paths made absolute, ready to be written into a run directory."""
    path = Path(path)
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    for dotted, value in (overrides or {}).items():
        section, _, key = dotted.partition(".")
        if not key:
            raise ValueError(f"An override is 'section.key'. Received: {dotted!r}")
        raw.setdefault(section, {})[key] = value
    data = dict(raw.get("data") or {})
    for key in ("train", "dev"):
        if key not in data:
            raise ValueError(f"{path}: 'data.{key}' (a TSV of English<TAB>French) is required")
        data[key] = str((path.parent / data[key]).resolve())
    if data.get("train_alignments"):
        data["train_alignments"] = str((path.parent / data["train_alignments"]).resolve())
    raw["data"] = data
    if raw.get("init_from"):
        raw["init_from"] = str((path.parent / raw["init_from"]).resolve())
    head = dict(raw.get("alignment_head") or {})
    if head.get("init_from"):
        head["init_from"] = str((path.parent / head["init_from"]).resolve())
        raw["alignment_head"] = head
    raw.setdefault("name", path.stem)
    return raw


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """Reads a YAML training config; `overrides` maps `section.key` to values."""
    raw = read_raw_config(path, overrides)
    data = dict(raw["data"])
    data["cleaning"] = _section(CleaningConfig, data.get("cleaning"), "data.cleaning")
    return TrainConfig(
        name=str(raw["name"]),
        data=_section(DataConfig, data, "data"),
        tokenizer=_section(TokenizerConfig, raw.get("tokenizer"), "tokenizer"),
        model=dict(raw.get("model") or {}),
        optim=_section(OptimConfig, raw.get("optim"), "optim"),
        guided_alignment=_section(
            GuidedAlignmentConfig, raw.get("guided_alignment"), "guided_alignment"
        ),
        alignment_head=_section(AlignmentHeadConfig, raw.get("alignment_head"), "alignment_head"),
        init_from=raw.get("init_from"),
    )
