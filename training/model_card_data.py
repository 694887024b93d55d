"""What the model card reads from the records behind an export, and its Data and Limits.

The records: the chain of runs that made the export (`run_chain`: each run's
`starting_model`, back to an export the repository shipped) and the `nmt corpus`
manifest of each run's training data. Data and Limits: the Anki release, or the
sources of the manifests with their licences and attributions
(`training.model_card` renders the card).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path

import yaml

from training.corpus.build import MANIFEST

ATTRIBUTION = "Sentence pairs from www.manythings.org/anki and tatoeba.org (CC-BY 2.0 FR)"
# Where the repository ships its exports (`models/en-fr/<version>`).
MODELS = "models/en-fr"


def count_text(summary: dict, key: str, what: str) -> str:
    return f", {summary[key]:,}{what}" if key in summary else ""


def joined_line(summary: dict) -> str:
    joined = summary.get("joined_examples")
    if not joined:
        return "- No joined examples: the model saw the training pairs as they are."
    return (f"- {joined:,} long examples made by joining 2 to `data.join_max_pairs` random "
            "training pairs (`data.join_fraction`), so that attention meets long inputs.")


def find_manifest(run: Path, corpus: Path | None = None) -> dict | None:
    """The `nmt corpus` manifest of the run's training data, or None for a plain file.

    It is the `manifest.json` beside the run's `data.train` (in its `config.yaml`,
    relative to the run directory), or in `corpus`, the directory that holds that
    file now.

    Raises:
        FileNotFoundError: the training file is not where the config says (and no
            `corpus` is given), or `corpus` holds neither it nor a manifest.
        ValueError: the manifest describes another training file.
    """
    config = yaml.safe_load((run / "config.yaml").read_text()) or {}
    train = (config.get("data") or {}).get("train")
    if not train:
        return None
    name = Path(train).name
    directory = Path(corpus) if corpus is not None else (run / train).parent
    if not (directory / name).is_file() and not (directory / MANIFEST).is_file():
        if corpus is not None:
            raise FileNotFoundError(
                f"--corpus {corpus} holds neither {MANIFEST} nor {name} (the run's "
                "data.train): pass the directory the run's training data is in now")
        raise FileNotFoundError(
            f"{run / train} (data.train of {run / 'config.yaml'}, relative to the run) "
            "does not exist, so the card cannot tell whether it was a corpus of `nmt corpus` "
            f"with sources and licences: pass --corpus DIR, the directory that holds it (and "
            f"its {MANIFEST}, if it has one) now")
    if not (directory / MANIFEST).is_file():
        return None
    manifest = json.loads((directory / MANIFEST).read_text())
    if manifest["train_file"] != name:
        raise ValueError(f"{directory / MANIFEST} describes {manifest['train_file']}, not the "
                         f"run's data.train {train}: pass --corpus DIR, the corpus it trained on")
    return manifest


@dataclasses.dataclass(frozen=True)
class Start:
    """What a run of the chain started from.

    Attributes:
        record: the run's `starting_model` (the metadata of an export, or the summary of
            a run, as the run read it with the weights).
        version: an export's version; None for a run.
        out: an intermediate export's `nmt export --out` directory, relative to the
            directory of the runs (`en-fr-broad-last`); None for a run or an export the
            repository shipped (`models/en-fr/<version>`, in the git history).
    """

    record: dict
    version: int | None = None
    out: str | None = None

    @property
    def shipped(self) -> bool:
        return self.version is not None and self.out is None

    @property
    def run_name(self) -> str:
        """The run that made these weights."""
        training = self.record.get("training") or {}
        if self.version is None or "name" not in training:
            return self.record.get("name", "?")
        return training["name"]

    @property
    def label(self) -> str:
        """`version 8`, `` `en-fr-broad-last/1` `` or ``the `en-fr-broad` run``."""
        if self.version is None:
            return f"the `{self.run_name}` run"
        return f"version {self.version}" if self.out is None else f"`{self.out}/{self.version}`"


@dataclasses.dataclass(frozen=True)
class Stage:
    """One run of the chain that made an export.

    Attributes:
        name: the run's name (its config is `training/configs/<name>.yaml`).
        summary: its `summary.json`; for an earlier run, the summary the next run
            recorded with the weights (`starting_model`, `training`), so a run that went
            on after it was exported is described as it was.
        corpus: the `nmt corpus` recipe it trained on (`training/corpora/<corpus>.yaml`);
            None for a plain training file. A starting run known from the next run's
            record alone (its directory gone) is taken to share the next run's.
        manifest: that corpus's manifest; None when there is none or it is not known.
        start: what it started from; None for a run from scratch.
        run: its directory; None when known from a record alone.
    """

    name: str
    summary: dict
    corpus: str | None = None
    manifest: dict | None = None
    start: Start | None = None
    run: Path | None = None


def run_chain(run: Path, corpus: Path | None = None) -> tuple[Stage, ...]:
    """The runs that made the weights of `run`, oldest first, `run` last.

    Each run's `starting_model` is followed back to an export the repository shipped
    (`models/en-fr/N`) or a run from scratch. The records do not say where an export
    lies, so each run's `config.yaml` does (`init_from` or `alignment_head.init_from`,
    relative to the run): a path ending in `models/en-fr/N` is a shipped export; any
    other export is an intermediate one, made from the run named in its record
    (`training.name`), found beside `run` (a directory with a `summary.json`).
    Without a path (a config that names none) a record with a version is a shipped
    export, as `models/en-fr/N` always were; a starting run whose directory is gone
    is known from the record its next run kept.

    Args:
        corpus: the directory that holds `run`'s training data now (`find_manifest`).

    Raises:
        FileNotFoundError: a run's training data is not where its config says, or the
            run that made an intermediate export is not beside the run that started
            from it.
        ValueError: a manifest describes another training file (`find_manifest`).
    """
    summary = json.loads((run / "summary.json").read_text())
    return tuple(_walk(run, summary, find_manifest(run, corpus), None))


def record_chain(name: str, start: dict | None, corpus: str | None) -> tuple[Stage, ...]:
    """The chain as a run's records alone tell it: run `name` on `corpus`, from `start`."""
    return tuple(_walk(None, {"name": name, **({"starting_model": start} if start else {})},
                       None, corpus))


