"""`nmt translate-file IN OUT`: a whole file translated, its format kept (gettext PO/POT).

The format comes from IN's extension or `--format`. IN is never written: OUT
is written to a temporary file beside it, flushed to disk and renamed over
OUT, so OUT is either the old file or the whole new one. The input is read
and checked before the model loads, so a wrong file fails at once.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from nmt.constants import DEFAULT_BATCH_SIZE
from nmt.options import DEFAULT_MODEL_DIR, add_decode_options, add_precision_option

# Format -> the extensions that name it. PO: gettext catalogues and their templates.
FILE_FORMATS = {"po": (".po", ".pot")}


def add_translate_file_parser(sub) -> None:
    """Adds `translate-file` to the `nmt` command's subparsers."""
    p = sub.add_parser("translate-file",
                       help="translate a whole file, keeping its format (gettext PO/POT)")
    p.add_argument("input", metavar="IN", help="the file to translate (.po or .pot); never "
                                               "written")
    p.add_argument("output", metavar="OUT", help="the translated file to write (replaced "
                                                 "atomically if it exists)")
    p.add_argument("--format", choices=tuple(FILE_FORMATS),
                   help="the file's format (default: from IN's extension)")
    p.add_argument("--overwrite", action="store_true",
                   help="translate messages that have a translation too (default: keep them)")
    p.add_argument("--no-fuzzy", dest="fuzzy", action="store_false",
                   help="do not mark machine translations fuzzy (default: marked, so that "
                        "msgfmt leaves them out until a translator has read them)")
    p.add_argument("--placeholders", action=argparse.BooleanOptionalAction, default=True,
                   help="give placeholders (%%s, {0}, ...) back exactly, as `nmt translate` "
                        "does (default); --no-placeholders lets the model read them as text")
    p.add_argument("--model", default=str(DEFAULT_MODEL_DIR),
                   help="SavedModel base or version directory (default: models/en-fr)")
    p.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE,
                   help=f"sentences per model call (default {DEFAULT_BATCH_SIZE})")
    add_decode_options(p)
    add_precision_option(p)
    p.set_defaults(func=translate_file_command)


def file_format(path: Path, given: str | None) -> str:
    """`given`, else the format IN's extension names.

    Raises:
        ValueError: no `given` format and an extension no format has.
    """
    if given is not None:
        return given
    suffix = path.suffix.lower()
    for name, extensions in FILE_FORMATS.items():
        if suffix in extensions:
            return name
    supported = ", ".join(f"{ext} ({name})" for name, exts in FILE_FORMATS.items() for ext in exts)
    raise ValueError(f"cannot tell the format of {path} from its extension "
                     f"{suffix or '(none)'!r}: supported are {supported}; name one with "
                     f"--format {'|'.join(FILE_FORMATS)}")


def check_paths(source: Path, target: Path) -> None:
    """Raises FileNotFoundError or ValueError where IN cannot be read or OUT not written."""
    if not source.is_file():
        raise FileNotFoundError(f"no file at {source}" if not source.exists()
                                else f"{source} is not a file")
    if target.exists() and os.path.samefile(source, target):
        raise ValueError(f"OUT ({target}) is IN: write the translation to another file")
    if target.is_dir():
        raise ValueError(f"OUT ({target}) is a directory: name the file to write")
    if not target.parent.is_dir():
        raise FileNotFoundError(f"no directory {target.parent} to write {target.name} in")


def write_atomically(path: Path, data: bytes) -> None:
    """Writes `data` to a temporary file beside `path`, syncs it and renames it to `path`.

    The new file keeps the mode of the file it replaces (else the umask's default).
    """
    mode = path.stat().st_mode & 0o777 if path.exists() else _default_mode()
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp",
                                             dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)  # makes the rename itself durable
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def translate_file_command(args) -> int:
    """`nmt translate-file IN OUT`: reads and checks IN, translates, writes OUT."""
    from nmt.documents.po import PoOptions, read_po, translate_po

    source, target = Path(args.input), Path(args.output)
    file_format(source, args.format)  # the only format yet: po
    check_paths(source, target)
    options = PoOptions(overwrite=args.overwrite, fuzzy=args.fuzzy,
                        placeholders=args.placeholders, batch_size=args.batch_size)
    document = read_po(source.read_bytes(), str(source))

    from nmt.inference.translator import Translator
    from nmt.options import decode_options

    translator = Translator.load(args.model, args.precision)
    decoding = decode_options(args, translator.info.default_options)
    started = time.perf_counter()
    with _Progress() as progress:
        translated = translate_po(document, lambda s: translator.translate(s, decoding),
                                  options, progress=progress)
    write_atomically(target, translated.data)
    report = translated.report
    marked = " (fuzzy)" if args.fuzzy and report.written else ""
    print(f"{target}: {report.written} of {report.messages} messages translated{marked}, "
          f"{report.kept} translations kept, {report.obsolete} obsolete entries left as they "
          f"were; {report.sentences} sentences in {time.perf_counter() - started:.1f} s")
    return 0


class _Progress:
    """A progress bar of sentences on a terminal's stderr (tqdm), nothing elsewhere."""

    def __enter__(self):
        self._bar = None
        return self

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit="sentence", file=sys.stderr, leave=False,
                             disable=None)
        self._bar.update(done - self._bar.n)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.close()
