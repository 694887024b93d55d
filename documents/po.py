"""gettext PO and POT files translated: the messages that need it filled, the rest kept as written.

    document = read_po(Path("messages.pot").read_bytes(), "messages.pot")
    translated = translate_po(document, lambda s: translator.translate(s, options))
    Path("fr.po").write_bytes(translated.data)             # nmt_cli/files.py writes atomically

What is translated:
- Every message (not the header, not an obsolete `#~` entry) without a
  translation; with `overwrite`, every message. A plural message's msgid gives
  msgstr[0] and its msgid_plural the other forms (French has two:
  `nplurals=2; plural=(n > 1);`); without `overwrite` only empty forms are filled.
- Each text goes the way of `nmt translate --format text`: split into
  sentences (every line break ends one), placeholders (`%s`, `{0}`) taken out
  and put back (`documents.markup.plan_document`), joined with the text's
  own spacing. The distinct sentences of the whole file are translated
  together, sorted by length, `batch_size` a call.
- In a file of reStructuredText documentation (a message's reference names a
  `.rst` file, as Sphinx writes them: `#: ../../library/os.rst:42`), its
  inline markup is carried across too: roles, literals, references
  (`` :func:`len` ``, ``` ``code`` ```, `` `text <url>`_ ``, `|version|`, a
  line's final `::`; kind `rest` of `documents.placeholders`).
  `PoOptions.rest` turns this on or off whatever the references say.
- A message written is marked `fuzzy` (msgfmt leaves it out of the .mo until
  a translator clears the flag) unless `fuzzy=False`, which also clears a
  `fuzzy` flag and `#|` previous strings the message had.
- The header gets `Language: fr` where it has none (a file for another
  language, `Language: de`, is refused); French `Plural-Forms` and charset
  UTF-8 where missing or still a template's (`nplurals=INTEGER`,
  `charset=CHARSET`); `Last-Translator` and `Language-Team` as `msginit
  --no-translator` writes them where missing or a template's (`FULL NAME`);
  `MIME-Version` and `Content-Transfer-Encoding` where missing; a new
  `PO-Revision-Date` where missing, a template's, or messages were written.
  Each field changed or added is one line; the others stay as written.

Everything else is kept byte for byte: comments, references, contexts, flags,
msgids, obsolete entries, line ends, and the wrapping of every line not
written (polib would rewrap whole files). A written msgstr is wrapped at 79
columns after spaces, as GNU msgcat does for prose. The result is read back
and compared with what was meant before it is given.

Nothing here imports TensorFlow: `translate` is any sentences -> results with
`.text` and `.word_alignment` (`Translator.translate`, a client's `translate`).
"""

from __future__ import annotations

import codecs
import dataclasses
import datetime
import re
from collections.abc import Callable, Sequence

import polib

from documents.file_batches import FileOptions, Progress, translate_plans
from documents.markup import plan_document
from documents.placeholders import KINDS, REST_KINDS
from documents.sentences import TARGET_LANGUAGE, Translate

PLURAL_FORMS = "nplurals=2; plural=(n > 1);"
WRAP_WIDTH = 79  # GNU gettext's default page width
FUZZY = "fuzzy"
# Header values of a fresh template (xgettext) or of `msginit --no-translator`.
_TEMPLATE_VALUES = {
    "PO-Revision-Date": "YEAR-MO-DA", "Last-Translator": "FULL NAME",
    "Language-Team": "LANGUAGE <LL@li.org>", "Plural-Forms": "INTEGER",
}
_NO_TRANSLATOR = {"Last-Translator": "Automatically generated", "Language-Team": "none"}
# The order GNU gettext writes the header fields in; a missing field goes after the
# nearest one before it that the header has.
_FIELD_ORDER = ("Project-Id-Version", "Report-Msgid-Bugs-To", "POT-Creation-Date",
                "PO-Revision-Date", "Last-Translator", "Language-Team", "Language",
                "MIME-Version", "Content-Type", "Content-Transfer-Encoding", "Plural-Forms")