def _walk(run: Path | None, summary: dict, manifest: dict | None,
          corpus: str | None) -> list[Stage]:
    """The stages up to and including the run of `summary` (in `run`, if known)."""
    if run is not None:
        corpus = manifest["name"] if manifest else None
    record = summary.get("starting_model")
    path = _init_from(run)
    start = _start(run, path, record) if record else None
    stage = Stage(summary.get("name", "?"), summary, corpus, manifest, start, run)
    if start is None or start.shipped:
        return [stage]
    # A run's directory is init_from itself; an intermediate export's run lies beside this one.
    earlier = path if start.version is None else run.parent / start.run_name
    if earlier is not None and not (earlier / "summary.json").is_file():
        if start.version is not None:  # its corpus and start: nothing else tells them
            raise FileNotFoundError(
                f"{earlier / 'summary.json'} does not exist: {run.name} started from "
                f"{path}, an export of the `{start.run_name}` run, and the card reads that "
                "run's directory (beside this run) for its corpus and what it started from")
        earlier = None  # a starting run known from the record alone
    training = {"name": start.run_name, **(record.get("training") or {})}
    return [*_walk(earlier, training, _earlier_manifest(earlier), corpus), stage]


def _init_from(run: Path | None) -> Path | None:
    """The model `run` started from, as its `config.yaml` names it (None: not said)."""
    if run is None or not (run / "config.yaml").is_file():
        return None
    config = yaml.safe_load((run / "config.yaml").read_text()) or {}
    path = config.get("init_from") or (config.get("alignment_head") or {}).get("init_from")
    return Path(os.path.normpath(run / path)) if path else None


def _start(run: Path | None, path: Path | None, record: dict) -> Start:
    """What `run` started from: the record, and where the config's `path` puts it."""
    if "version" not in record:
        return Start(record)
    if path is None or path.parent.parts[-2:] == tuple(MODELS.split("/")):
        return Start(record, record["version"])
    return Start(record, record["version"], os.path.relpath(path.parent, run.parent))


def _earlier_manifest(run: Path | None) -> dict | None:
    """The corpus manifest of an earlier run of the chain."""
    if run is None:
        return None
    try:
        return find_manifest(run)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"The training data of {run}, an earlier run of the chain that made this export, "
            f"is not where its config.yaml (data.train) says: the card names the corpus of "
            "every run of the chain, so put that data back there") from None


def plain_data(summary: dict) -> list[str]:
    """The Data lines of a run on the Anki release (no corpus manifest)."""
    return [
        "- Training: the Tatoeba / ManyThings \"Anki\" fra-eng release of 2019-04-07, "
        "deduplicated and split so that no dev/test sentence occurs in training "
        f"(`train.tsv`{count_text(summary, 'train_pairs', ' pairs used after cleaning')}); "
        f"model selection on `dev.tsv`{count_text(summary, 'dev_sources', ' distinct sources')}.",
        joined_line(summary),
        f"- Licence: CC-BY 2.0 France. Attribution: \"{ATTRIBUTION}\".",
    ]


