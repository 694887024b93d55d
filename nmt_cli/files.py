"""`nmt translate-file IN OUT`: a whole file translated, its format kept.

Formats: gettext PO/POT, XLIFF 1.2/2.x, SRT and WebVTT subtitles, Word .docx, Markdown.

The format comes from IN's extension or `--format`. IN is never written: OUT
is written to a temporary file beside it, flushed to disk and renamed over
OUT, so OUT is either the old file or the whole new one. The input is read
and checked before the model loads, so a wrong file fails at once. With
`--server HOST:PORT` the server's TranslateFile RPC reads, checks and
translates it (`nmt_api.client`), and OUT and the summary line are the same.
Reading and summing up a file is `documents.file_formats`, shared with the server.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from documents.file_formats import FILE_FORMATS, FileSettings, format_of, read_file
from nmt.atomic_write import write_atomically  # (nmt_cli.keys imports it from here too)
from nmt.constants import DEFAULT_BATCH_SIZE
from nmt.options import (
    DEFAULT_MODEL_DIR,
    add_decode_options,
    add_precision_option,
    client_decode_options,
    decode_options,
    local_precision,
)
from nmt_cli.glossary_options import add_glossary_arguments, read_glossary_option, server_glossary


def add_translate_file_parser(sub) -> None:
    """Adds `translate-file` to the `nmt` command's subparsers."""
    p = sub.add_parser("translate-file",
                       help="translate a whole file, keeping its format (gettext PO/POT, "
                            "XLIFF 1.2/2.x, SRT and WebVTT subtitles, Word .docx, Markdown)")
    p.add_argument("input", metavar="IN", help="the file to translate (.po, .pot, .xlf, "
                                               ".xliff, .srt, .vtt, .docx, .md or .markdown); "
                                               "never written")
    p.add_argument("output", metavar="OUT", help="the translated file to write (replaced "
                                                 "atomically if it exists)")
    p.add_argument("--format", choices=tuple(FILE_FORMATS),
                   help="the file's format (default: from IN's extension)")
    p.add_argument("--overwrite", action="store_true",
                   help="translate messages (XLIFF: segments) that have a translation too "
                        "(default: keep them; subtitles, .docx and Markdown are translated "
                        "whole)")
    p.add_argument("--no-fuzzy", dest="fuzzy", action="store_false",
                   help="do not mark machine translations for review: PO: not fuzzy (default: "
                        "fuzzy, so that msgfmt leaves them out until a translator has read "
                        "them); XLIFF 1.2: state translated rather than "
                        "needs-review-translation (XLIFF 2 marks them translated either way)")
    p.add_argument("--cue-by-cue", dest="merge_cues", action="store_false",
                   help="subtitles: translate each cue on its own (default: a sentence that "
                        "runs over several cues is translated whole and split back over them "
                        "by the word alignment)")
    p.add_argument("--placeholders", action=argparse.BooleanOptionalAction, default=True,
                   help="give placeholders (%%s, {0}, ...) back exactly, as `nmt translate` "
                        "does (default); --no-placeholders lets the model read them as text")
    p.add_argument("--rest", action=argparse.BooleanOptionalAction, default=None,
                   help="PO: give reStructuredText's roles and literals (:func:`len`, ``code``) "
                        "back exactly too (default: when the file's references name .rst "
                        "files, as Sphinx writes them); --no-rest lets the model read them; "
                        "a server always decides from the references")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--model", default=str(DEFAULT_MODEL_DIR),
                       help="SavedModel base or version directory (default: models/en-fr)")
    where.add_argument("--server", metavar="HOST:PORT",
                       help="translate through a running `nmt serve` (its TranslateFile RPC) "
                            "instead of loading the model")
    add_glossary_arguments(p, "every sentence of the file gets its terms")
    p.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE,
                   help=f"sentences per model call (default {DEFAULT_BATCH_SIZE}; a server "
                        "sends a file's sentences in its own batches)")
    add_decode_options(p)
    add_precision_option(p)
    p.set_defaults(func=translate_file_command)


def file_format(path: Path, given: str | None) -> str:
    """`given`, else the format IN's extension names (`documents.file_formats.format_of`).

    Raises:
        ValueError: no `given` format and an extension no format has.
    """
    return format_of(str(path), given)


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


def translate_file_command(args) -> int:
    """`nmt translate-file IN OUT`: reads IN, translates it (in-process, or through
    `--server`), writes OUT."""
    source, target = Path(args.input), Path(args.output)
    format = file_format(source, args.format)
    check_paths(source, target)
    local_precision(args)  # refuses a path with --server
    if args.server and args.rest is not None:
        raise ValueError(f"--{'' if args.rest else 'no-'}rest applies to a local --model; a "
                         "server tells reStructuredText from the file's references (.rst)")
    glossary = read_glossary_option(args)
    if args.server:
        data, summary, seconds = _through_server(args, source.read_bytes(), source.name, format,
                                                 glossary)
    else:
        data, summary, seconds = _in_process(args, source.read_bytes(), str(source), format,
                                             glossary)
    write_atomically(target, data)
    print(f"{target}: {summary} in {seconds:.1f} s")
    return 0


def _settings(args) -> FileSettings:
    return FileSettings(overwrite=args.overwrite, review=args.fuzzy, merge_cues=args.merge_cues,
                        placeholders=args.placeholders, batch_size=args.batch_size,
                        rest=args.rest)


def _in_process(args, data: bytes, name: str, format: str,
                glossary) -> tuple[bytes, str, float]:
    """`(OUT's bytes, summary, seconds)`; IN is read and checked before the model loads."""
    run = read_file(format, data, name, _settings(args))

    from documents.terminology import translating_with_glossary
    from nmt.inference.translator import Translator

    translator = Translator.load(args.model, args.precision)
    decoding = decode_options(args, translator.info.default_options)
    translate = translating_with_glossary(lambda s: translator.translate(s, decoding), glossary)
    started = time.perf_counter()
    with _Progress() as progress:
        result = run(translate, progress)
    return result.data, result.summary, time.perf_counter() - started


def _through_server(args, data: bytes, name: str, format: str,
                    glossary) -> tuple[bytes, str, float]:
    """`(OUT's bytes, summary, seconds)` from the server's TranslateFile RPC (which reads
    and checks IN itself)."""
    from nmt_api.client import TranslationClient

    with TranslationClient(args.server) as client:
        options = client_decode_options(args, client)
        started = time.perf_counter()
        data, summary = client.translate_file(
            data, name, format=format, options=options, overwrite=args.overwrite,
            review=args.fuzzy, cue_by_cue=not args.merge_cues,
            keep_placeholders=args.placeholders, **server_glossary(args, glossary))
    return data, summary.text, time.perf_counter() - started


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