_CHARSET = re.compile(rb'Content-Type:[^"\n]*?charset=([\w.:-]+)')
_POLIB_ERROR = re.compile(r"\(line (\d+)\)(?::\s*(.*))?")
_WORD = re.compile(r"\S*\s*")
_REST_SOURCE = re.compile(r"\.(?:rst|rest)$", re.IGNORECASE)  # reStructuredText files


class PoFileError(ValueError):
    """A file that is not a PO file, or that cannot take a French translation; the
    message names the file (and line) and what to change."""


@dataclasses.dataclass(frozen=True)
class PoOptions(FileOptions):
    """How a PO file is translated (placeholders, batch_size: `FileOptions`).

    Attributes:
        overwrite: translate messages that have a translation too (default: keep it).
        fuzzy: mark each message written `fuzzy`, for review.
        rest: carry reStructuredText's inline markup across, with the other
            placeholders (`` :func:`len` ``, ``` ``code`` ```); None: when the
            file's references name `.rst` files (`is_restructuredtext`).
    """

    overwrite: bool = False
    fuzzy: bool = True
    rest: bool | None = None


@dataclasses.dataclass(frozen=True)
class PoDocument:
    """A PO file as read: its lines as written and polib's reading of them.

    Attributes:
        name: for messages (the path).
        encoding: the header's charset (UTF-8 where it names none).
        lines: the file's lines, line ends included.
        catalog: polib's parse (header in `metadata`, entries in file order).
        starts: per entry of `catalog`, the index of its first line.
        header: `(start, end)` lines of the header entry; None if the file has none.
    """

    name: str
    encoding: str
    lines: tuple[str, ...]
    catalog: polib.POFile
    starts: tuple[int, ...]
    header: tuple[int, int] | None

    @property
    def newline(self) -> str:
        first = self.lines[0] if self.lines else "\n"
        return "\r\n" if first.endswith("\r\n") else "\n"


@dataclasses.dataclass(frozen=True)
class PoReport:
    """What a translation did.

    Attributes:
        messages: messages of the file (header and obsolete entries aside).
        written: messages given a machine translation (all or some of their forms).
        kept: messages whose translation was kept.
        obsolete: obsolete entries, left as they are.
        texts: distinct texts translated (msgid and msgid_plural).
        sentences: distinct sentences the model read.
    """

    messages: int
    written: int
    kept: int
    obsolete: int
    texts: int
    sentences: int


@dataclasses.dataclass(frozen=True)
class PoTranslation:
    """The translated file (`data`, in the file's encoding) and what was done."""

    data: bytes
    report: PoReport


@dataclasses.dataclass(frozen=True)
class _Change:
    """A message's new translation: `msgstr` or plural forms, and flags."""

    msgstr: str | None
    plural: dict[int, str] | None
    flags: tuple[str, ...]
    clear_previous: bool


def read_po(data: bytes, name: str = "<PO file>") -> PoDocument:
    """Reads a PO or POT file.

    Args:
        data: the file's bytes.
        name: the file's name, for error messages.

    Raises:
        PoFileError: not text in the header's charset, not PO syntax (the
            message gives the line), or no message at all.
    """
    found = _CHARSET.search(data)
    encoding = _known_encoding(found.group(1).decode("ascii") if found else "UTF-8")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        raise PoFileError(f"{name} is not {encoding} text (byte {error.start}): is it a PO or "
                          "POT file?") from None
    lines = tuple(text.splitlines(keepends=True))
    catalog = _parse(text, name)
    if not len(catalog) and not any(line.lstrip().startswith("msgid") for line in lines):
        raise PoFileError(f"{name} has no PO message (no msgid): is it a PO or POT file?")
    starts = tuple(max(entry.linenum - 1, 0) for entry in catalog)
    end = starts[0] if starts else len(lines)
    has_header = any(line.lstrip().startswith("msgid") for line in lines[:end])
    return PoDocument(name, encoding, lines, catalog, starts, (0, end) if has_header else None)


