"""English–French pairs from the consolidated federal laws of Canada (justicecanada/laws-lois-xml).

The repository holds each Act, Regulation and annual statute twice, as XML
in English and in French, with the same structure:

    eng/acts/A-1.3.xml                      fra/lois/A-1.3.xml
    eng/regulations/SOR-2002-227.xml        fra/reglements/DORS-2002-227.xml
    eng/regulations/SI-2000-100.xml         fra/reglements/TR-2000-100.xml
    eng/regulations/C.R.C.,_c._10.xml       fra/reglements/C.R.C.,_ch._10.xml
    annual-statutes-lois-annuelles/en/2001/2001-c10_e.xml
                                            annual-statutes-lois-annuelles/fr/2001/2001-c10_f.xml

A pair is one text unit found at the same place in both files: a title
(`LongTitle`, `ShortTitle`, a heading's `TitleText`), a `MarginalNote`, or
a provision's `Text`. The place is the path of elements from the root, each
named by what both languages share:

- a numbered provision (`Section`, `Subsection`, `Paragraph`, ...) by its
  label, brackets and final dot removed: English `(a)` and French `a)` are
  both `a`, `1.` is `1`;
- a `Definition` by the English terms it defines: both versions name them
  (`<DefinedTermEn>`), but list definitions in their own alphabetical order,
  so the order cannot pair them;
- any other element by its rank among its siblings of the same name
  (headings, schedules, whose labels are words of each language).

A unit found in one version only (a provision split differently) gives no
pair; counts of both are kept. History notes, footnotes, tables, running
heads and reader notes are left out. Files of 4 MiB or more (the Criminal
Code, the Income Tax Act, ...) are skipped, as in `../shared/data`.
"""

from __future__ import annotations

import collections
import html
import logging
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

from lxml import etree

from training.corpus.filters import collapse_whitespace
from training.corpus.sources.archive import iter_files

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 4 * 2**20
TEXT_TAGS = frozenset({"LongTitle", "ShortTitle", "TitleText", "MarginalNote", "Text"})
# Numbered provisions: their labels are numbers and letters in both languages.
LABELLED_TAGS = frozenset({"Section", "Subsection", "Paragraph", "Subparagraph", "Clause",
                           "Subclause", "Subsubclause", "Item"})
SKIPPED_TAGS = frozenset({"RunningHead", "HistoricalNote", "Footnote", "FootnoteRef",
                          "TableGroup", "ImageGroup", "FormulaGroup", "ReaderNote",
                          "RecentAmendments"})
_ANNUAL = re.compile(r"annual-statutes-lois-annuelles/en/(\d{4})/([^/]+)_e\.xml")
_LAW_FILE = re.compile(r"(?:eng/acts|eng/regulations|fra/lois|fra/reglements|"
                       r"annual-statutes-lois-annuelles/(?:en|fr)/\d{4})/[^/]+\.xml")
# English regulation names -> French ones (Statutory Orders and Regulations, Statutory
# Instruments, Consolidated Regulations of Canada).
_REGULATION_PREFIXES = (("SOR-", "DORS-"), ("SI-", "TR-"), ("C.R.C.,_c._", "C.R.C.,_ch._"))
_COMPLETE = ".complete"


def french_path(english: str) -> str | None:
    """The French file of an English one, or None for a file that is not an English law."""
    folder, _, name = english.rpartition("/")
    if folder == "eng/acts":
        return f"fra/lois/{name}"
    if folder == "eng/regulations":
        for english_prefix, french_prefix in _REGULATION_PREFIXES:
            if name.startswith(english_prefix):
                return f"fra/reglements/{french_prefix}{name[len(english_prefix):]}"
        return f"fra/reglements/{name}"
    found = _ANNUAL.fullmatch(english)
    if found:
        year, stem = found.groups()
        return f"annual-statutes-lois-annuelles/fr/{year}/{stem}_f.xml"
    return None


def extract_laws(archive: str | Path, dest: str | Path,
                 counts: collections.Counter) -> list[str]:
    """Writes the law XML files of `archive` under `dest`, keeping their paths.

    Files of `MAX_FILE_BYTES` or more are not written. Done once: a `dest` that
    a complete extraction left is reused.

    Returns:
        The paths (inside the repository) of the files skipped for their size.
    """
    dest = Path(dest)
    marker = dest / _COMPLETE
    if marker.is_file():
        skipped = [line for line in marker.read_text(encoding="utf-8").splitlines() if line]
        counts["xml_files"] += sum(1 for _ in dest.rglob("*.xml"))
        return skipped
    shutil.rmtree(dest, ignore_errors=True)
    skipped = []
    for name, member, tar in iter_files(archive):
        if not _LAW_FILE.fullmatch(name):
            continue
        if member.size >= MAX_FILE_BYTES:
            skipped.append(name)
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        with tar.extractfile(member) as source, open(target, "wb") as out:
            shutil.copyfileobj(source, out)
        counts["xml_files"] += 1
    marker.write_text("".join(f"{name}\n" for name in skipped), encoding="utf-8")
    return skipped


