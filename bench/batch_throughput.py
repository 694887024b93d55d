"""Batch translation throughput: lines/s and peak memory of `nmt batch`.

Generates a file of `--lines` lines (the lines of `--sentences`, by default
the traffic mix, cycled in file order; seeded synthetic sentences when that
file is absent),
translates it with the batch job in this process, and prints lines/s and
memory: the resident set after loading the model, its peak during the job
(sampled after every window) and `ru_maxrss`. Memory stays flat when the
peak during the job is close to the resident set after loading, whatever
`--lines` is. `--tracemalloc` adds the Python-heap peak (slower).

The server path runs the same job through `TranslateStream`, against
`--server host:port`, or against a server started in this process on the
same model with `--serve` (its memory is then counted with ours).

    python bench/batch_throughput.py [--lines 1000000] [--model models/en-fr] [--sentences FILE]
        [--beam-size 5] [--batch-size 64] [--window 2000] [--server HOST:PORT | --serve]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from batch.engines import LocalEngine, ServerEngine  # noqa: E402
from batch.job import JobConfig, run_job  # noqa: E402
from bench.support.inputs import SENTENCES_HELP, TRAFFIC_MIX, read_sentences  # noqa: E402
from bench.support.memory import peak_rss_mb, rss_mb  # noqa: E402
from nmt.options import DEFAULT_MODEL_DIR  # noqa: E402
from nmt.types import DecodeOptions  # noqa: E402
from training.machine import cpu_model  # noqa: E402

_WORDS = ("the cat dog house tree is was big small red I you we like see have a an "
          "my your old new green car book city river").split()


def sentences(path: Path) -> list[str]:
    """Source sentences to cycle through: the lines of `path`, or synthetic ones."""
    if path.is_file():
        return read_sentences(path)
    rng = random.Random(0)
    return [" ".join(rng.choices(_WORDS, k=rng.randint(3, 12))).capitalize() + "."
            for _ in range(3000)]


def write_input(path: Path, lines: int, source: Path) -> None:
    pool = sentences(source)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(lines):
            f.write(pool[i % len(pool)] + "\n")


def measure(name: str, engine, config: JobConfig, trace: bool) -> dict:
    engine.translate(["Warm up the model."])
    loaded = rss_mb()
    peak = [loaded]
    if trace:
        tracemalloc.start()
    started = time.perf_counter()
    run_job(config, engine, on_progress=lambda lines, done: peak.append(rss_mb()))
    seconds = time.perf_counter() - started
    heap = tracemalloc.get_traced_memory()[1] / 1e6 if trace else None
    if trace:
        tracemalloc.stop()
    lines = sum(1 for _ in open(config.input, "rb"))
    return {"path": name, "lines": lines, "seconds": seconds, "lines_s": lines / seconds,
            "rss_loaded": loaded, "rss_peak": max(peak), "maxrss": peak_rss_mb(), "heap": heap}


def print_table(rows: list[dict], args) -> None:
    print(f"\n{cpu_model()}, {os.cpu_count()} cores; beam {args.beam_size}, batch "
          f"{args.batch_size}, window {args.window}; model {args.model}; "
          f"sentences {args.sentences if args.sentences.is_file() else 'synthetic'}")
    print("| path | lines | seconds | lines/s | RSS after load (MB) | peak RSS in job (MB) "
          "| ru_maxrss (MB) | Python heap peak (MB) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        heap = f"{r['heap']:.1f}" if r["heap"] is not None else "-"
        print(f"| {r['path']} | {r['lines']:,} | {r['seconds']:.1f} | {r['lines_s']:.1f} | "
              f"{r['rss_loaded']:.0f} | {r['rss_peak']:.0f} | {r['maxrss']:.0f} | {heap} |")


def _server_engine(args, options):
    if args.server:
        return ServerEngine.connect(args.server, options, args.batch_size), None
    from serving.server import ServerConfig
    from serving.testing import ServerThread

    thread = ServerThread(ServerConfig(model_dir=Path(args.model), host="127.0.0.1", port=0,
                                       metrics_port=0))
    thread.wait_until_serving()
    return ServerEngine.connect(thread.target, options, args.batch_size), thread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--model", default=str(DEFAULT_MODEL_DIR))
    parser.add_argument("--sentences", type=Path, default=TRAFFIC_MIX, help=SENTENCES_HELP)
    parser.add_argument("--beam-size", type=int, default=DecodeOptions().beam_size)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--window", type=int, default=2000)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--server", help="also measure through this running server")
    where.add_argument("--serve", action="store_true",
                       help="also measure through a server started here on --model")
    parser.add_argument("--tracemalloc", action="store_true", help="Python-heap peak (slower)")
    args = parser.parse_args()

    options = DecodeOptions(beam_size=args.beam_size)
    with tempfile.TemporaryDirectory(prefix="nmt-bench-") as tmp:
        source = Path(tmp) / "input.txt"
        write_input(source, args.lines, args.sentences)
        config = JobConfig(source, Path(tmp) / "out.jsonl", window=args.window)
        local = LocalEngine.load(args.model, options, args.batch_size)
        rows = [measure("in-process", local, config, args.tracemalloc)]
        if args.server or args.serve:
            engine, thread = _server_engine(args, options)
            try:
                rows.append(measure("server (TranslateStream)", engine, config, args.tracemalloc))
            finally:
                engine.close()
                if thread is not None:
                    thread.stop()
    print_table(rows, args)


if __name__ == "__main__":
    main()