def _known_encoding(charset: str) -> str:
    """`charset` if Python knows it, else UTF-8 (a template's `CHARSET`)."""
    try:
        codecs.lookup(charset)
    except LookupError:
        return "UTF-8"
    return charset


def _parse(text: str, name: str) -> polib.POFile:
    # Lines split by polib as by `read_po` (str.splitlines); a text without a line break
    # gets one, so that polib cannot take it for a path.
    try:
        return polib.pofile(text if "\n" in text else text + "\n", wrapwidth=WRAP_WIDTH)
    except OSError as error:
        found = _POLIB_ERROR.search(str(error))
        where = f"{name}:{found.group(1)}" if found else name
        detail = (found and found.group(2)) or "not a comment, keyword or quoted string"
        raise PoFileError(f"{where}: not PO syntax ({detail}): is it a PO or POT file?") from None


def translate_po(document: PoDocument, translate: Translate,
                 options: PoOptions = PoOptions(), *, now: datetime.datetime | None = None,
                 progress: Progress | None = None) -> PoTranslation:
    """Fills the messages that need a translation (see the module docstring).

    Args:
        document: from `read_po`.
        translate: sentences -> one result per sentence (`.text`, `.word_alignment`).
        options: overwrite, fuzzy, placeholders, batch size.
        now: the time written as PO-Revision-Date (default: now, local time).
        progress: called with `(sentences done, sentences)` after each call of `translate`.

    Returns:
        The file's new bytes and a `PoReport`.

    Raises:
        PoFileError: the header names another language than French, Plural-Forms has
            no `nplurals`, or a translation is not writable in the file's charset.
    """
    fields = _header_fields(document)
    language = fields.get("Language", "").strip()
    if language and not re.match(rf"(?:{TARGET_LANGUAGE}(?:[_@-]|$)|french$)", language, re.I):
        raise PoFileError(f"{document.name}'s header says Language: {language}; this model "
                          f"translates into French: give a French PO file or a template (POT)")
    plural_forms = fields.get("Plural-Forms", "")
    if not plural_forms or _TEMPLATE_VALUES["Plural-Forms"] in plural_forms:
        plural_forms = PLURAL_FORMS
    todo = _to_translate(document, options.overwrite, lambda: _nplurals(plural_forms, document))
    texts = list(dict.fromkeys(text for forms in todo.values() for text in forms.values()))
    rest = is_restructuredtext(document) if options.rest is None else options.rest
    translated, sentences = _translate_texts(texts, translate, options, progress,
                                             REST_KINDS if rest else KINDS)
    changes = {index: _change(document.catalog[index], forms, translated, options.fuzzy)
               for index, forms in todo.items()}
    header = _header_edits(fields, plural_forms, document.encoding, bool(changes),
                           (now or datetime.datetime.now()).astimezone())
    lines = _spliced(document, changes, header)
    _check(document, lines, changes, header)
    text = "".join(lines)
    try:
        data = text.encode(document.encoding)
    except UnicodeEncodeError as error:
        raise PoFileError(f"{document.name}: a translation has {text[error.start]!r}, which "
                          f"{document.encoding} cannot write: convert the file to UTF-8 first "
                          "(msgconv --to-code=UTF-8)") from None
    messages = [i for i, e in enumerate(document.catalog) if not e.obsolete and e.msgid]
    kept = sum(i not in changes and _has_translation(document.catalog[i]) for i in messages)
    obsolete = sum(e.obsolete for e in document.catalog)
    return PoTranslation(data, PoReport(messages=len(messages), written=len(changes), kept=kept,
                                        obsolete=obsolete, texts=len(texts), sentences=sentences))


def is_restructuredtext(document: PoDocument) -> bool:
    """Whether the file's messages are reStructuredText: a reference of one names a `.rst`
    (or `.rest`) file, as Sphinx's gettext builder writes them (`#: ../../library/os.rst:42`)."""
    return any(_REST_SOURCE.search(path) for entry in document.catalog if not entry.obsolete
               for path, _ in entry.occurrences)


