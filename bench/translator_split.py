"""Where a `Translator`'s time goes: the export's signature against the Python around it.

Loads every export given into one process (precision `auto`, as `nmt serve`),
warms each up, then over several rounds, exports interleaved, translates the
first lines of a sentences file (default: the traffic mix) in batches of 64,
file order, through `Translator.translate`, and times the signature call
(search, head, word links, in the SavedModel's graph) apart from the rest
(options, decoding the outputs, building the results). Two exports compared
this way share the machine's state at each moment, which separate processes
run one after another do not.

    python bench/translator_split.py MODEL [MODEL ...] [--beams 1,5] [--rounds 2]
        [--limit N] [--sentences FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.inputs import SENTENCES_HELP, TRAFFIC_MIX, machine, read_sentences  # noqa: E402
from nmt.inference.translator import Translator  # noqa: E402
from nmt.types import DecodeOptions  # noqa: E402

BATCH = 64


class _TimedSignature:
    """Wraps a translator's signature and adds up the seconds spent inside it."""

    def __init__(self, signature):
        self.signature, self.seconds = signature, 0.0

    def __call__(self, **inputs):
        start = time.perf_counter()
        out = self.signature(**inputs)  # eager call: done when it returns
        self.seconds += time.perf_counter() - start
        return out

    def __getattr__(self, name):  # structured_outputs and the like
        return getattr(self.signature, name)


def time_translations(translator: Translator, batches: list[list[str]], beam: int
                      ) -> tuple[float, float]:
    """(total seconds, seconds inside the signature) to translate `batches`."""
    options = DecodeOptions(beam_size=beam)
    signature = translator._translate
    timed = translator._translate = _TimedSignature(signature)
    try:
        start = time.perf_counter()
        for batch in batches:
            translator.translate(batch, options)
        return time.perf_counter() - start, timed.seconds
    finally:
        translator._translate = signature


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", type=Path, help="export base or version directories")
    parser.add_argument("--sentences", type=Path, default=TRAFFIC_MIX, help=SENTENCES_HELP)
    parser.add_argument("--limit", type=int, default=None, help="first N lines (default: all)")
    parser.add_argument("--beams", default="1,5", help="beam sizes, e.g. 1,5")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)

    lines = read_sentences(args.sentences)[: args.limit]
    batches = [lines[i:i + BATCH] for i in range(0, len(lines), BATCH)]
    beams = [int(b) for b in args.beams.split(",")]
    translators = [(str(path), Translator.load(path)) for path in args.models]
    for _, translator in translators:  # traced and warmed up
        for beam in beams:
            translator.translate(batches[0], DecodeOptions(beam_size=beam))
    print(f"{len(lines)} lines of {args.sentences}, batches of {BATCH}, file order, "
          f"precision auto; {machine()}\n")
    print("| round | model | version | path | beam | total, s | signature, s | rest, s |")
    print("|---:|---|---:|---|---:|---:|---:|---:|")
    for round_ in range(1, args.rounds + 1):
        for name, translator in translators:
            for beam in beams:
                total, inside = time_translations(translator, batches, beam)
                print(f"| {round_} | {name} | {translator.info.version} | "
                      f"{translator.info.precision} | {beam} | {total:.2f} | {inside:.2f} | "
                      f"{total - inside:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
