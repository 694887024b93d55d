"""`nmt corpus fetch`: the broad corpus's sources rebuilt from their public repositories.

    nmt corpus fetch --out ../shared/data/more-enfr --recipe training/corpora/en-fr-broad.yaml

writes the three files `nmt corpus` reads for the laws, the documentation
and the UI strings (`training/corpora/en-fr-broad.yaml`), as
`../shared/data/README.md` describes them:

- `justice-canada-laws.tsv.gz`: justicecanada/laws-lois-xml, paired
  provision by provision (`training.corpus.sources.laws`);
- `python-docs.tsv.gz`: python/python-docs-fr, branches 3.11, 3.12 and 3.13,
  one PO message a pair, origin `<branch>/<file>.po`
  (`training.corpus.sources.po`);
- `godot-editor.tsv.gz`: godotengine/godot-editor-l10n, `editor/fr.po` and
  `properties/fr.po`, origin `editor.po` and `properties.po`.

Each archive is downloaded from `codeload.github.com` into a cache (resumed,
capped, retried: `training.corpus.download`) or given with `--archive`. Then,
for every source: whitespace collapsed, empty sides and exact duplicate pairs
dropped, pairs with a side (case-folded) in an evaluation file dropped (the
same keys as `nmt corpus`: `training.corpus.build.evaluation_keys`), and the
file written gzip-compressed, whole or not at all, beside a manifest
`<name>.manifest.json`: the archives (URL, ref, the commit inside, SHA-256),
the counts of each step, licence and attribution.
"""

from __future__ import annotations

import collections
import gzip
import io
import logging
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from training.corpus.build import evaluation_keys, write_manifest
from training.corpus.download import download, sha256_of
from training.corpus.filters import collapse_whitespace, pair_key, side_key
from training.corpus.sources import CODELOAD_URL, PublicSource, laws
from training.corpus.sources.archive import check_commit
from training.corpus.sources.po import archive_po_pairs

log = logging.getLogger(__name__)

# The steps every source goes through after pairing, in this order (manifest keys).
FETCH_RULES = ("empty", "duplicate", "evaluation_overlap")
_GODOT_FILES = ("editor/fr.po", "properties/fr.po")