def corpus_data(manifest: dict, summary: dict) -> list[str]:
    """The Data lines of a run on a corpus of `nmt corpus`, from its manifest."""
    sources = manifest["sources"]
    excluded = manifest.get("excluded_files") or ()
    dev = (f", {summary['dev_sources']:,} distinct English sentences"
           if "dev_sources" in summary else "")
    return [
        f"- Training: the `{manifest['name']}` corpus built by `nmt corpus` "
        f"(`training/corpora/{manifest['name']}.yaml`), {manifest['train_pairs']:,} training "
        f"pairs (`{manifest['train_file']}`"
        f"{count_text(summary, 'train_pairs', ' used after cleaning')}) from {len(sources)} "
        "sources, each filtered by the recipe's rules, deduplicated (exact and near "
        "duplicates) and written `weight` times; the licence and attribution of each go "
        "wherever the model goes:",
        *(f"    - {source_text(source)}" for source in sources),
        "- No training pair shares a side with a held-out pair"
        + (f" or with the {len(excluded)} evaluation files "
           + ", ".join(f"`{name}`" for name in excluded) if excluded else "") + ".",
        f"- Model selection on `{manifest['dev_file']}`: up to {manifest['dev_mix_pairs']:,} "
        f"held-out pairs of each source, named in its third column{dev}.",
        joined_line(summary),
    ]


def source_text(source: dict) -> str:
    """One source of a corpus manifest: its counts, licence and attribution."""
    held = source.get("held_out")
    held_out = (f" from its own `{source['dev_from']}`" if "dev_from" in source else
                f" ({held['units']:,} of its {held['of']:,} {held['by']}s)" if held else "")
    return (
        f"`{source['name']}` (`{source['file']}`): {source['read']:,} pairs read, "
        f"{sum(source['dropped'].values()):,} dropped, {source['dev']:,} held out{held_out}; "
        f"{source['train']:,} kept for training, written with weight {source['weight']:g} "
        f"({source['train_written']:,} pairs). Licence: {source['licence']}. "
        f"Attribution: \"{source['attribution']}\"."
    )


def chain_corpora_data(stages: Sequence[Stage], manifest: dict | None) -> list[str]:
    """The Data lines on the corpora the chain's runs trained on besides `manifest` (the
    exported run's): the pairs per source of those with the same sources, licences and
    attributions; every source of the others."""
    corpora: dict[str, tuple[dict, list[str]]] = {}
    for stage in stages:
        if stage.manifest:
            corpora.setdefault(stage.manifest["name"], (stage.manifest, []))[1].append(stage.name)
    main = corpora.get(manifest["name"]) if manifest else None
    others = [corpus for name, corpus in corpora.items() if corpus is not main]
    same = [corpus for corpus in others if main and _sources(corpus[0]) == _sources(main[0])]
    lines = []
    if same:
        lines.append(
            f"- The runs of the chain trained on {len(same) + 1} corpora of these "
            f"{len(main[0]['sources'])} sources, licences and attributions, with other weights; "
            "the training pairs each wrote per source (weight):")
        lines += [f"    - {_weights_text(corpus, runs)}" for corpus, runs in [main, *same]]
    for corpus, runs in (corpus for corpus in others if corpus not in same):
        lines += [
            f"- The `{corpus['name']}` corpus (`training/corpora/{corpus['name']}.yaml`, "
            f"{_runs_text(runs)}), {corpus['train_pairs']:,} training pairs from "
            f"{len(corpus['sources'])} sources:",
            *(f"    - {source_text(source)}" for source in corpus["sources"])]
    return lines


def _sources(manifest: dict) -> list[tuple]:
    """What a source's licence and attribution hang on: its name, file, licence, attribution."""
    return [(source["name"], source["file"], source["licence"], source["attribution"])
            for source in manifest["sources"]]


def _runs_text(runs: Sequence[str]) -> str:
    return ("run " if len(runs) == 1 else "runs ") + ", ".join(f"`{run}`" for run in runs)


def _weights_text(manifest: dict, runs: Sequence[str]) -> str:
    """`` `en-fr-broad` (runs ...): 390,801 pairs: `anki` 161,650 (1), ...``"""
    return (f"`{manifest['name']}` (`training/corpora/{manifest['name']}.yaml`, "
            f"{_runs_text(runs)}): {manifest['train_pairs']:,} pairs: "
            + ", ".join(f"`{source['name']}` {source['train_written']:,} ({source['weight']:g})"
                        for source in manifest["sources"]) + ".")


# Domains the project measures or is asked about that no corpus source so far covers.
_UNSEEN_DOMAINS = ("news", "medical", "literature")


def limits_line(manifest: dict | None, others: Sequence[dict] = ()) -> str:
    """The line on what the model was trained on, and what it was not.

    Args:
        others: the manifests of the corpora of the chain's earlier runs.
    """
    if not manifest:
        return ("- Trained on short, everyday sentences (about 6 words on average); long or "
                "domain-specific text (news, literature, technical) translates noticeably worse.")
    names = list(dict.fromkeys(source["name"] for corpus in (manifest, *others)
                               for source in corpus["sources"]))
    unseen = [d for d in _UNSEEN_DOMAINS if not any(d in name for name in names)]
    return (f"- Trained on the domains of its {len(names)} sources only ("
            + ", ".join(f"`{name}`" for name in names) + "; see Data)"
            + (f"; other domains ({', '.join(unseen)}) were not in training and may "
               "translate noticeably worse." if unseen else "."))