def _has_translation(entry: polib.POEntry) -> bool:
    forms = entry.msgstr_plural.values() if entry.msgid_plural else [entry.msgstr]
    return any(forms)


def _nplurals(plural_forms: str, document: PoDocument) -> int:
    found = re.search(r"nplurals\s*=\s*(\d+)", plural_forms)
    if not found or int(found.group(1)) < 1:
        raise PoFileError(f"{document.name}: the header's Plural-Forms ({plural_forms!r}) has "
                          f"no nplurals: set it to {PLURAL_FORMS!r}, or remove it")
    return int(found.group(1))


def _to_translate(document: PoDocument, overwrite: bool,
                  nplurals: Callable[[], int]) -> dict[int, dict[int, str]]:
    """`{entry index: {form: English text}}` of the messages to write (form 0 for msgstr)."""
    todo = {}
    for index, entry in enumerate(document.catalog):
        if entry.obsolete or not entry.msgid:
            continue
        if entry.msgid_plural:
            given = entry.msgstr_plural
            forms = {k: entry.msgid if k == 0 else entry.msgid_plural
                     for k in range(nplurals()) if overwrite or not given.get(k)}
        else:
            forms = {0: entry.msgid} if overwrite or not entry.msgstr else {}
        if forms:
            todo[index] = forms
    return todo


def _translate_texts(texts: list[str], translate: Translate, options: PoOptions,
                     progress: Progress | None, kinds) -> tuple[dict[str, str], int]:
    """Each (distinct) text's translation as `nmt translate --format text` gives it (with
    the placeholders of `kinds`), and the number of distinct sentences read."""
    plans = {text: plan_document(text, "text", options.placeholders, kinds) for text in texts}
    joined, sentences = translate_plans(plans, translate, options.batch_size, progress)
    return {text: document.text for text, document in joined.items()}, sentences


def _change(entry: polib.POEntry, forms: dict[int, str], translated: dict[str, str],
            fuzzy: bool) -> _Change:
    flags = [flag for flag in entry.flags if flag != FUZZY]
    flags = (FUZZY, *flags) if fuzzy else tuple(flags)
    clear_previous = not fuzzy
    if entry.msgid_plural:
        plural = dict(entry.msgstr_plural)
        plural.update({k: translated[text] for k, text in forms.items()})
        return _Change(None, dict(sorted(plural.items())), flags, clear_previous)
    return _Change(translated[forms[0]], None, flags, clear_previous)


# ---------------------------------------------------------------------------------------------
# The header.


def _header_fields(document: PoDocument) -> dict[str, str]:
    """The header's fields as written, in order (empty without a header)."""
    if document.header is None:
        return {}
    return _fields(_decoded(document.lines[slice(*_msgstr_lines(document, *document.header))]))


def _fields(msgstr: str) -> dict[str, str]:
    fields = {}
    for line in msgstr.splitlines():
        key, colon, value = line.partition(":")
        if colon:
            fields[key.strip()] = value.strip()
    return fields


def _header_edits(fields: dict[str, str], plural_forms: str, encoding: str, written: bool,
                  now: datetime.datetime) -> dict[str, str]:
    """The header fields to set: `{field: value}`."""
    edits = {}
    if not fields.get("Language", "").strip():
        edits["Language"] = TARGET_LANGUAGE
    if fields.get("Plural-Forms") != plural_forms:
        edits["Plural-Forms"] = plural_forms
    content_type = fields.get("Content-Type", "")
    if not content_type or "charset=CHARSET" in content_type:
        edits["Content-Type"] = f"text/plain; charset={encoding}"
    for field, value in (("MIME-Version", "1.0"), ("Content-Transfer-Encoding", "8bit")):
        if field not in fields:
            edits[field] = value
    for field, value in _NO_TRANSLATOR.items():
        if _is_template(fields, field):
            edits[field] = value
    if written or _is_template(fields, "PO-Revision-Date"):
        edits["PO-Revision-Date"] = now.strftime("%Y-%m-%d %H:%M%z")
    return edits


