"""Apache Beam pipeline: translate a file on a cluster with RunInference.

    python -m batch.beam_pipeline --input in.txt --output out/fr.jsonl \\
        --model models/en-fr --runner DirectRunner

Steps: read numbered lines → parse them with the checks of `nmt batch` →
RunInference with `TranslationModelHandler` (a SavedModel loaded through
`nmt.inference.translator.Translator`, batches of sentences of similar length) →
WriteToText as JSON Lines shards (`out/fr-00000-of-00004.jsonl`), one record
per input line in the schema of `batch.records`, in no particular order:
sort on `line` to restore input order.

With `--document-format text|html|xml` each line is one document, as for
`nmt batch --document-format`: the sentences of a batch of documents are
translated together and each document joined again (its record holds the
translated document and its sentences); malformed markup makes the line an
error record naming the position.

With `--glossary FILE` (local or any Beam filesystem path; read once when
the pipeline is built, so workers need no access to it) the terms are
written into every translation and listed in its record, as for `nmt batch
--glossary`.

Lines are read with their numbers by one worker per file (ReadFromText does
not number lines) and then reshuffled over all workers; reading a line costs
microseconds, translating it milliseconds, so the reader is never the
bottleneck. Every other option is a Beam pipeline option (`--runner`,
`--project`, `--flink_master`, ...), see docs/batch.md, "With Apache Beam".
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.ml.inference.base import ModelHandler, RunInference
from apache_beam.options.pipeline_options import PipelineOptions

from batch.engines import DEFAULT_BATCH_SIZE
from batch.job import translate_documents_window, translate_window
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
from batch.readers import InputFormat, SourceLine, numbered_lines, parse_line
from batch.records import error_record, format_record
from documents.glossary import Glossary
from documents.markup import DOCUMENT_FORMATS
from nmt.options import given_decode_options
from nmt.types import DecodeOptions

# Character lengths at which sentences go to different batches (bisect_right:
# [0, 20), [20, 40), ...), so a batch pads to a similar length.
LENGTH_BUCKETS = (20, 40, 80, 160, 320, 640)


def source_length(element: tuple[int, str]) -> int:
    """Length of a `(line, sentence)` element, for length-bucketed batching."""
    return len(element[1])


def local_model_dir(model: str) -> str:
    """`model` itself if local, else a local copy (e.g. of `gs://bucket/models/en-fr/1`)."""
    if "://" not in model:
        return model
    root = model.rstrip("/")
    target = Path(tempfile.mkdtemp(prefix="nmt-model-"))
    for metadata in FileSystems.match([root + "/**"])[0].metadata_list:
        destination = target / metadata.path[len(root) + 1:]
        destination.parent.mkdir(parents=True, exist_ok=True)
        with FileSystems.open(metadata.path) as src, open(destination, "wb") as dst:
            dst.write(src.read())
    return str(target)


class TranslationModelHandler(ModelHandler[tuple[int, str], dict, object]):
    """RunInference handler: `(line, sentence)` (or `(line, document)`) elements in,
    output records out.

    Args:
        model: SavedModel base or version directory (local, or any Beam
            filesystem path such as `gs://`, copied to the worker).
        options: decoding options, or the fields a user set (a mapping; None:
            none) over the model's default decoding (`batch.engines.complete_options`).
        batch_size: sentences per model call.
        with_alignment: add tokens and attention matrices to the records.
        max_wait_secs: longest time a partial batch waits for more sentences
            of its length (streaming; in batch mode batches fill up at once).
        document_format: None: each element is a sentence; `text`, `html` or
            `xml`: a document in that format (`batch.job.translate_documents_window`;
            a batch of `batch_size` documents, whose sentences go to the model
            `batch_size` at a time).
        placeholders: give placeholders back exactly, once each (as `nmt batch`).
        glossary: terms to write into the translations (as `nmt batch
            --glossary`); None: none.
    """

    def __init__(self, model: str, options: DecodeOptions | Mapping | None = None, *,
                 batch_size: int = DEFAULT_BATCH_SIZE, with_alignment: bool = False,
                 max_wait_secs: int = 10, document_format: str | None = None,
                 placeholders: bool = True, glossary: Glossary | None = None):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1. Received: batch_size={batch_size!r}")
        if document_format is not None and document_format not in DOCUMENT_FORMATS:
            raise ValueError(f"document_format must be one of {DOCUMENT_FORMATS} or None. "
                             f"Received: document_format={document_format!r}")
        super().__init__(min_batch_size=batch_size, max_batch_size=batch_size,
                         max_batch_duration_secs=max_wait_secs, batch_length_fn=source_length,
                         batch_bucket_boundaries=list(LENGTH_BUCKETS))
        # Fields a user set (a mapping) are set over the model's default decoding.
        self._model, self._options = model, options if options is not None else {}
        self._batch_size, self._with_alignment = batch_size, with_alignment
        self._document_format = document_format
        self._placeholders = placeholders
        self._glossary = glossary

    def load_model(self):
        from batch.engines import LocalEngine

        return LocalEngine.load(local_model_dir(self._model), self._options, self._batch_size)

    def run_inference(self, batch: Sequence[tuple[int, str]], model,
                      inference_args: dict | None = None) -> Iterable[dict]:
        sources = [SourceLine(line, text) for line, text in batch]
        if self._document_format is None:
            return translate_window(sources, model, with_alignment=self._with_alignment,
                                    placeholders=self._placeholders, glossary=self._glossary)
        return translate_documents_window(sources, model, self._document_format,
                                          with_alignment=self._with_alignment,
                                          placeholders=self._placeholders,
                                          glossary=self._glossary)

    def get_metrics_namespace(self) -> str:
        return "nmt"


def read_numbered(path: str, fmt: InputFormat) -> Iterator[SourceLine]:
    """The parsed lines of one file (any Beam filesystem; `.gz` decompressed)."""
    with FileSystems.open(path) as stream:
        for number, raw in numbered_lines(iter(stream.readline, b"")):
            yield parse_line(number, raw, fmt)


def _to_element(source: SourceLine) -> tuple[int, str]:
    return source.line, source.text


def _to_json(record: dict) -> str:
    return format_record(record, "jsonl").removesuffix("\n")


def _error_record(source: SourceLine) -> dict:
    return error_record(source)


def build_pipeline(pipeline: beam.Pipeline, input_path: str, output: str, fmt: InputFormat,
                   handler: TranslationModelHandler, num_shards: int = 0) -> None:
    """Adds read → translate → write to `pipeline`."""
    sources = (pipeline
               | "Input" >> beam.Create([input_path])
               | "ReadNumberedLines" >> beam.FlatMap(read_numbered, fmt)
               | "Spread" >> beam.Reshuffle())
    good, bad = sources | "SplitErrors" >> beam.Partition(
        lambda source, _: int(source.error is not None), 2)
    translated = (good
                  | "ToElement" >> beam.Map(_to_element)
                  | "Translate" >> RunInference(handler))
    errors = bad | "ErrorRecords" >> beam.Map(_error_record)
    prefix, suffix = split_output(output)
    _ = ((translated, errors)
         | "Records" >> beam.Flatten()
         | "ToJson" >> beam.Map(_to_json)
         | "Write" >> beam.io.WriteToText(prefix, file_name_suffix=suffix, num_shards=num_shards))


def split_output(output: str) -> tuple[str, str]:
    """`out/fr.jsonl.gz` → (`out/fr`, `.jsonl.gz`); a name without `.jsonl` gets it."""
    for suffix in (".jsonl.gz", ".jsonl"):
        if output.endswith(suffix):
            return output.removesuffix(suffix), suffix
    return output, ".jsonl"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m batch.beam_pipeline", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                allow_abbrev=False)
    p.add_argument("--input", required=True, help="input file (local, gs://, ...; .gz ok)")
    p.add_argument("--output", required=True,
                   help="output prefix, e.g. out/fr.jsonl → out/fr-00000-of-00004.jsonl")
    add_model_option(p)
    add_input_options(p)
    add_document_format_option(p)
    add_placeholders_option(p)
    add_glossary_options(p)
    p.add_argument("--max-wait-secs", type=int, default=10,
                   help="longest wait of a partial batch (streaming)")
    p.add_argument("--num-shards", type=int, default=0, help="output files (0: runner decides)")
    add_translation_options(p)
    return p


def _read_bytes(path: str) -> bytes:
    """A whole file of any Beam filesystem (`gs://...`, local)."""
    with FileSystems.open(path) as stream:
        return stream.read()


def main(argv: list[str] | None = None) -> int:
    """Parses our options, passes the rest to Beam (`--runner`, ...) and runs the pipeline."""
    args, beam_args = _parser().parse_known_args(argv)
    fmt = input_format(args, args.input)
    handler = TranslationModelHandler(args.model, given_decode_options(args),
                                      batch_size=args.batch_size, with_alignment=args.alignment,
                                      max_wait_secs=args.max_wait_secs,
                                      document_format=args.document_format,
                                      placeholders=args.placeholders,
                                      glossary=read_glossary(args, _read_bytes))
    with beam.Pipeline(options=PipelineOptions(beam_args)) as pipeline:
        build_pipeline(pipeline, args.input, args.output, fmt, handler, args.num_shards)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    sys.exit(main())
