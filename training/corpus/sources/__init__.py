"""The public sources of the broad corpus (`SOURCES`: repository, pinned commits,
licence), and their pairing, one module per format: the repository archives
(`archive`), the Justice Canada law XML (`laws`), gettext PO files (`po`).
`training.corpus.fetch` downloads the archives and writes the files.

This module imports nothing beyond the standard library: `nmt corpus fetch --help`
reads it in the bare (client) install.
"""

from __future__ import annotations

import dataclasses
import re

CODELOAD_URL = "https://codeload.github.com"


@dataclasses.dataclass(frozen=True)
class ArchiveRef:
    """One archive of a source.

    Attributes:
        label: "" when the source has one archive; else what tells them apart
            (the documentation's branch, which also starts each origin).
        ref: what to download: a commit (pinned) or a branch (the manifest then
            records the commit it held).
    """

    label: str
    ref: str


@dataclasses.dataclass(frozen=True)
class PublicSource:
    """A source of the broad corpus and where it comes from.

    Attributes:
        name: the recipe's name for it (`sources[].name` of en-fr-broad.yaml).
        repository: `owner/name` on GitHub.
        archives: what to download, in the order their pairs are written.
        output: the file written (the name `../shared/data/more-enfr/` uses).
        licence, attribution: copied into the manifest.
        max_bytes: the largest archive accepted (`--max-bytes` overrides it).
    """

    name: str
    repository: str
    archives: tuple[ArchiveRef, ...]
    output: str
    licence: str
    attribution: str
    max_bytes: int

    def url(self, ref: str, base_url: str = CODELOAD_URL) -> str:
        return f"{base_url.rstrip('/')}/{self.repository}/tar.gz/{ref}"

    def archive_name(self, ref: str) -> str:
        return f"{self.repository.partition('/')[2]}-{re.sub(r'[^A-Za-z0-9._-]', '_', ref)}.tar.gz"

    def labels(self) -> tuple[str, ...]:
        return tuple(archive.label for archive in self.archives)


# The commits of ../shared/data/README.md. The laws' commit is known by its first 12
# digits only (codeload resolves it like git); the documentation's three branches by
# name (the README names one commit, 5881a0f86c35, for three branches: pin each
# with --ref BRANCH=COMMIT).
SOURCES: dict[str, PublicSource] = {
    "laws": PublicSource(
        name="laws", repository="justicecanada/laws-lois-xml",
        archives=(ArchiveRef("", "d6853c4af2ae"),), output="justice-canada-laws.tsv.gz",
        licence="Open Government Licence – Canada",
        attribution="Contains information licensed under the Open Government Licence – Canada",
        max_bytes=4 * 2**30),
    "docs": PublicSource(
        name="docs", repository="python/python-docs-fr",
        archives=(ArchiveRef("3.11", "3.11"), ArchiveRef("3.12", "3.12"),
                  ArchiveRef("3.13", "3.13")),
        output="python-docs.tsv.gz",
        licence="CC0 (translations); PSF licence (the English Python documentation)",
        attribution="French translation of the Python documentation (python/python-docs-fr, CC0)",
        max_bytes=2**30),
    "ui": PublicSource(
        name="ui", repository="godotengine/godot-editor-l10n",
        archives=(ArchiveRef("", "da7b2eb4c053482af6fcccb26707d8c5d14705a4"),),
        output="godot-editor.tsv.gz", licence="MIT",
        attribution="Godot editor translations (godotengine/godot-editor-l10n, MIT)",
        max_bytes=2 * 2**30),
}