def _is_template(fields: dict[str, str], field: str) -> bool:
    value = fields.get(field, "").strip()
    return not value or _TEMPLATE_VALUES[field] in value


def _header_lines(document: PoDocument, edits: dict[str, str]) -> list[str]:
    """The header entry's lines with `edits` made: a field's lines replaced by one, or
    one line added, where every field has lines of its own (as gettext tools write it)."""
    newline = document.newline
    if document.header is None:
        fields = {field: edits[field] for field in _FIELD_ORDER if field in edits}
        return ['msgid ""' + newline, 'msgstr ""' + newline,
                *(_quoted(f"{k}: {v}\n") + newline for k, v in fields.items()), newline]
    start, end = document.header
    lines = list(document.lines[start:end])
    if not edits:
        return lines
    first, last = _msgstr_lines(document, start, end)
    body = lines[first - start + 1:last - start]
    groups, group = [], []  # each field's lines (a long one may be wrapped)
    for line in body:
        group.append(line)
        if _decoded([line]).endswith("\n"):
            groups.append(group)
            group = []
    keyword = lines[first - start]
    texts = [_decoded(group) for group in groups]
    if group or _decoded([keyword]) or not all(
            text.count("\n") == 1 and ":" in text for text in texts):
        # Written otherwise: rewritten with one field a line.
        keyword = 'msgstr ""' + newline
        texts = [f"{k}: {v}\n" for k, v in _fields(_decoded(lines[first - start:last - start])
                                                   ).items()]
        groups = [[_quoted(text) + newline] for text in texts]
    keys = [text.partition(":")[0].strip() for text in texts]
    for field, value in edits.items():
        line = [_quoted(f"{field}: {value}\n") + newline]
        if field in keys:
            groups[keys.index(field)] = line
        else:
            at = _insertion_point(keys, field)
            groups.insert(at, line)
            keys.insert(at, field)
    return [*lines[:first - start], keyword, *(line for g in groups for line in g),
            *lines[last - start:]]


def _insertion_point(keys: list[str], field: str) -> int:
    """Where a missing `field` goes among the header's `keys` (GNU's order)."""
    before = _FIELD_ORDER[:_FIELD_ORDER.index(field)]
    present = [i for i, key in enumerate(keys) if key in before]
    return present[-1] + 1 if present else 0


# ---------------------------------------------------------------------------------------------
# Lines: each written message's flags and msgstr replaced, every other line as it was.


def _msgstr_lines(document: PoDocument, start: int, end: int) -> tuple[int, int]:
    """`(first, end)`: the msgstr lines (keyword and continuations) among lines `start:end`."""
    lines = document.lines
    first = next((i for i in range(start, end) if lines[i].lstrip().startswith("msgstr")), None)
    if first is None:
        raise PoFileError(f"{document.name}:{start + 1}: an entry without msgstr: is it a PO "
                          "or POT file?")
    last = first + 1
    while last < end and lines[last].lstrip().startswith(('"', "msgstr[")):
        last += 1
    return first, last


def _decoded(lines: Sequence[str]) -> str:
    """The string of quoted lines (`msgstr "a"`, `"b"` -> `ab`)."""
    out = []
    for line in lines:
        body = line.strip()
        quote = body.find('"')
        if quote >= 0 and body.endswith('"') and len(body) > quote + 1:
            out.append(polib.unescape(body[quote + 1:-1]))
    return "".join(out)


def _quoted(text: str) -> str:
    return f'"{polib.escape(text)}"'


def _spliced(document: PoDocument, changes: dict[int, _Change],
             header: dict[str, str]) -> list[str]:
    """The file's lines with the header edited and each change made."""
    lines = document.lines
    bounds = (*document.starts, len(lines))
    out, cursor = [], 0
    if document.header is not None:
        out, cursor = _header_lines(document, header), document.header[1]
    for index in sorted(changes):
        start, end = bounds[index], bounds[index + 1]
        out += lines[cursor:start]
        out += _entry_lines(document, start, end, changes[index])
        cursor = end
    out += lines[cursor:]
    if document.header is None and header:
        # After the comments on top (the file's own, for polib), before the first entry.
        at = next((i for i, line in enumerate(out)
                   if line.strip() and not re.match(r"#(?:\s|#|$)", line.strip())), len(out))
        out[at:at] = _header_lines(document, header)
    return out