def law_pairs(root: str | Path, skipped: list[str],
              counts: collections.Counter) -> Iterator[tuple[str, str, str]]:
    """`(english, french, english file)` of every English law under `root` and its
    French version, file by file in path order, units in the English order.

    `counts` gets `documents` (pairs of files read), `large_files` (a side of
    `MAX_FILE_BYTES` or more), `files_without_french`, `unreadable_files`,
    `units_paired`, `units_english_only` and `units_french_only`.
    """
    root = Path(root)
    large = set(skipped)
    english_files = sorted(
        str(path.relative_to(root)) for path in root.rglob("*.xml")
        if french_path(str(path.relative_to(root))) is not None)
    english_files += sorted(name for name in large if french_path(name) is not None)
    for english in english_files:
        french = french_path(english)
        if english in large or french in large:
            counts["large_files"] += 1
            continue
        if not (root / french).is_file():
            counts["files_without_french"] += 1
            continue
        try:
            english_units = units_of((root / english).read_bytes())
            french_units = units_of((root / french).read_bytes())
        except etree.XMLSyntaxError as error:
            log.warning("%s or %s is not well-formed XML (%s): skipped", english, french, error)
            counts["unreadable_files"] += 1
            continue
        counts["documents"] += 1
        for place, text in english_units.items():
            if place in french_units:
                counts["units_paired"] += 1
                yield text, french_units[place], english
            else:
                counts["units_english_only"] += 1
        counts["units_french_only"] += sum(p not in english_units for p in french_units)


def units_of(data: bytes) -> dict[str, str]:
    """The text units of one law file: `{place: text}` in document order (see the
    module docstring); empty units are left out.

    Raises:
        lxml.etree.XMLSyntaxError: not well-formed XML.
    """
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    units: dict[str, str] = {}
    _walk(etree.fromstring(data, parser), "", units)
    return units


def _walk(element, place: str, units: dict[str, str]) -> None:
    ranks: collections.Counter = collections.Counter()
    names: collections.Counter = collections.Counter()
    for child in element:
        if not isinstance(child.tag, str):  # a comment, processing instruction or entity
            continue
        tag = etree.QName(child).localname
        if tag in SKIPPED_TAGS:
            continue
        name = f"{tag}[{_distinction(child, tag, ranks)}]"
        names[name] += 1
        if names[name] > 1:  # two siblings of one label: number the later ones
            name += f"#{names[name]}"
        if tag in TEXT_TAGS:
            text = text_of(child)
            if text:
                units[f"{place}/{name}"] = text
        else:
            _walk(child, f"{place}/{name}", units)


def _distinction(element, tag: str, ranks: collections.Counter) -> str:
    """What tells `element` from its siblings of the same name in both languages."""
    if tag == "Definition":
        terms = sorted({text_of(term).casefold() for term in element.iter("DefinedTermEn")})
        if terms:
            return "|".join(terms)
    elif tag in LABELLED_TAGS:
        label = element.find("Label")
        if label is not None and label.text:
            return normalise_label(label.text)
    ranks[tag] += 1
    return str(ranks[tag])


def normalise_label(label: str) -> str:
    """A provision's label as both languages write it: `(a)` and `a)` -> `a`,
    `1.` -> `1`, `(1.1)` -> `1.1`."""
    return re.sub(r"[\s()]", "", label).rstrip(".")


def text_of(element) -> str:
    """The text of an element and its inline children (references, emphasis,
    defined terms), entities written out, whitespace collapsed; footnotes left out."""
    parts: list[str] = []

    def visit(node) -> None:
        if node.text:
            parts.append(node.text)
        for child in node:
            if isinstance(child, etree._Entity):
                parts.append(html.unescape(child.text))
            elif isinstance(child.tag, str) and (
                    etree.QName(child).localname not in SKIPPED_TAGS):
                visit(child)
            if child.tail:
                parts.append(child.tail)

    visit(element)
    return collapse_whitespace("".join(parts))
