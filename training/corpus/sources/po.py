"""English–French pairs from gettext PO files: one translated message, one pair.

A message gives a pair when it is translated and not marked `fuzzy` (a
translation a tool guessed and no translator has checked); the header,
obsolete (`#~`) and untranslated messages give none. A plural message gives
its singular (`msgid` with `msgstr[0]`) and its plural (`msgid_plural` with
`msgstr[1]`, French having two forms), each when translated. Files are read
with the parser of `nmt translate-file` (`documents.po.read_po`: the
header's charset, errors naming the line).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator
from pathlib import Path

from documents.po import FUZZY, read_po
from training.corpus.sources.archive import iter_files


def po_pairs(data: bytes, name: str, origin: str,
             counts: collections.Counter) -> Iterator[tuple[str, str, str]]:
    """`(english, french, origin)` of each translated, checked message of one PO file.

    Args:
        data: the file's bytes.
        name: its name, for error messages.
        origin: the third column of its pairs.
        counts: gets `messages`, `untranslated`, `fuzzy` and `obsolete`.

    Raises:
        documents.po.PoFileError: not a PO file.
    """
    for entry in read_po(data, name).catalog:
        if not entry.msgid:  # the header
            continue
        counts["messages"] += 1
        if entry.obsolete:
            counts["obsolete"] += 1
            continue
        if FUZZY in entry.flags:
            counts["fuzzy"] += 1
            continue
        if entry.msgid_plural:
            forms = [(entry.msgid, entry.msgstr_plural.get(0, "")),
                     (entry.msgid_plural, entry.msgstr_plural.get(1, ""))]
        else:
            forms = [(entry.msgid, entry.msgstr)]
        translated = [(english, french) for english, french in forms if french]
        if not translated:
            counts["untranslated"] += 1
        for english, french in translated:
            yield english, french, origin


def archive_po_pairs(archive: str | Path, select: Callable[[str], str | None],
                     counts: collections.Counter) -> Iterator[tuple[str, str, str]]:
    """The pairs of the PO files of a repository archive, in the archive's order.

    Args:
        archive: a `.tar.gz` as GitHub serves it.
        select: a path inside the repository -> the origin its pairs get, or None
            to leave the file out.
        counts: gets `po_files` and the counts of `po_pairs`.
    """
    for name, member, tar in iter_files(archive):
        origin = select(name)
        if origin is None:
            continue
        with tar.extractfile(member) as f:
            data = f.read()
        counts["po_files"] += 1
        yield from po_pairs(data, name, origin, counts)
