"""`nmt translate --format text|html|xml` and `nmt align --format html|xml`.

Each input line is one document (or one pair); each gives one output line,
blank lines included. All sentences of a batch of lines go to the model in
one call. A glossary (`--glossary`) is applied to each sentence before the
document is joined (`documents.glossary_documents`): here in-process, by
the server with `--server`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence

from documents.glossary_documents import apply_glossary_to_documents
from documents.markup import DOCUMENT_FORMATS, plan_document, plan_projection
from documents.sentences import join_documents, sentences_of
from nmt.options import client_decode_options, decode_options


def plans_for(lines: Sequence[str], format: str, placeholders: bool = True) -> list:
    """Document plans of `lines` (`text`: sentences; `html`/`xml`: markup too), their
    placeholders carried across unless `placeholders` is False."""
    if format not in DOCUMENT_FORMATS:
        raise ValueError(f"--format must be one of {DOCUMENT_FORMATS}. Received: {format!r}")
    return [plan_document(line, format, placeholders) for line in lines]


def translate_lines(lines: Sequence[str], format: str,
                    translate: Callable[[list[str]], Sequence], batch_size: int = 64,
                    placeholders: bool = True, glossary=None) -> Iterator[str]:
    """Each line translated as one document, in order.

    Args:
        lines: the documents, one a line (without the line break).
        format: `text`, `html` or `xml`.
        translate: sentences -> results with `.text` and `.word_alignment`.
        batch_size: documents per translator call.
        placeholders: give placeholders back exactly (`documents.placeholders`).
        glossary: an `documents.glossary.Glossary` to apply to each sentence's
            result; None when there is none, or `translate` applies it (a server).

    Yields:
        One translated line per input line.

    Raises:
        documents.markup.MarkupError: a line's markup is malformed (the message
            gives its line number).
    """
    for start in range(0, len(lines), batch_size):
        chunk = lines[start:start + batch_size]
        plans = _numbered(lambda part: plans_for(part, format, placeholders), chunk, start)
        sentences = sentences_of(plans)
        results = list(translate(sentences)) if sentences else []
        for document in apply_glossary_to_documents(plans, results, glossary):
            yield document.text


def _numbered(plan: Callable[[list], list], lines: Sequence, first: int) -> list:
    """`plan(lines)` one line at a time, so an error names its line (1-based)."""
    plans = []
    for number, line in enumerate(lines, start=first + 1):
        try:
            plans += plan([line])
        except ValueError as error:
            raise ValueError(f"line {number}: {error}") from None
    return plans


def project_lines(pairs: Sequence[tuple[str, str]], format: str,
                  align: Callable[[list[str], list[str]], Sequence], batch_size: int = 64
                  ) -> Iterator[str]:
    """Each plain target with its marked-up source's tags put in place.

    Args:
        pairs: `(source with markup, plain target)` per line.
        format: `html` or `xml`.
        align: `(sources, targets) -> results` with `.word_alignment`
            (`Translator.align` or a client's `align`).
        batch_size: pairs per aligner call.

    Yields:
        One target line with tags per pair.
    """
    if format not in ("html", "xml"):
        raise ValueError(f"--format must be html or xml. Received: {format!r}")
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start:start + batch_size]
        plans = _numbered(lambda part: [plan_projection(*part[0], format)], chunk, start)
        sentences = sentences_of(plans)
        targets = [target for plan in plans for target in plan.targets]
        results = list(align(sentences, targets)) if sentences else []
        for document in join_documents(plans, results):
            yield document.text


def translate_command(args, glossary=None) -> int:
    """`nmt translate --format ...`: arguments or stdin lines, one document each
    (`glossary`: the `--glossary` file read, or None)."""
    lines = args.sentences or [line.rstrip("\r\n") for line in sys.stdin]
    if args.alignment or args.plot:
        raise ValueError("--alignment and --plot work on sentences: drop them, or --format")
    if args.server:
        from nmt_api.client import TranslationClient
        from nmt_cli.glossary_options import server_glossary

        given = server_glossary(args, glossary)  # applied by the server, to each sentence
        with TranslationClient(args.server) as client:
            options = client_decode_options(args, client)
            # The plans took the placeholders out already: the server reads what they give.
            for line in translate_lines(
                    lines, args.format,
                    lambda s: client.translate(s, options, keep_placeholders=False, **given),
                    placeholders=args.placeholders):
                print(line)
        return 0
    from nmt.inference.translator import Translator

    translator = Translator.load(args.model, args.precision)
    options = decode_options(args, translator.info.default_options)
    for line in translate_lines(lines, args.format, lambda s: translator.translate(s, options),
                                placeholders=args.placeholders, glossary=glossary):
        print(line)
    return 0


def align_command(args, pairs: Sequence[tuple[str, str]], align) -> int:
    """`nmt align --format html|xml`: the targets with the sources' tags, one line a pair."""
    if args.alignment:
        raise ValueError("--alignment writes JSON for plain pairs: drop it, or --format")
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    try:
        for line in project_lines(pairs, args.format, align, args.batch_size):
            out.write(line + "\n")
    finally:
        if args.output:
            out.close()
    return 0