def default_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/nmt/corpus-sources` (`~/.cache/...` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "nmt" / "corpus-sources"


def manifest_name(output: str) -> str:
    """`justice-canada-laws.tsv.gz` -> `justice-canada-laws.manifest.json`."""
    return re.sub(r"\.tsv(\.gz)?$", "", output) + ".manifest.json"


def fetch_source(source: PublicSource, out_dir: str | Path, *,
                 cache_dir: str | Path | None = None,
                 archives: dict[str, Path] | None = None, refs: dict[str, str] | None = None,
                 exclude: Iterable[Path] = (), overwrite: bool = False,
                 max_bytes: int | None = None, base_url: str = CODELOAD_URL,
                 download_options: dict | None = None) -> dict:
    """Rebuilds one source's file in `out_dir` and returns its manifest.

    Args:
        source: one of `SOURCES`.
        out_dir: where `source.output` and its manifest go (created).
        cache_dir: where archives are downloaded (and the laws' XML extracted
            while they are read); default `default_cache_dir()`.
        archives: `{label: path}` of archives already on disk (`--archive`):
            nothing is downloaded for these.
        refs: `{label: ref}` replacing the pinned refs (`--ref`).
        exclude: evaluation files; a pair with a side in one is dropped.
        overwrite: replace an existing output file.
        max_bytes: the largest archive to download (default `source.max_bytes`).
        base_url: where archives are downloaded from (tests: a local server).
        download_options: more arguments of `training.corpus.download.download`.

    Raises:
        ValueError: the output exists (without `overwrite`), a label is not one of
            the source's, or an archive holds another commit than a pinned one.
        training.corpus.download.DownloadError: an archive could not be downloaded.
    """
    started = time.time()
    out_dir, cache_dir = Path(out_dir), Path(cache_dir or default_cache_dir())
    output = out_dir / source.output
    if output.exists() and not overwrite:
        raise ValueError(f"{output} exists; pass --overwrite to rebuild it")
    archives, refs = dict(archives or {}), dict(refs or {})
    for label in (*archives, *refs):
        if label not in source.labels():
            raise ValueError(f"{source.name} has the archives {list(source.labels())}; "
                             f"{label!r} is not one of them")
    excluded_files = list(exclude)
    excluded = evaluation_keys(excluded_files)
    paths, records = _archives(source, cache_dir, archives, refs, max_bytes, base_url,
                               download_options or {})
    pairing: collections.Counter = collections.Counter()
    steps: collections.Counter = collections.Counter()
    # The laws' XML is extracted here while it is read; kept if this fails (a rerun
    # takes it as it is), removed once the file is written.
    scratch = cache_dir / f"{source.name}-xml-{records[0]['sha256'][:12]}"
    out_dir.mkdir(parents=True, exist_ok=True)
    write_pairs(output, finish_pairs(_PAIRS[source.name](paths, scratch, pairing), excluded,
                                     steps))
    shutil.rmtree(scratch, ignore_errors=True)
    manifest = {
        "name": source.name,
        "file": source.output,
        "columns": ["english", "french", "origin"],
        "repository": f"https://github.com/{source.repository}",
        "archives": records,
        "licence": source.licence,
        "attribution": source.attribution,
        "pairing": dict(sorted(pairing.items())),
        "read": steps["read"],
        "dropped": {rule: steps[rule] for rule in FETCH_RULES},
        "written": steps["written"],
        "excluded_files": [Path(p).name for p in excluded_files],
        "excluded_sentences": len(excluded),
        "sha256": sha256_of(output),
        "seconds": round(time.time() - started, 1),
    }
    write_manifest(out_dir / manifest_name(source.output), manifest)
    return manifest


def _archives(source: PublicSource, cache_dir: Path, given: dict[str, Path],
              refs: dict[str, str], max_bytes: int | None, base_url: str,
              download_options: dict) -> tuple[dict[str, Path], list[dict]]:
    """Each archive of `source`, given or downloaded: `({label: path}, manifest records)`."""
    paths, records = {}, []
    for archive in source.archives:
        ref = refs.get(archive.label, archive.ref)
        url = source.url(ref, base_url)
        path = given.get(archive.label)
        if path is None:
            log.info("%s: downloading %s", source.name, url)
            path = download(url, cache_dir / source.archive_name(ref),
                            max_bytes=max_bytes or source.max_bytes, **download_options)
        elif not Path(path).is_file():
            raise FileNotFoundError(f"--archive {path} does not exist")
        paths[archive.label] = Path(path)
        records.append({"label": archive.label, "url": url, "ref": ref,
                        "commit": check_commit(path, ref), "file": Path(path).name,
                        "bytes": Path(path).stat().st_size, "sha256": sha256_of(path),
                        "downloaded": archive.label not in given})
    return paths, records


def finish_pairs(pairs: Iterable[tuple[str, str, str]], excluded: set[int],
                 counts: collections.Counter) -> Iterator[tuple[str, str, str]]:
    """The steps every source goes through (`FETCH_RULES`): whitespace collapsed (tabs
    and line breaks too), empty sides, exact duplicate pairs and pairs with a side in
    `excluded` (`side_key`s) dropped. `counts` gets `read`, one count per rule and
    `written`."""
    seen: set[int] = set()
    for english, french, origin in pairs:
        counts["read"] += 1
        english, french = collapse_whitespace(english), collapse_whitespace(french)
        if not english or not french:
            counts["empty"] += 1
            continue
        key = pair_key(english, french)
        if key in seen:
            counts["duplicate"] += 1
            continue
        seen.add(key)
        if side_key(english) in excluded or side_key(french) in excluded:
            counts["evaluation_overlap"] += 1
            continue
        counts["written"] += 1
        yield english, french, origin


def write_pairs(path: Path, rows: Iterable[tuple[str, ...]]) -> None:
    """Writes `English<TAB>French<TAB>origin` lines, gzip-compressed, to a temporary
    file renamed over `path` once complete. The gzip header holds no time or
    name, so the same pairs give the same bytes (compare the manifests' SHA-256)."""
    partial = path.with_name(path.name + ".part")
    try:
        with open(partial, "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as compressed, \
                    io.TextIOWrapper(compressed, encoding="utf-8", newline="\n") as text:
                for row in rows:
                    text.write("\t".join(row) + "\n")
            raw.flush()
            os.fsync(raw.fileno())
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, path)


def _law_pairs(paths: dict[str, Path], scratch: Path,
               counts: collections.Counter) -> Iterator[tuple[str, str, str]]:
    skipped = laws.extract_laws(paths[""], scratch, counts)
    counts["max_file_bytes"] = laws.MAX_FILE_BYTES
    yield from laws.law_pairs(scratch, skipped, counts)
    if not counts["documents"]:
        raise ValueError(f"{paths['']} holds no English and French law pair (eng/acts/*.xml "
                         "and fra/lois/*.xml, ...): is it an archive of "
                         "justicecanada/laws-lois-xml?")


def _documentation_pairs(paths: dict[str, Path], scratch: Path,
                         counts: collections.Counter) -> Iterator[tuple[str, str, str]]:
    for branch, path in paths.items():
        files = counts["po_files"]
        yield from archive_po_pairs(path, _documentation_file(branch), counts)
        if counts["po_files"] == files:
            raise ValueError(f"{path} holds no PO file: is it an archive of "
                             f"python/python-docs-fr (branch {branch})?")


def _documentation_file(branch: str) -> Callable[[str], str | None]:
    def origin(name: str) -> str | None:
        hidden = any(part.startswith(".") for part in name.split("/"))
        return f"{branch}/{name}" if name.endswith(".po") and not hidden else None

    return origin


def _ui_pairs(paths: dict[str, Path], scratch: Path,
              counts: collections.Counter) -> Iterator[tuple[str, str, str]]:
    def origin(name: str) -> str | None:
        return f"{name.partition('/')[0]}.po" if name in _GODOT_FILES else None

    yield from archive_po_pairs(paths[""], origin, counts)
    if counts["po_files"] < len(_GODOT_FILES):
        raise ValueError(f"{paths['']} lacks some of {list(_GODOT_FILES)}: is it an archive "
                         "of godotengine/godot-editor-l10n?")


_PAIRS: dict[str, Callable[[dict[str, Path], Path, collections.Counter],
                           Iterator[tuple[str, str, str]]]] = {
    "laws": _law_pairs, "docs": _documentation_pairs, "ui": _ui_pairs}
