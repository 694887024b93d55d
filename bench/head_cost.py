"""What an export's alignment head costs in decoding, part by part.

Translates the first lines of a sentences file (default: the traffic mix) in
batches of 64, in file order, through the export's graph functions (no
Python post-processing), and times, interleaved over several rounds:

- `translate`: the whole translation (encoder, search, the head's rows,
  word links and pieces), as the SavedModel's signatures run it;
- `head rows`: the alignment head alone, from the decoder states the search
  kept (its target reader, then its attention over the source);
- `target reader`: the head's target reader alone (0 without one).

The head's share of decoding is `head rows / translate`: what a cheaper
head or reader can save at most. Keys of the head are projected once per
sentence with the encoder's memory and are not counted here.

    python bench/head_cost.py [--model models/en-fr] [--beams 1,5] [--limit 512]
        [--precision auto|float32|bfloat16] [--rounds 3] [--sentences FILE]
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

import tensorflow as tf  # noqa: E402

from bench.inputs import SENTENCES_HELP, TRAFFIC_MIX, machine, read_sentences  # noqa: E402
from nmt.inference import fast_encoder  # noqa: E402
from nmt.inference.export import module_from_export, read_metadata  # noqa: E402
from nmt.inference.precision import (  # noqa: E402
    LOAD_CHOICES,
    carried_paths,
    choose_precision,
)
from nmt.options import DEFAULT_MODEL_DIR  # noqa: E402
from nmt.paths import resolve_version_dir  # noqa: E402

BATCH = 64


def graph_functions(module, beam: int) -> dict:
    """`translate`, and the head's parts as functions of what the search returns."""
    options = {**module.default_options, "beam_size": beam}
    options = {key: tf.constant(value) for key, value in options.items()}
    dtype = module.matmul_dtype
    decoder = module.model.decoder

    @tf.function
    def translate(sentences):
        return module._translate(sentences, options, dtype)

    @tf.function
    def search(sentences):
        """The search's kept states and pieces, and the sentences' memory."""
        source = module._encode_sources(sentences)
        result, _ = module._search(source, options, dtype)
        values, mask = fast_encoder.encode(module.model.encoder, source, dtype)
        return result.queries, result.tokens, module.model.prepare_memory(source, values, mask)

    @tf.function
    def head_rows(queries, tokens, memory):
        return decoder.head_weights(queries, tokens, memory)

    @tf.function
    def target_reader(queries, tokens, memory):
        embedded = tf.cast(decoder.embedding(tokens), queries.dtype)
        return decoder._with_target_context(tf.concat([queries, embedded], -1), tokens)

    parts = {"translate": translate, "head rows": head_rows}
    if decoder.head_context is not None:
        parts["target reader"] = target_reader
    return {"search": search, **parts}


def seconds(function, inputs: list) -> float:
    start = time.perf_counter()
    for args in inputs:
        function(*args)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR)
    parser.add_argument("--sentences", type=Path, default=TRAFFIC_MIX, help=SENTENCES_HELP)
    parser.add_argument("--limit", type=int, default=512, help="first N lines (default 512)")
    parser.add_argument("--beams", default="1,5", help="beam sizes, e.g. 1,5")
    parser.add_argument("--precision", choices=LOAD_CHOICES, default="auto")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    version_dir = resolve_version_dir(args.model)
    choice = choose_precision(args.precision, carried_paths(read_metadata(version_dir)),
                              where=str(version_dir))
    module = module_from_export(version_dir, precision=choice.precision)
    if not module.has_head:
        sys.exit(f"{version_dir} has no alignment head")
    lines = read_sentences(args.sentences)[: args.limit]
    batches = [tf.constant(lines[i:i + BATCH]) for i in range(0, len(lines), BATCH)]
    print(f"{version_dir} ({module.model.config.architecture_name()}), {choice.precision} "
          f"path ({choice.reason}); {len(lines)} lines of {args.sentences}, batches of "
          f"{BATCH}, file order; {machine()}\n")
    print("| beam | translate, s | head rows, s | target reader, s | head's share |")
    print("|---:|---:|---:|---:|---:|")
    for beam in (int(b) for b in args.beams.split(",")):
        functions = graph_functions(module, beam)
        search = functions.pop("search")
        searched = [search(batch) for batch in batches]
        inputs = {"translate": [(batch,) for batch in batches]}
        inputs.update({name: searched for name in functions if name != "translate"})
        for name, function in functions.items():  # traced and warmed up
            seconds(function, inputs[name])
        totals = dict.fromkeys(functions, 0.0)
        for _ in range(args.rounds):
            for name, function in functions.items():
                totals[name] += seconds(function, inputs[name])
        mean = {name: total / args.rounds for name, total in totals.items()}
        reader = mean.get("target reader", 0.0)
        print(f"| {beam} | {mean['translate']:.3f} | {mean['head rows']:.3f} | {reader:.3f} "
              f"| {mean['head rows'] / mean['translate']:.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
