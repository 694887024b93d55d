"""Named glossaries (`nmt serve --glossaries DIR`), and the glossary each request asks for.

The directory holds glossary files, `*.tsv` or `*.csv` (the format of
`documents.glossary`); each is a glossary named after its file without the
extension (`medical.tsv` -> `medical`), which a request chooses with
`Glossary.glossary_id` and `ListGlossaries` lists. `refresh()` (at start,
then at every poll of the server) reads the files that are new or changed:

- a file with a bad row is refused whole: the error, with its line number,
  is logged once (until the file changes again) and the version loaded
  before, if any, stays in use;
- a file that was removed is unloaded;
- two files with one name (`medical.tsv`, `medical.csv`) are both refused;
- hidden files, subdirectories and other extensions are ignored.

`resolve` turns a request's glossary (`serving.validation.GlossaryRequest`)
into one `Glossary`: its inline entries, the named glossary, or both (an
inline entry replacing the named one's for the same term). It runs in a
worker thread: checking and indexing inline entries costs about 50 µs each
(inline glossaries repeated from request to request are kept, the last
`INLINE_CACHE_SIZE`), and a request that combines a named glossary with
inline entries indexes the named one's entries again (about 6 µs each).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import json
import logging
import os
import threading
import time
from pathlib import Path

from documents.glossary import FILE_FORMATS, Glossary, GlossaryError
from serving.errors import InvalidArgument, NotFound
from serving.validation import GlossaryRequest

log = logging.getLogger("nmt.serving.glossaries")

SUFFIXES = tuple(f".{format}" for format in FILE_FORMATS)  # .tsv, .csv
INLINE_CACHE_SIZE = 32  # inline glossaries kept, for clients that send the same one each time


@dataclasses.dataclass(frozen=True)
class NamedGlossary:
    """A glossary of the server's directory.

    Attributes:
        name: its name (the file name without the extension).
        file: the file name, in the directory.
        glossary: its entries, case-insensitive (`exact_case` variants are made
            on request).
        loaded_at: when this version was loaded (seconds since the epoch).
        stamp: the file's `(mtime_ns, size)` when it was read.
    """

    name: str
    file: str
    glossary: Glossary
    loaded_at: float
    stamp: tuple[int, int]

    @property
    def loaded_at_rfc3339(self) -> str:
        """`loaded_at` as RFC 3339 in UTC, to the second: `2025-06-01T12:00:00Z`."""
        moment = datetime.datetime.fromtimestamp(int(self.loaded_at), datetime.UTC)
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class GlossaryStore:
    """The glossaries of a directory, kept in step with its files.

    Args:
        directory: where the glossary files are; None: no named glossary
            (requests may still bring their own entries).
        metrics: a `serving.metrics.ServingMetrics` to count loads on, or None.
    """

    def __init__(self, directory: str | os.PathLike | None = None, metrics=None):
        self.directory = None if directory is None else Path(directory)
        self._metrics = metrics
        self._loaded: dict[str, NamedGlossary] = {}  # replaced whole, never mutated
        self._failed: dict[str, object] = {}  # name -> the stamp(s) it failed with
        self._variants: dict[tuple[str, float], Glossary] = {}  # exact-case versions
        self._lock = threading.Lock()

    def glossaries(self) -> list[NamedGlossary]:
        """The glossaries in use, by name."""
        loaded = self._loaded
        return [loaded[name] for name in sorted(loaded)]

    def refresh(self) -> bool:
        """Blocking: loads new and changed files, unloads removed ones.

        Returns:
            Whether the glossaries in use changed.

        Raises:
            OSError: the directory cannot be listed (the server logs it and
                keeps the glossaries it has).
        """
        if self.directory is None:
            return False
        with self._lock:
            files = self._files()
            self._failed = {name: s for name, s in self._failed.items() if name in files}
            loaded, changed = dict(self._loaded), False
            for name in sorted(set(loaded) - set(files)):
                del loaded[name]
                changed = True
                log.info(json.dumps({"event": "glossary_unloaded", "name": name,
                                     "reason": "its file was removed"}))
            for name, paths in sorted(files.items()):
                entry = self._load(name, paths, loaded.get(name))
                if entry is not None:
                    loaded[name] = entry
                    changed = True
            self._loaded = loaded
            return changed

    def _files(self) -> dict[str, list[Path]]:
        files: dict[str, list[Path]] = {}
        for path in sorted(self.directory.iterdir()):
            if (path.suffix.lower() in SUFFIXES and not path.name.startswith(".")
                    and path.is_file()):
                files.setdefault(path.stem, []).append(path)
        return files

    def _load(self, name: str, paths: list[Path],
              current: NamedGlossary | None) -> NamedGlossary | None:
        """The new version of glossary `name`, or None to keep `current` (or nothing)."""
        stamps = tuple(_stamp(path) for path in paths)
        if len(paths) == 1 and current is not None and (current.file, current.stamp) == (
                paths[0].name, stamps[0]):
            return None  # unchanged
        if self._failed.get(name) == stamps:
            return None  # failed before, unchanged since
        if len(paths) > 1:
            error = (f"{' and '.join(p.name for p in paths)} share the name {name!r}: rename "
                     "or remove one")
        else:
            try:
                glossary = Glossary.read(paths[0])
            except (GlossaryError, OSError, ValueError) as failure:
                error = str(failure)
            else:
                self._failed.pop(name, None)
                self._count("success")
                log.info(json.dumps({"event": "glossary_loaded", "name": name,
                                     "file": paths[0].name, "entries": len(glossary),
                                     "replaces": current is not None}))
                return NamedGlossary(name, paths[0].name, glossary, time.time(), stamps[0])
        self._failed[name] = stamps
        self._count("failure")
        log.error(json.dumps({
            "event": "glossary_load_failed", "name": name, "error": error,
            "serving": ("the version loaded at " + current.loaded_at_rfc3339
                        if current is not None else "nothing under this name")},
            ensure_ascii=False))
        return None

    def _count(self, result: str) -> None:
        if self._metrics is not None:
            self._metrics.glossary_loads.labels(result=result).inc()

    def resolve(self, request: GlossaryRequest | None, where: str = "") -> Glossary | None:
        """Blocking: the glossary a request asks for, or None for none.

        Args:
            request: the request's glossary (`ParsedRequest.glossary`).
            where: what to start error messages with (a stream's request).

        Raises:
            NotFound: `glossary_id` names no glossary of this server.
            InvalidArgument: an inline entry is bad (the message numbers it).
        """
        if request is None:
            return None
        named = self._named(request.glossary_id, where) if request.glossary_id else None
        if not request.entries:
            return None if named is None else self._variant(named, request.exact_case)
        try:
            inline = _inline(request.entries, request.exact_case)
        except GlossaryError as error:
            raise InvalidArgument(f"{where}glossary: {error}") from None
        return inline if named is None else named.glossary.merged(inline, request.exact_case)

    def _named(self, name: str, where: str) -> NamedGlossary:
        loaded = self._loaded
        if name in loaded:
            return loaded[name]
        if loaded:
            has = f"it has {', '.join(repr(n) for n in sorted(loaded))}"
        else:
            has = ("it has none" if self.directory is not None else
                   "it serves none (start it with --glossaries DIR)")
        raise NotFound(f"{where}glossary_id {name[:128]!r} is not a glossary of this server: "
                       f"{has} (ListGlossaries, GET /v1/glossaries); or send the entries "
                       "themselves in glossary.entries")

    def _variant(self, named: NamedGlossary, exact_case: bool) -> Glossary:
        if not exact_case:
            return named.glossary
        key = (named.name, named.loaded_at)
        variant = self._variants.get(key)
        if variant is None:
            variant = dataclasses.replace(named.glossary, exact_case=True)
            self._variants = {k: v for k, v in self._variants.items()
                              if k[0] in self._loaded and self._loaded[k[0]].loaded_at == k[1]}
            self._variants[key] = variant
        return variant


@functools.lru_cache(maxsize=INLINE_CACHE_SIZE)
def _inline(entries: tuple[tuple[str, str], ...], exact_case: bool) -> Glossary:
    return Glossary.from_entries(entries, exact_case=exact_case)


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size
