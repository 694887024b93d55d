"""`nmt batch`: a streaming, resumable file translator.

The input is read in windows of `window` lines. Each window's sentences are
sorted by length so that batches hold sentences of similar length (less
padding), translated, put back in input order and committed to the output
with a checkpoint. Memory holds one window, whatever the size of the file.

Windows always start at the same lines, so a resumed job translates exactly
the batches an uninterrupted one would, and its output is byte-identical.

With `document_format` set each line is one document (plain text, HTML or
XML, `documents.markup.plan_document`): the sentences of a window's documents are
sorted and translated together, and each document joined again. A line
whose markup is malformed is an error record naming the position.

Placeholders (`%s`, `{0}`, `&amp;`: `documents.placeholders`) come back
exactly unless `JobConfig.placeholders` is False: the job takes them out of what
the engine reads (`documents.protection`, or each document's plan) and puts
them back, so a server engine reads sentences without them.

A glossary (`JobConfig.glossary`) is applied by the job too, whatever the
engine, after the placeholders are back and before a document is joined
(`documents.terminology`, `documents.glossary_documents`): the engine
translates exactly what it would without one, and each record lists the
terms applied (`batch.records`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from batch.checkpoint import Checkpoint, PartialOutput, load_checkpoint, save_checkpoint
from batch.engines import Engine, translate_or_explain
from batch.readers import InputFormat, SourceLine, numbered_lines, open_input, parse_line
from batch.records import (
    OUTPUT_FORMATS,
    document_record,
    error_record,
    format_record,
    translation_record,
)
from documents.glossary import Glossary
from documents.glossary_documents import apply_glossary_to_documents
from documents.markup import DOCUMENT_FORMATS, MarkupError, plan_document
from documents.protection import protect
from documents.terminology import apply_glossary

log = logging.getLogger("nmt.batch")

# For tests only: seconds to sleep between writing a window and checkpointing
# it, so that a `kill -9` lands mid-job, between the two writes.
COMMIT_DELAY_ENV = "NMT_BATCH_COMMIT_DELAY"


@dataclasses.dataclass(frozen=True)
class JobConfig:
    """What a batch job reads and writes.

    Attributes:
        input: input file (`.gz` is decompressed).
        output: output file (`.gz` is compressed).
        input_format: where the sentence is on each line.
        output_format: `jsonl` (one record per line) or `text` (translations).
        with_alignment: add tokens and the attention matrix to each record.
        window: lines sorted by length and committed together.
        resume: continue from the checkpoint of an interrupted run.
        document_format: None: each line is a sentence; `text`, `html` or
            `xml`: each line is a document in that format.
        placeholders: give placeholders back exactly, once each.
        glossary: terms to write into the translations; None: none.
    """

    input: Path
    output: Path
    input_format: InputFormat = InputFormat()
    output_format: str = "jsonl"
    with_alignment: bool = False
    window: int = 2000
    resume: bool = False
    document_format: str | None = None
    placeholders: bool = True
    glossary: Glossary | None = None

    def __post_init__(self) -> None:
        if self.document_format is not None and self.document_format not in DOCUMENT_FORMATS:
            raise ValueError(f"document format must be one of {', '.join(DOCUMENT_FORMATS)}. "
                             f"Received: {self.document_format!r}")
        if self.output_format not in OUTPUT_FORMATS:
            raise ValueError(f"output format must be one of {', '.join(OUTPUT_FORMATS)}. "
                             f"Received: {self.output_format!r}")
        if self.window < 1:
            raise ValueError(f"window must be >= 1. Received: window={self.window!r}")
        if Path(self.input).resolve() == Path(self.output).resolve():
            raise ValueError(f"input and output must differ. Received: {str(self.output)!r} "
                             "for both")


@dataclasses.dataclass(frozen=True)
class JobResult:
    """Lines and errors written by this run, and where it started."""

    lines: int
    errors: int
    resumed_from: int
    seconds: float


def translate_window(sources: list[SourceLine], engine: Engine, *,
                     with_alignment: bool = False, placeholders: bool = True,
                     glossary: Glossary | None = None) -> list[dict]:
    """Records for a window of lines, in input order (translated sorted by length); with
    `placeholders`, each comes back exactly (`documents.protection`); with a
    `glossary`, its terms are written in and listed (`applied_terms`)."""
    todo = sorted((s for s in sources if s.error is None), key=lambda s: len(s.text))
    protected = protect([s.text for s in todo], placeholders)
    results = protected.restore(translate_or_explain(engine, protected.sentences))
    records = {}
    for source, result in zip(todo, results, strict=True):
        if isinstance(result, str):
            records[source.line] = error_record(source, result)
        else:
            if glossary is not None:
                result = apply_glossary(result, glossary)[0]
            records[source.line] = translation_record(
                source, result, with_alignment=with_alignment,
                max_source_tokens=engine.max_source_tokens, glossary=glossary is not None)
    return [records.get(s.line) or error_record(s) for s in sources]


def translate_documents_window(sources: list[SourceLine], engine: Engine, format: str, *,
                               with_alignment: bool = False, placeholders: bool = True,
                               glossary: Glossary | None = None) -> list[dict]:
    """Records for a window of documents, in input order.

    The sentences of all the window's documents are translated together,
    sorted by length (a sentence found twice, once); a document with a
    sentence the engine rejects, or with malformed markup, is an error
    record saying which. With `placeholders`, each document's plan takes
    them out and puts them back; with a `glossary`, its terms are written
    into each sentence before the document is joined.
    """
    plans, records = {}, {}
    for source in sources:
        if source.error is not None:
            continue
        try:
            plans[source.line] = plan_document(source.text, format, placeholders)
        except MarkupError as error:
            records[source.line] = error_record(source, f"malformed {format.upper()}: {error}")
    # Each distinct sentence once, in an order that does not depend on hashing (resumes).
    sentences = sorted({s for plan in plans.values() for s in plan.sentences},
                       key=lambda s: (len(s), s))
    results = dict(zip(sentences, translate_or_explain(engine, sentences), strict=True))
    for source in sources:
        plan = plans.get(source.line)
        if plan is None:
            continue
        done = [results[s] for s in plan.sentences]
        failed = next((i for i, r in enumerate(done) if isinstance(r, str)), None)
        if failed is not None:
            records[source.line] = error_record(source, f"sentence {failed + 1}: {done[failed]}")
            continue
        [document] = apply_glossary_to_documents([plan], done, glossary)
        records[source.line] = document_record(source, document, with_alignment=with_alignment,
                                                max_source_tokens=engine.max_source_tokens,
                                                glossary=glossary is not None)
    return [records.get(s.line) or error_record(s) for s in sources]


def fingerprint(config: JobConfig, engine: Engine) -> dict:
    """Everything that decides the output bytes; a job resumes only if it is unchanged."""
    stat = os.stat(config.input)
    facts = {
        "input": str(Path(config.input).resolve()), "input_bytes": stat.st_size,
        "input_mtime_ns": stat.st_mtime_ns,
        "input_format": dataclasses.asdict(config.input_format),
        "output_format": config.output_format, "with_alignment": config.with_alignment,
        "window": config.window, "engine": engine.settings(),
        # Always there: a job begun before placeholders were kept does not resume with them.
        "placeholders": config.placeholders,
    }
    if config.document_format is not None:  # absent otherwise: older checkpoints still resume
        facts["document_format"] = config.document_format
    if config.glossary is not None:  # likewise
        facts["glossary"] = glossary_digest(config.glossary)
    return json.loads(json.dumps(facts))  # the form it takes once saved (lists, not tuples)


def glossary_digest(glossary: Glossary) -> str:
    """What decides a glossary's effect (its entries and matching), as a short hash."""
    facts = [[e.source, e.target] for e in glossary.entries]
    text = json.dumps([facts, glossary.exact_case, glossary.inflect], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _check_same_job(saved: dict, current: dict, path: Path) -> None:
    changed = sorted(key for key in saved.keys() | current.keys()
                     if saved.get(key) != current.get(key))
    if changed:
        raise ValueError(f"cannot resume: {', '.join(changed)} changed since the checkpoint "
                         f"{path} was written; rerun without --resume to start over")


def _starting_point(config: JobConfig, out: PartialOutput, facts: dict) -> Checkpoint | None:
    """The checkpoint to continue from (a new one to start afresh), or None if done."""
    previous = load_checkpoint(out.checkpoint) if config.resume else None
    if previous is not None:
        _check_same_job(previous.fingerprint, facts, out.checkpoint)
        out.start(previous.output_bytes)
        log.info("resuming %s after line %d", config.output, previous.lines)
        return previous
    if config.resume and config.output.exists() and not out.part.exists():
        log.info("%s is already complete; nothing to resume", config.output)
        return None
    if out.checkpoint.exists():
        log.warning("discarding the partial output %s (use --resume to continue it)", out.part)
    out.start()
    checkpoint = Checkpoint(facts)
    save_checkpoint(out.checkpoint, checkpoint)
    return checkpoint


def _windows(lines: Iterable, size: int) -> Iterator[list]:
    iterator = iter(lines)
    while window := list(itertools.islice(iterator, size)):
        yield window


def _commit(out: PartialOutput, checkpoint: Checkpoint, records: list[dict], config: JobConfig,
            last_line: int) -> Checkpoint:
    size = out.commit("".join(format_record(r, config.output_format) for r in records))
    delay = float(os.environ.get(COMMIT_DELAY_ENV) or 0)
    if delay > 0:
        time.sleep(delay)
    errors = sum(r["error"] is not None for r in records)
    checkpoint = dataclasses.replace(checkpoint, lines=last_line, output_bytes=size,
                                     errors=checkpoint.errors + errors)
    save_checkpoint(out.checkpoint, checkpoint)
    return checkpoint


def run_job(config: JobConfig, engine: Engine,
            on_progress: Callable[[int, int], None] | None = None) -> JobResult:
    """Translates `config.input` into `config.output`.

    Args:
        config: the job.
        engine: what translates (`LocalEngine` or `ServerEngine`).
        on_progress: called after each committed window with its number of lines
            and the number of input lines done so far.

    Returns:
        What this run did (a resumed run counts only the lines it added).
    """
    started = time.monotonic()
    out = PartialOutput(config.output)
    checkpoint = _starting_point(config, out, fingerprint(config, engine))
    if checkpoint is None:
        return JobResult(0, 0, 0, 0.0)
    first = checkpoint
    try:
        with open_input(config.input) as stream:
            raw = numbered_lines(stream, skip=checkpoint.lines)
            for window in _windows(raw, config.window):
                sources = [parse_line(number, text, config.input_format)
                           for number, text in window]
                if config.document_format is None:
                    records = translate_window(sources, engine,
                                               with_alignment=config.with_alignment,
                                               placeholders=config.placeholders,
                                               glossary=config.glossary)
                else:
                    records = translate_documents_window(
                        sources, engine, config.document_format,
                        with_alignment=config.with_alignment,
                        placeholders=config.placeholders, glossary=config.glossary)
                checkpoint = _commit(out, checkpoint, records, config, sources[-1].line)
                if on_progress is not None:
                    on_progress(len(sources), checkpoint.lines)
        out.finish()
    finally:
        out.close()
    return JobResult(lines=checkpoint.lines - first.lines, errors=checkpoint.errors - first.errors,
                     resumed_from=first.lines, seconds=time.monotonic() - started)
