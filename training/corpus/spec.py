"""A corpus recipe: its sources, their weights and held-out splits, its filters.

One YAML file (e.g. `training/corpora/en-fr-broad.yaml`), validated once when
it is read; relative paths are resolved against the file.
"""

from __future__ import annotations

import dataclasses
import glob
import re
from pathlib import Path
from typing import Any

import yaml

from nmt.types import dataclass_from_dict
from training.corpus.filters import FilterConfig

HOLD_OUT = ("document", "sentence")
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")


@dataclasses.dataclass(frozen=True)
class SourceSpec:
    """One source of pairs.

    Attributes:
        name: a short name (`laws`): the third column of the built corpus, the
            held-out file `dev-<name>.tsv` and the per-domain dev scores.
        path: `English<TAB>French[<TAB>origin]` lines, UTF-8, optionally `.gz`;
            `origin` names the document a pair comes from.
        weight: how many times each kept training pair is used: 0.4 keeps 40%
            of them (a fixed sample), 2 writes each twice.
        dev: an existing held-out file for this source (its own dev split);
            else `dev_pairs` are carved from `path`.
        dev_pairs: about how many pairs to hold out (whole documents at a time).
        hold_out: `document`: whole documents (the `origin` column, rewritten
            by `document_pattern`) go to the held-out split, so neighbours do
            not leak; `sentence`: pairs grouped by their English side (for
            sources of few, large documents, such as two UI string files).
        document_pattern: a regular expression removed from `origin` to name
            the document: `^3\\.1[0-9]/` makes a page of three documentation
            branches one document.
        licence, attribution: copied into the manifest and the model card.
    """

    name: str
    path: str
    weight: float = 1.0
    dev: str | None = None
    dev_pairs: int = 0
    hold_out: str = "document"
    document_pattern: str | None = None
    licence: str = ""
    attribution: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError("sources[].name must be lower-case letters, digits, '-' or '_'. "
                             f"Received: name={self.name!r}")
        if isinstance(self.weight, bool) or not isinstance(self.weight, (int, float)) or (
                self.weight < 0):
            raise ValueError(f"sources[{self.name}].weight must be a number >= 0. "
                             f"Received: weight={self.weight!r}")
        if isinstance(self.dev_pairs, bool) or not isinstance(self.dev_pairs, int) or (
                self.dev_pairs < 0):
            raise ValueError(f"sources[{self.name}].dev_pairs must be an integer >= 0. "
                             f"Received: dev_pairs={self.dev_pairs!r}")
        if self.dev and self.dev_pairs:
            raise ValueError(f"sources[{self.name}]: give either dev (a file) or dev_pairs "
                             "(pairs to carve from path), not both")
        if self.hold_out not in HOLD_OUT:
            raise ValueError(f"sources[{self.name}].hold_out must be one of {HOLD_OUT}. "
                             f"Received: hold_out={self.hold_out!r}")
        if self.document_pattern is not None:
            try:
                re.compile(self.document_pattern)
            except re.error as error:
                raise ValueError(f"sources[{self.name}].document_pattern is not a regular "
                                 f"expression ({error}). Received: {self.document_pattern!r}"
                                 ) from None

    def document_of(self, origin: str, english: str) -> str:
        """The unit a held-out split takes whole: a document, or an English sentence."""
        if self.hold_out == "sentence" or not origin:
            return english.casefold()
        return re.sub(self.document_pattern, "", origin) if self.document_pattern else origin


@dataclasses.dataclass(frozen=True)
class CorpusSpec:
    """The whole recipe.

    Attributes:
        name: the corpus's name (manifest, model card).
        sources: the sources, in the order they are written.
        filters: the pair rules' thresholds (`training.corpus.filters`).
        exclude: evaluation files (glob patterns): a training pair is dropped
            when either side occurs in one of them (`.tsv`: both columns;
            `.jsonl`: the `source` and `reference` fields; other files: each line).
        dev_mix_pairs: pairs of each source's held-out split that go into the
            mixed `dev.tsv` that training evaluates on (0: all).
        seed: fixes the sampling and the held-out documents.
    """

    name: str
    sources: tuple[SourceSpec, ...]
    filters: FilterConfig = FilterConfig()
    exclude: tuple[str, ...] = ()
    dev_mix_pairs: int = 500
    seed: int = 1

    def __post_init__(self) -> None:
        if not self.sources:
            raise ValueError("A corpus needs at least one entry under 'sources'")
        names = [source.name for source in self.sources]
        if len(set(names)) != len(names):
            raise ValueError(f"sources[].name must be unique. Received: {names}")

    def excluded_files(self) -> list[Path]:
        """The files `exclude` names (see `excluded_files`)."""
        return excluded_files(self.exclude)


def excluded_files(patterns: tuple[str, ...] | list[str]) -> list[Path]:
    """The evaluation files that glob `patterns` name, in order; a pattern that matches
    nothing is an error (a typo would otherwise let evaluation text into training)."""
    files = []
    for pattern in patterns:
        matches = sorted(Path(p) for p in glob.glob(pattern) if Path(p).is_file())
        if not matches:
            raise FileNotFoundError(f"exclude: {pattern!r} matches no file")
        files.extend(matches)
    return files


def load_spec(path: str | Path) -> CorpusSpec:
    """Reads a corpus recipe; paths are made absolute against its directory."""
    path = Path(path)
    raw: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: a corpus recipe is a mapping (name, sources, filters, ...)")
    base = path.parent

    def resolve(value: str) -> str:
        return str((base / value).resolve()) if not Path(value).is_absolute() else value

    sources = []
    for number, source in enumerate(raw.get("sources") or []):
        if not isinstance(source, dict) or "name" not in source or "path" not in source:
            raise ValueError(f"{path}: sources[{number}] needs at least 'name' and 'path'")
        source = {**source, "path": resolve(source["path"])}
        if source.get("dev"):
            source["dev"] = resolve(source["dev"])
        sources.append(dataclass_from_dict(SourceSpec, source, f"{path}: sources[{number}]"))
    values = {key: value for key, value in raw.items() if key not in ("sources", "filters")}
    values.setdefault("name", path.stem)
    values["exclude"] = tuple(resolve(p) for p in values.get("exclude") or ())
    filters = dataclass_from_dict(FilterConfig, raw.get("filters"), f"{path}: filters")
    return dataclass_from_dict(CorpusSpec, {**values, "sources": tuple(sources),
                                            "filters": filters}, str(path))
