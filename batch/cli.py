"""`nmt batch INPUT OUTPUT`: translate a file in-process or through a server."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

from batch.file_tree_cli import add_file_tree_options, run_file_tree
from batch.options import (
    add_document_format_option,
    add_glossary_options,
    add_input_options,
    add_model_option,
    add_placeholders_option,
    add_translation_options,
    input_format,
    read_glossary,
)
from batch.readers import open_input
from batch.records import OUTPUT_FORMATS, detect_output_format
from nmt.options import add_precision_option, given_decode_options, local_precision

log = logging.getLogger("nmt.batch")


def add_batch_parser(sub) -> None:
    """Registers `nmt batch` on the `nmt` command's subparsers."""
    p = sub.add_parser(
        "batch", help="translate a file (text, TSV or JSON Lines; .gz ok) into JSON Lines or text",
        description="Translates INPUT line by line into OUTPUT, in input order; or, when INPUT "
                    "is a directory, every PO/POT, XLIFF, SRT/WebVTT, .docx and Markdown file "
                    "under it into the same place under the directory OUTPUT, formats kept. "
                    "Stops safely at any point: rerun with --resume to continue.")
    p.add_argument("input", type=Path, help="input file (.gz is decompressed), or a directory "
                                            "of files to translate whole")
    p.add_argument("output", type=Path, help="output file (.gz is compressed), or the directory "
                                             "to write translated files in")
    where = p.add_mutually_exclusive_group()
    add_model_option(where)
    where.add_argument("--server", metavar="HOST:PORT", help="translate through `nmt serve`")
    p.add_argument("--token", help="bearer token for --server")
    p.add_argument("--ca-cert", type=Path, help="PEM root certificates: use TLS for --server")
    p.add_argument("--timeout", type=float, help="seconds per server call (default: none)")
    p.add_argument("--format", choices=OUTPUT_FORMATS,
                   help="output format (default: text for .txt[.gz], else jsonl)")
    add_document_format_option(p)
    add_placeholders_option(p)
    add_glossary_options(p)
    add_input_options(p)
    p.add_argument("--resume", action="store_true", help="continue an interrupted run")
    p.add_argument("--window", type=int, default=2000,
                   help="lines sorted by length and committed together (default 2000)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_file_tree_options(p)
    add_translation_options(p)
    add_precision_option(p)
    p.set_defaults(func=run_batch)


def _make_engine(args):
    from batch.engines import LocalEngine, ServerEngine

    options = given_decode_options(args)  # over the model's default decoding (the engine's)
    precision = local_precision(args)
    if args.server:
        certificates = args.ca_cert.read_bytes() if args.ca_cert else None
        return ServerEngine.connect(args.server, options, args.batch_size, timeout=args.timeout,
                                    root_certificates=certificates, token=args.token)
    return LocalEngine.load(args.model, options, args.batch_size, precision)


def _config(args):
    from batch.job import JobConfig

    if not args.input.is_file():
        raise FileNotFoundError(f"no input file {args.input}")
    return JobConfig(args.input, args.output, input_format(args, args.input),
                     output_format=args.format or detect_output_format(str(args.output)),
                     with_alignment=args.alignment, window=args.window, resume=args.resume,
                     document_format=args.document_format, placeholders=args.placeholders,
                     glossary=read_glossary(args))


def run_batch(args) -> int:
    from batch.job import run_job

    if args.input.is_dir():
        return run_file_tree(args, _make_engine)
    config = _config(args)
    engine = _make_engine(args)
    progress = JobProgress(config.input, enabled=not args.no_progress and sys.stderr.isatty())
    try:
        result = run_job(config, engine, on_progress=progress.update)
    except KeyboardInterrupt:
        print(f"\ninterrupted; rerun with --resume to continue {config.output}", file=sys.stderr)
        return 130
    finally:
        progress.close()
        getattr(engine, "close", lambda: None)()
    speed = result.lines / result.seconds if result.seconds else 0.0
    resumed = f", resumed after line {result.resumed_from}" if result.resumed_from else ""
    print(f"{config.output}: {result.lines} lines ({result.errors} with errors) in "
          f"{result.seconds:.1f}s, {speed:.1f} lines/s{resumed}", file=sys.stderr)
    return 0


def count_lines(path: Path) -> int:
    """Lines in a file (for the ETA), reading it in 1 MiB blocks."""
    count, last = 0, b"\n"
    with open_input(path) as stream:
        while block := stream.read(1 << 20):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


class JobProgress:
    """Progress of a batch job: a tqdm bar with lines/s and ETA on a terminal; a log line
    every 30 s otherwise."""

    def __init__(self, path: Path, enabled: bool, log_every: float = 30.0):
        self.bar = None
        self.done, self.log_every, self.last_log = 0, log_every, time.monotonic()
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=count_lines(path), unit="line", dynamic_ncols=True,
                            smoothing=0.1)

    def update(self, lines: int, total: int) -> None:
        """Records a committed window of `lines` lines, `total` lines being done."""
        if self.bar is not None and self.done == 0 and total > lines:
            # A resumed job: start the bar where the previous run stopped.
            self.bar.initial = self.bar.n = total - lines
        self.done = total
        if self.bar is not None:
            self.bar.update(lines)
        elif time.monotonic() - self.last_log >= self.log_every:
            self.last_log = time.monotonic()
            log.info("%d lines written", self.done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
