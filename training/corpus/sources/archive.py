"""Reading a repository archive as GitHub serves it (`codeload.github.com/<repo>/tar.gz/<ref>`).

Such an archive is a gzip-compressed tar made by `git archive`: one top
directory (`<repo>-<ref>/`) and, in a pax global header, the commit it holds
(`comment=<40 hex digits>`). Members are read in one pass, in the archive's
order, without extracting anything the caller does not ask for.
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterator
from pathlib import Path

_COMMIT = re.compile(r"[0-9a-f]{40}")


def archive_commit(path: str | Path) -> str | None:
    """The commit `git archive` recorded in the archive, or None (an archive made
    another way)."""
    with tarfile.open(path, mode="r|gz") as archive:
        archive.next()  # the global header is read with the first member
        comment = archive.pax_headers.get("comment", "")
    return comment if _COMMIT.fullmatch(comment) else None


def check_commit(path: str | Path, ref: str) -> str | None:
    """The archive's commit, checked against `ref` when `ref` is a commit (hex).

    Raises:
        ValueError: `ref` is a commit and the archive holds another one.
    """
    commit = archive_commit(path)
    if commit and re.fullmatch(r"[0-9a-f]{7,40}", ref) and not commit.startswith(ref):
        raise ValueError(f"{path} holds commit {commit}, not {ref}: give the archive of "
                         f"{ref} (or --ref to pin another commit)")
    return commit


def iter_files(path: str | Path) -> Iterator[tuple[str, tarfile.TarInfo, tarfile.TarFile]]:
    """The archive's regular files in order: `(path inside the repository, member,
    the open archive)`; read a member with `archive.extractfile(member)` before
    asking for the next one.

    The top directory is dropped from each name; a name with `..` or an absolute
    name is skipped (never a path outside the repository).
    """
    with tarfile.open(path, mode="r|gz") as archive:
        for member in archive:
            if not member.isfile():
                continue
            _, _, name = member.name.partition("/")
            if not name or name.startswith("/") or ".." in name.split("/"):
                continue
            yield name, member, archive
