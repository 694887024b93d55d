"""Command-line options shared by `nmt batch` and the Beam pipeline.

Both read the same input formats and translate the same way, so they take
the same flags with the same defaults (those of `InputFormat`,
`DEFAULT_BATCH_SIZE` and `nmt.types.DecodeOptions`). No TensorFlow import:
`nmt batch` builds its parser before TensorFlow loads.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from batch.engines import DEFAULT_BATCH_SIZE
from batch.readers import INPUT_FORMATS, InputFormat, detect_input_format
from documents.markup import DOCUMENT_FORMATS
from nmt.options import DEFAULT_MODEL_DIR, add_decode_options


def add_model_option(parser) -> None:
    """Adds `--model` to `parser` (or to a mutually exclusive group of it)."""
    parser.add_argument("--model", default=str(DEFAULT_MODEL_DIR),
                        help="SavedModel base or version directory (default: models/en-fr)")


def add_input_options(parser: argparse.ArgumentParser) -> None:
    """Adds where the sentence is on each line: `--input-format`, `--column`, `--field`,
    `--max-chars`."""
    default = InputFormat()
    parser.add_argument("--input-format", choices=INPUT_FORMATS,
                        help="default: tsv for .tsv, jsonl for .jsonl/.ndjson/.json, else text")
    parser.add_argument("--column", type=int, default=default.column,
                        help=f"0-based TSV column (default {default.column})")
    parser.add_argument("--field", default=default.field,
                        help=f"JSON Lines field (default: {default.field})")
    parser.add_argument("--max-chars", type=int, default=default.max_chars,
                        help=f"longer lines are recorded as errors (default {default.max_chars})")


def add_document_format_option(parser: argparse.ArgumentParser) -> None:
    """Adds `--document-format`: what each line is (default: one sentence)."""
    parser.add_argument("--document-format", choices=DOCUMENT_FORMATS,
                        help="each line is one document in this format, split into sentences "
                             "and joined again (html, xml: inline tags carried across); "
                             "default: each line is one sentence")


def add_placeholders_option(parser: argparse.ArgumentParser) -> None:
    """Adds `--placeholders/--no-placeholders` (default: on)."""
    parser.add_argument("--placeholders", action=argparse.BooleanOptionalAction, default=True,
                        help="give placeholders (%%s, {0}, &amp;) back exactly, once each "
                             "(default); --no-placeholders lets the model read them as text")


def add_glossary_options(parser: argparse.ArgumentParser) -> None:
    """Adds `--glossary FILE` and `--glossary-exact-case`."""
    parser.add_argument("--glossary", metavar="FILE",
                        help="write these terms in the translations: TSV (source<TAB>target) "
                             "or .csv; an entry whose target is its source is not translated; "
                             "records list the terms applied (docs/glossaries.md)")
    parser.add_argument("--glossary-exact-case", action="store_true",
                        help="apply the glossary's terms only where written in the same case")


def read_glossary(args: argparse.Namespace, read_bytes=None):
    """The `--glossary` file as an `documents.glossary.Glossary`, or None without one.

    Args:
        args: parsed with `add_glossary_options`.
        read_bytes: `path -> bytes` (the Beam pipeline reads any Beam
            filesystem); None: a local file.

    Raises:
        GlossaryError: a row is bad (the message names the line), or there is none.
        ValueError: `--glossary-exact-case` without `--glossary`.
    """
    from documents.glossary import Glossary

    if args.glossary is None:
        if args.glossary_exact_case:
            raise ValueError("--glossary-exact-case goes with --glossary FILE")
        return None
    data = Path(args.glossary).read_bytes() if read_bytes is None else read_bytes(args.glossary)
    format = "csv" if str(args.glossary).lower().endswith(".csv") else "tsv"
    return Glossary.parse(data, format, str(args.glossary), exact_case=args.glossary_exact_case)


def input_format(args: argparse.Namespace, path: str | Path) -> InputFormat:
    """The `InputFormat` of arguments parsed with `add_input_options`, for the file `path`.

    Raises:
        ValueError: a value is out of range (the message names it).
    """
    return InputFormat(args.input_format or detect_input_format(path), column=args.column,
                       field=args.field, max_chars=args.max_chars)


def add_translation_options(parser: argparse.ArgumentParser) -> None:
    """Adds how to translate: `--alignment`, `--batch-size` and the decoding options."""
    parser.add_argument("--alignment", action="store_true",
                        help="add subword tokens and the attention matrix to each record")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE,
                        help=f"sentences per model call (default {DEFAULT_BATCH_SIZE})")
    add_decode_options(parser)
