"""Apache Beam pipeline: a directory of files translated whole, each in its own format.

    python -m batch.beam_files --input docs/ --output docs-fr/ \\
        --model models/en-fr --runner DirectRunner

The files are those `nmt batch IN_DIR OUT_DIR` translates (`batch.file_tree`: PO/POT,
XLIFF, SRT/WebVTT, .docx, Markdown, at any depth under `--input`, hidden ones left
out), on any Beam filesystem (`gs://...`, local). Steps: match `INPUT/**` → keep
the files of a whole-file format → Reshuffle over the workers → translate each
file with a model loaded once per worker process → write it at the same relative
path under `--output` (under a temporary name, then renamed, so a file there is
whole) → one report record per file, JSON Lines shards `OUTPUT/_nmt-report-*.jsonl`:
`{"path", "format", "summary", "counts", "error"}`.

A file that cannot be read as its format gets a record with its error and the
others are written. `--skip-existing` leaves out files whose translation is
already in `--output` (to finish a run that stopped); otherwise every file is
written again. The glossary (`--glossary`, any Beam filesystem) is read once when
the pipeline is built. A file is translated by one worker: a very large file is
not split (`nmt batch` on one file of lines is the way to spread sentences).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import PurePosixPath

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.utils import shared

from batch.beam_pipeline import _read_bytes, local_model_dir
from batch.engines import DEFAULT_BATCH_SIZE, Engine
from batch.file_tree_cli import add_file_tree_options
from batch.options import (
    add_glossary_options,
    add_model_option,
    add_placeholders_option,
    read_glossary,
)
from documents.file_formats import FILE_FORMATS, FileSettings, read_file
from documents.glossary import Glossary
from documents.terminology import translating_with_glossary
from nmt.options import add_decode_options, given_decode_options
from nmt.types import DecodeOptions

REPORT_NAME = "_nmt-report"  # the report's shards in OUTPUT: _nmt-report-00000-of-00001.jsonl
_EXTENSIONS = {ext: format for format, exts in FILE_FORMATS.items() for ext in exts}


def file_format(relative: str) -> str | None:
    """The whole-file format of a path relative to the input, None for other or hidden files."""
    path = PurePosixPath(relative)
    if any(part.startswith(".") for part in path.parts):
        return None
    return _EXTENSIONS.get(path.suffix.lower())


def relative_to(path: str, root: str) -> str:
    """`path` below `root` (`gs://b/docs/a/x.md` under `gs://b/docs` -> `a/x.md`)."""
    prefix = root.rstrip("/") + "/"
    if not path.startswith(prefix):
        raise ValueError(f"{path} is not under {root}")
    return path[len(prefix):]


def write_whole(target: str, data: bytes) -> None:
    """Writes `data` under a temporary name beside `target`, then renames it to `target`."""
    temporary = f"{target}.{uuid.uuid4().hex}.tmp"
    with FileSystems.create(temporary) as stream:
        stream.write(data)
    if FileSystems.exists(target):
        FileSystems.delete([target])
    FileSystems.rename([temporary], [target])


class TranslateFileFn(beam.DoFn):
    """Translates one file (a path under `input_root`) and writes it under `output_root`.

    Args:
        load_engine: `() -> Engine`, called once per worker process (shared by its
            threads); must pickle (a module-level function or class).
        settings: how each file is translated.
        glossary: terms written into every translation; None: none.
        input_root, output_root: the directories (any Beam filesystem).
        skip_existing: leave out files already translated in `output_root`.
    """

    def __init__(self, load_engine: Callable[[], Engine], settings: FileSettings,
                 glossary: Glossary | None, input_root: str, output_root: str,
                 skip_existing: bool = False):
        self._load_engine, self._settings, self._glossary = load_engine, settings, glossary
        self._input_root, self._output_root = input_root, output_root
        self._skip_existing = skip_existing
        self._shared = shared.Shared()

    def setup(self) -> None:
        self._engine = self._shared.acquire(self._load_engine)

    def process(self, path: str) -> Iterator[dict]:
        relative = relative_to(path, self._input_root)
        format = file_format(relative)
        record = {"path": relative, "format": format, "summary": None, "counts": None,
                  "error": None}
        target = FileSystems.join(self._output_root, relative)
        if self._skip_existing and FileSystems.exists(target):
            yield {**record, "summary": "already translated"}
            return
        translate = translating_with_glossary(self._engine.translate, self._glossary)
        try:
            result = read_file(format, _read_bytes(path), relative, self._settings)(translate)
        except (ValueError, UnicodeError) as error:  # the file's fault (BadInputError too)
            yield {**record, "error": str(error)}
            return
        write_whole(target, result.data)
        yield {**record, "summary": result.summary, "counts": result.counts}


class LocalEngineLoader:
    """`() -> LocalEngine` for `TranslateFileFn`: picklable, loads the model on the worker."""

    def __init__(self, model: str, options: DecodeOptions | Mapping | None, batch_size: int):
        self.model, self.options, self.batch_size = model, options, batch_size

    def __call__(self) -> Engine:
        from batch.engines import LocalEngine

        return LocalEngine.load(local_model_dir(self.model), self.options, self.batch_size)


def build_file_pipeline(pipeline: beam.Pipeline, input_root: str, output_root: str,
                        translate_fn: TranslateFileFn) -> None:
    """Adds match → translate each file → write the report to `pipeline`."""
    pattern = FileSystems.join(input_root, "**")
    _ = (pipeline
         | "Match" >> fileio.MatchFiles(pattern)
         | "Paths" >> beam.Map(lambda metadata: metadata.path)
         | "FilesOfAFormat" >> beam.Filter(
             lambda path: file_format(relative_to(path, input_root)) is not None)
         | "Spread" >> beam.Reshuffle()
         | "Translate" >> beam.ParDo(translate_fn)
         | "ToJson" >> beam.Map(lambda record: json.dumps(record, ensure_ascii=False))
         | "Report" >> beam.io.WriteToText(FileSystems.join(output_root, REPORT_NAME),
                                           file_name_suffix=".jsonl"))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m batch.beam_files", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                allow_abbrev=False)
    p.add_argument("--input", required=True, help="directory of files (local, gs://, ...)")
    p.add_argument("--output", required=True, help="directory to write the translations in")
    p.add_argument("--skip-existing", action="store_true",
                   help="leave out files whose translation is already in --output")
    add_model_option(p)
    add_placeholders_option(p)
    add_glossary_options(p)
    add_file_tree_options(p)
    p.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE,
                   help=f"sentences per model call (default {DEFAULT_BATCH_SIZE})")
    add_decode_options(p)
    return p


def main(argv: list[str] | None = None) -> int:
    """Parses our options, passes the rest to Beam (`--runner`, ...) and runs the pipeline."""
    args, beam_args = _parser().parse_known_args(argv)
    settings = FileSettings(overwrite=args.overwrite, review=args.fuzzy,
                            merge_cues=args.merge_cues, placeholders=args.placeholders,
                            batch_size=args.batch_size)
    loader = LocalEngineLoader(args.model, given_decode_options(args), args.batch_size)
    translate_fn = TranslateFileFn(loader, settings, read_glossary(args, _read_bytes),
                                   args.input, args.output, args.skip_existing)
    with beam.Pipeline(options=PipelineOptions(beam_args)) as pipeline:
        build_file_pipeline(pipeline, args.input, args.output, translate_fn)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    sys.exit(main())