def _entry_lines(document: PoDocument, start: int, end: int, change: _Change) -> list[str]:
    newline = document.newline
    first, last = _msgstr_lines(document, start, end)
    flags = f"#, {', '.join(change.flags)}{newline}" if change.flags else None
    head, placed = [], False
    for line in document.lines[start:first]:
        body = line.strip()
        if body.startswith("#,"):
            if not placed and flags:
                head.append(flags)
            placed = True
            continue
        if change.clear_previous and body.startswith("#|"):
            continue
        if not placed and flags and body.startswith(("#|", "msgctxt", "msgid")):
            head.append(flags)
            placed = True
        head.append(line)
    if change.plural is None:
        written = _field_lines("msgstr", change.msgstr)
    else:
        written = [line for k, text in change.plural.items()
                   for line in _field_lines(f"msgstr[{k}]", text)]
    return head + [line + newline for line in written] + list(document.lines[last:end])


def _field_lines(keyword: str, value: str, width: int = WRAP_WIDTH) -> list[str]:
    """`keyword "value"` as GNU gettext writes it: on one line if it fits and has no
    inner line break, else `keyword ""` and the value a line per line break, each
    wrapped after spaces to `width` columns."""
    escaped = polib.escape(value)
    single = f'{keyword} "{escaped}"'
    if "\n" not in value[:-1] and len(single) <= width:
        return [single]
    lines = [f'{keyword} ""']
    for part in re.findall(r".*?\\n|.+$", escaped):
        line = ""
        for word in _WORD.findall(part):
            if line and len(line) + len(word) > width - 2:
                lines.append(f'"{line}"')
                line = ""
            line += word
        if line:
            lines.append(f'"{line}"')
    return lines


# ---------------------------------------------------------------------------------------------
# The check: the lines written read back as meant.


def _fingerprint(entry: polib.POEntry) -> tuple:
    return (entry.obsolete, entry.msgctxt, entry.msgid, entry.msgid_plural, entry.msgstr,
            tuple(sorted(entry.msgstr_plural.items())), tuple(entry.flags), entry.comment,
            entry.tcomment, tuple(entry.occurrences), entry.previous_msgctxt,
            entry.previous_msgid, entry.previous_msgid_plural)


def _meant(entry: polib.POEntry, change: _Change | None) -> tuple:
    if change is None:
        return _fingerprint(entry)
    meant = polib.POEntry(**{**vars(entry), "flags": list(change.flags)})
    if change.plural is None:
        meant.msgstr = change.msgstr
    else:
        meant.msgstr_plural = change.plural
    if change.clear_previous:
        meant.previous_msgctxt = meant.previous_msgid = meant.previous_msgid_plural = None
    return _fingerprint(meant)


def _check(document: PoDocument, lines: list[str], changes: dict[int, _Change],
           header: dict[str, str]) -> None:
    """Raises PoFileError where `lines` do not read back as the file with `changes` and the
    header's `header` edits."""
    written = _parse("".join(lines), document.name)
    meant = [_meant(entry, changes.get(i)) for i, entry in enumerate(document.catalog)]
    got = [_fingerprint(entry) for entry in written]
    if got == meant and written.metadata == {**document.catalog.metadata, **header}:
        return
    index = next((i for i, (a, b) in enumerate(zip(got, meant, strict=False)) if a != b),
                 min(len(got), len(meant)))
    where = (f"the entry at line {document.starts[index] + 1}" if index < len(document.starts)
             else "the header" if got == meant else "the end of the file")
    raise PoFileError(f"{document.name}: {where} would not read back as meant, so nothing was "
                      "written; please report this with the file")
