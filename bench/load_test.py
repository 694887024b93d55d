"""Load test over gRPC and HTTP/JSON: throughput and latency under concurrent clients.

Starts `nmt serve` on 127.0.0.1 (batching on, then off), and for each
concurrency level and each protocol runs N clients for a fixed time, each
sending one sentence per request in a loop (the sentences below, in turn).
Both protocols reach the same server, model and batching queue: gRPC through
`nmt_api.client.AsyncTranslationClient`, HTTP as `POST /v1/translate` JSON
bodies (aiohttp client). Prints a Markdown table (sentences/s, p50/p95/p99
latency, errors) and the server's memory before and after, with the machine.

    .venv/bin/python bench/load_test.py                  # models/en-fr, both, 10 s per level
    .venv/bin/python bench/load_test.py --protocol http  # HTTP only
    .venv/bin/python bench/load_test.py --model runs/x --duration 60 --concurrency 32

Total time is about modes x levels x protocols x (warmup + duration) plus two server starts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run from a checkout without installing

from bench.support.inputs import TRAFFIC_MIX, machine  # noqa: E402
from bench.support.memory import rss_mb  # noqa: E402
from bench.support.server_process import start_server  # noqa: E402
from nmt.data.corpus import read_lines  # noqa: E402
from nmt.options import DEFAULT_MODEL_DIR  # noqa: E402
from nmt_api.client import AsyncTranslationClient  # noqa: E402

SENTENCES = [
    "Hello.", "How are you?", "I am hungry.", "Where is the station?", "It is raining today.",
    "I like this book.", "She is my sister.", "We are going home.", "Thank you very much.",
    "What time is it?", "The cat is sleeping.", "Can you help me?", "I don't understand.",
    "He works in Paris.", "Close the door, please.", "This is not my car.",
    "They arrived yesterday.", "Do you speak French?", "I need a new phone.",
    "The children are playing in the garden.", "Tom wants to learn French.",
    "I have never seen this film.", "We should leave before it gets dark.",
    "Could you tell me where the museum is?",
]


@contextlib.asynccontextmanager
async def sender(protocol: str, target: str, url: str, clients: int):
    """`send(sentence)`: one Translate call over `protocol`, with alignments, default options."""
    if protocol == "grpc":
        async with AsyncTranslationClient(target, timeout=60) as client:
            yield lambda sentence: client.translate([sentence], with_alignment=True)
        return
    import aiohttp

    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=60)) as session:
        async def send(sentence: str) -> dict:
            body = {"sentences": [sentence], "withAlignment": True}
            async with session.post(f"{url}/v1/translate", json=body) as response:
                answer = await response.json()
                if response.status != 200:
                    raise RuntimeError(f"HTTP {response.status}: {answer.get('message')}")
                return answer

        yield send


async def run_level(protocol: str, target: str, url: str, clients: int, duration: float,
                    warmup: float, sentences: list[str] = SENTENCES) -> dict:
    """`clients` concurrent loops of one-sentence requests; latencies after the warm-up."""
    latencies: list[float] = []
    errors = 0
    loop = asyncio.get_running_loop()
    start = loop.time()
    measure_from, end = start + warmup, start + warmup + duration

    async def one_client(index: int, send) -> None:
        nonlocal errors
        i = index
        while (now := loop.time()) < end:
            sentence = sentences[i % len(sentences)]
            i += clients
            try:
                await send(sentence)
            except Exception:  # counted, not fatal: the table reports them
                if now >= measure_from:
                    errors += 1
                continue
            if now >= measure_from:
                latencies.append(loop.time() - now)

    async with sender(protocol, target, url, clients) as send:
        await asyncio.gather(*(one_client(i, send) for i in range(clients)))
    ms = np.array(latencies) * 1000
    percentile = (lambda q: float(np.percentile(ms, q))) if len(ms) else (lambda q: float("nan"))
    return {"protocol": protocol, "clients": clients, "throughput": len(ms) / duration,
            "p50": percentile(50), "p95": percentile(95), "p99": percentile(99), "errors": errors}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR,
                        help="base directory of <version>/ SavedModels")
    parser.add_argument("--sentences", type=Path, default=TRAFFIC_MIX,
                        help="one sentence a line, sent in turn (default: the traffic mix of "
                             "NMT_DATA_DIR; the 24 short sentences above when it is absent)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds measured per level")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before measuring")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--modes", nargs="+", choices=["on", "off"], default=["on", "off"],
                        help="batching on and/or off")
    parser.add_argument("--protocol", nargs="+", choices=["grpc", "http"],
                        default=["grpc", "http"],
                        help="gRPC and/or HTTP/JSON, measured one after the other on one server")
    parser.add_argument("--server-args", default="",
                        help="more `nmt serve` options, e.g. '--max-batch-size 64 --workers 2'")
    args = parser.parse_args(argv)
    if not args.model.is_dir():
        print(f"no model at {args.model}; export one or pass --model", file=sys.stderr)
        return 2
    if args.sentences.is_file():
        sentences = [line for line in read_lines(args.sentences) if line.strip()]
        source = f"{len(sentences)} sentences of {args.sentences}, in turn"
    else:
        sentences, source = SENTENCES, f"the {len(SENTENCES)} short sentences of this script"
    log_path = Path(tempfile.mkdtemp(prefix="nmt-bench-")) / "server.log"
    print(f"Machine: {machine()}")
    print(f"Model: {args.model}; {args.duration:g} s per level after {args.warmup:g} s warm-up; "
          f"one sentence per request, {source}; server log: {log_path}"
          + (f"; server options: {args.server_args}" if args.server_args else ""))
    print()
    print("| batching | protocol | clients | sentences/s | p50 ms | p95 ms | p99 ms | errors |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    memory = []
    for mode in args.modes:
        process, target, url = start_server(args.model, mode == "on", log_path,
                                            args.server_args.split())
        try:
            started_rss = rss_mb(process.pid)
            for clients in args.concurrency:
                for protocol in args.protocol:
                    r = asyncio.run(run_level(protocol, target, url, clients, args.duration,
                                              args.warmup, sentences))
                    print(f"| {mode} | {protocol} | {clients} | {r['throughput']:.1f} | "
                          f"{r['p50']:.1f} | {r['p95']:.1f} | {r['p99']:.1f} | {r['errors']} |",
                          flush=True)
            memory.append((mode, started_rss, rss_mb(process.pid)))
        finally:
            process.terminate()
            process.wait(30)
    print()
    for mode, before, after in memory:
        print(f"Server memory (batching {mode}): {before:.0f} MB after warm-up, "
              f"{after:.0f} MB at the end")
    return 0


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    print(f"({time.monotonic() - started:.0f} s)")
    sys.exit(code)
