"""What the stock TensorFlow runtime offers beyond the exported step: XLA and int8.

Times one decoder step (the search's `step_fn` without its bookkeeping) as
the export runs it and compiled with XLA (`jit_compile=True`), in float32
and bfloat16, on real batches of the traffic mix; then the output
projection's product in float32, bfloat16 and int8 (`QuantizedMatMul`, the
only int8 product among the stock CPU kernels); then where a call's fixed
cost goes (tokenizing, the encoder, a whole translation cut to one step).

    python bench/step_variants.py [models/en-fr/5] [--sentences FILE]

The step is traced here from the export's weights (as `nmt export
--from-export` rebuilds it), so the figures are for today's code.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import tensorflow as tf  # noqa: E402

from bench.inputs import SENTENCES_HELP, TRAFFIC_MIX, machine, read_sentences  # noqa: E402
from nmt.inference import fast_encoder  # noqa: E402
from nmt.inference.export import DEFAULT_OPTIONS, TranslationModule, module_from_export  # noqa: E402
from nmt.inference.search import tile_beams  # noqa: E402
from nmt.options import DEFAULT_MODEL_DIR  # noqa: E402
from nmt.paths import resolve_version_dir  # noqa: E402

BEAM = 5


def decoder_step(module: TranslationModule, dtype: tf.DType, jit_compile: bool):
    """The search's step function: `(tokens, state, memory) -> (log_probs, state, attention)`."""
    kernels = module.model.decoder.cast_kernels(dtype)

    def step(tokens, state, memory):
        logits, state, attention = module.model.decode_step(tokens, state, memory, kernels)
        return tf.nn.log_softmax(logits), state, attention

    return tf.function(step, jit_compile=jit_compile)


def search_inputs(module: TranslationModule, sentences: list[str], beam: int = BEAM):
    """First-step inputs of a search over `sentences`: `(tokens, state, memory)`."""
    source = module._encode_sources(tf.constant(sentences))
    values, mask = fast_encoder.encode(module.model.encoder, source, module.matmul_dtype)
    memory = module.model.prepare_memory(source, values, mask)
    state = tile_beams(module.model.initial_state(memory), beam)
    return tf.fill([len(sentences) * beam], 5), state, memory


def int8_matmul(x: tf.Tensor, weights: tf.Tensor) -> tf.Tensor:
    """`x @ weights` through 8-bit operands and `QuantizedMatMul`, dequantized to float32.

    Each operand is quantized over its own range (dynamic quantization; a
    deployment would quantize the weights once, which this timing includes).
    """
    def quantize(t):
        return tf.quantization.quantize(t, tf.reduce_min(t), tf.reduce_max(t), tf.quint8,
                                        mode="MIN_FIRST")

    a, b = quantize(x), quantize(weights)
    product = tf.raw_ops.QuantizedMatMul(
        a=a.output, b=b.output, min_a=a.output_min, max_a=a.output_max,
        min_b=b.output_min, max_b=b.output_max, Toutput=tf.qint32)
    return tf.quantization.dequantize(product.out, product.min_out, product.max_out)


def best_time_ms(function, *args, repeats: int = 5, calls: int = 20) -> float:
    """Best of `repeats` averages over `calls` calls (the first call is not timed)."""
    tf.nest.map_structure(lambda t: t.numpy(), function(*args))
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(calls):
            out = function(*args)
        tf.nest.map_structure(lambda t: t.numpy(), out)
        best = min(best, (time.perf_counter() - started) / calls)
    return best * 1000


def first_call_s(function, *args) -> float:
    started = time.perf_counter()
    tf.nest.map_structure(lambda t: t.numpy(), function(*args))
    return time.perf_counter() - started


def batches(sentences: list[str]) -> dict[str, list[str]]:
    """One short and one long sentence, and batches of 64 short and long, from the mix."""
    by_length = sorted(sentences, key=len)
    n = len(by_length)
    return {"1 sentence, median": by_length[n // 2: n // 2 + 1],
            "1 sentence, 95th percentile": by_length[n * 95 // 100: n * 95 // 100 + 1],
            "64 sentences, median": by_length[n // 2: n // 2 + 64],
            "64 sentences, longest": by_length[-64:]}


def report_steps(module: TranslationModule, groups: dict[str, list[str]]) -> None:
    print(f"\nOne decoder step, beam {BEAM} (ms a step; first call includes tracing and "
          "compiling)")
    print(f"| input | S | {'float32':>9} | {'f32 XLA':>9} | {'bfloat16':>9} | {'bf16 XLA':>9} |"
          " XLA first call |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, sentences in groups.items():
        inputs = search_inputs(module, sentences)
        cells, compile_s = [], 0.0
        for dtype in (tf.float32, tf.bfloat16):
            for jit in (False, True):
                step = decoder_step(module, dtype, jit)
                if jit:
                    compile_s = max(compile_s, first_call_s(step, *inputs))
                cells.append(best_time_ms(step, *inputs, calls=50 if len(sentences) == 1 else 10))
        width = inputs[2].values.shape[1]
        print(f"| {name} | {width} | " + " | ".join(f"{c:9.3f}" for c in cells)
              + f" | {compile_s:.2f} s |")


def report_products(module: TranslationModule, rows: int = 320) -> None:
    weights = tf.cast(module.model.decoder.cast_kernels(tf.float32).projection, tf.float32)
    x = tf.random.normal([rows, weights.shape[0]], stddev=0.5)
    bf16 = tf.cast(weights, tf.bfloat16)
    variants = {
        "float32": tf.function(lambda: tf.matmul(x, weights)),
        "bfloat16": tf.function(lambda: tf.cast(tf.matmul(tf.cast(x, tf.bfloat16), bf16),
                                                tf.float32)),
        "int8 (QuantizedMatMul)": tf.function(lambda: int8_matmul(x, weights)),
    }
    print(f"\nOutput projection, ({rows} x {weights.shape[0]}) @ "
          f"({weights.shape[0]} x {weights.shape[1]}) (ms)")
    for name, product in variants.items():
        print(f"| {name} | {best_time_ms(product, calls=10):.2f} |")


def report_fixed_cost(module: TranslationModule, groups: dict[str, list[str]]) -> None:
    tokenize = tf.function(module._encode_sources)
    encode = tf.function(
        lambda source: fast_encoder.encode(module.model.encoder, source, module.matmul_dtype)[0])
    one_step = {**DEFAULT_OPTIONS, "max_length_ratio": 0.0, "max_length_offset": 1}
    print("\nFixed cost of a call (ms): tokenize, encoder, whole translation cut to one step")
    for name, sentences in groups.items():
        text = tf.constant(sentences)
        source = tokenize(text)
        whole = best_time_ms(module.translate_with_options, text, *one_step.values(), calls=5)
        print(f"| {name} | {best_time_ms(tokenize, text, calls=5):.1f} | "
              f"{best_time_ms(encode, source, calls=5):.1f} | {whole:.1f} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default=str(DEFAULT_MODEL_DIR),
                        help="SavedModel base or version directory (default: the shipped model)")
    parser.add_argument("--sentences", type=Path, default=TRAFFIC_MIX,
                        help=SENTENCES_HELP)
    args = parser.parse_args(argv)
    model_dir = resolve_version_dir(args.model)
    module = module_from_export(model_dir)
    groups = batches(read_sentences(args.sentences))
    print(f"model {model_dir} ({module.matmul_dtype.name} products), sentences "
          f"{args.sentences}; {machine()}, TensorFlow {tf.__version__}")
    report_steps(module, groups)
    report_products(module)
    report_fixed_cost(module, groups)


if __name__ == "__main__":
    main()
