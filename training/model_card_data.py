"""The model card's Data and Limits: the Anki release, or the sources of an `nmt corpus`
manifest with their licences and attributions (`training.model_card` renders the card)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from training.corpus.build import MANIFEST

ATTRIBUTION = "Sentence pairs from www.manythings.org/anki and tatoeba.org (CC-BY 2.0 FR)"


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


# Domains the project measures or is asked about that no corpus source so far covers.
_UNSEEN_DOMAINS = ("news", "medical", "literature")


def limits_line(manifest: dict | None) -> str:
    """The line on what the model was trained on, and what it was not."""
    if not manifest:
        return ("- Trained on short, everyday sentences (about 6 words on average); long or "
                "domain-specific text (news, literature, technical) translates noticeably worse.")
    names = [source["name"] for source in manifest["sources"]]
    unseen = [d for d in _UNSEEN_DOMAINS if not any(d in name for name in names)]
    return (f"- Trained on the domains of its {len(names)} sources only ("
            + ", ".join(f"`{name}`" for name in names) + "; see Data)"
            + (f"; other domains ({', '.join(unseen)}) were not in training and may "
               "translate noticeably worse." if unseen else "."))
