"""The translation cache's gain on realistic repeats: the same requests, cache off and on.

Two workloads (`--workload`), each sent over gRPC by `--clients` concurrent
clients, every client taking the next request of one fixed sequence when its
previous answer came:

- `ui`: user-interface strings, the msgids of
  `files-enfr/godot-extractable.pot`, requested with a Zipf-like popularity
  (the string of rank r drawn with probability proportional to r**-s,
  `--zipf-s`; ranks are a seeded shuffle of the file, so popularity is not
  tied to file order), 1 to `--per-request` strings per request.
- `po-rerun`: the PO files of `files-enfr/` (the four `bench/po_files.py`
  scores) translated `--passes` times, `--per-request` messages per request
  sent as text documents: a localisation job run again, the most common
  repeat in practice (here on unchanged files: the bound of a re-run after a
  template change, whose new messages would miss). Chosen over this
  repository's own docs (`docs/*.md`), whose sentences barely repeat one
  another (a few percent): their repeats would only come from requesting the
  same pages again, which the Zipf draws of `ui` already measure.

The requests are built in `bench/support/cache_workloads.py`. The workload's repeat
rate is printed first: the share of its sentences seen before in the
sequence, counted on the sentences as the server keys them (placeholders
taken out, documents split into sentences, by the functions
`serving/servicer.py` uses; blank ones are answered without the cache and
left out). The cache's hit rate is at most that: a sentence given twice in
one request is translated once but looked up as two misses, and one that
comes again while another request's copy is still being translated misses
and is translated again.

For each cache setting (`--caches`: `off` = `--no-cache`, `on` = the
defaults, `small` = `--cache-mb` a quarter of what the workload put in the
full cache, so that it evicts; `--small-cache-mb` sets it) it starts
`nmt serve` (batching on), warms it with requests of other sentences (the
traffic mix, so every setting's model gets the same warm-up), then sends the
workload and prints one table with the machine: requests/s, sentences/s,
latency p50/p95/p99, the hit rate, model sentences and evictions during the
run (/metrics), `nmt_cache_entries` and `nmt_cache_bytes` at the end, the
server's resident memory after warm-up and at the end, and each setting's
ratio to `off`.

    .venv/bin/python bench/cache.py                            # both workloads, off/on/small
    .venv/bin/python bench/cache.py --workload ui --requests 3000 --zipf-s 0.9
    .venv/bin/python bench/cache.py --workload ui \\
        --pot ../shared/data/files-enfr/godot-editor.pot       # 6,439 strings: fewer repeats
    .venv/bin/python bench/cache.py --workload po-rerun --caches off on --clients 16

Total time: workloads x settings x (server start, about 15 s, + warm-up + run).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import math
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run from a checkout without installing

from bench.po_files import SCORED  # noqa: E402
from bench.soak import MB, metric_values, process_stats  # noqa: E402
from bench.support.cache_workloads import (  # noqa: E402
    DOCUMENTS,
    SENTENCES,
    Repeats,
    Request,
    Workload,
    keyed_sentences,
    read_messages,
    rerun_requests,
    ui_requests,
    warmup_pool,
    warmup_requests,
    workload_repeats,
)
from bench.support.inputs import add_model_and_data_arguments, machine  # noqa: E402
from bench.support.server_process import start_server  # noqa: E402
from nmt.paths import version_dirs  # noqa: E402
from serving.cache import DEFAULT_MAX_ENTRIES, DEFAULT_MAX_MB  # noqa: E402
from serving.testing import free_port, scrape_metrics  # noqa: E402

UI, PO_RERUN = "ui", "po-rerun"
WORKLOADS = (UI, PO_RERUN)
UI_POT = "godot-extractable.pot"  # in files-enfr/
CACHES = ("off", "on", "small")  # run in this order: `small` is sized from `on`
SMALL_SHARE = 0.25  # the small cache holds this share of what the workload filled `on` with
MAX_ERRORS_SHOWN = 5


# --- the workloads -------------------------------------------------------------------------

def build_workload(name: str, args: argparse.Namespace) -> Workload | str:
    """The workload `name`, or why it is skipped (its files are absent)."""
    files_dir = args.data / "files-enfr"
    if name == UI:
        pot = args.pot or files_dir / UI_POT
        if not pot.is_file():
            return f"no {pot} (pass --pot or --data)"
        strings = list(dict.fromkeys(read_messages(pot)))
        requests = ui_requests(strings, args.requests, args.zipf_s, args.per_request, args.seed)
        description = (f"{len(requests):,} requests of 1 to {args.per_request} UI strings drawn "
                       f"from the {len(strings):,} msgids of {pot.name}, Zipf popularity "
                       f"s={args.zipf_s:g}, seed {args.seed}; sent as sentences")
        kind = SENTENCES
    else:
        paths = [files_dir / file for file in args.po_files]
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            return f"no {', '.join(missing)} (pass --po-files or --data)"
        files = [read_messages(p) for p in paths]
        requests = rerun_requests(files, args.passes, args.per_request)
        description = (f"{', '.join(p.name for p in paths)} ({sum(map(len, files)):,} messages) "
                       f"translated {args.passes} times, {args.per_request} messages a request "
                       "sent as text documents")
        kind = DOCUMENTS
    avoid = {s for r in requests for s in keyed_sentences(r)}
    warmup = warmup_requests(warmup_pool(), args.warmup_requests, args.per_request, kind, avoid)
    return Workload(name, description, requests, workload_repeats(requests), warmup)




# --- sending and measuring -----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Timing:
    """What the clients saw of one sequence.

    Attributes:
        latencies_s: seconds from send to answer of each request answered.
        errors: requests that got an error.
        examples: the first errors, as text.
        wall_s: seconds from the first send to the last answer.
    """

    latencies_s: tuple[float, ...]
    errors: int
    examples: tuple[str, ...]
    wall_s: float


Send = Callable[[Request], Awaitable[object]]


async def run_requests(requests: Sequence[Request], clients: int, send: Send) -> Timing:
    """Sends `requests` in order from `clients` concurrent loops, each taking the next
    request when its previous answer came."""
    if clients < 1:
        raise ValueError(f"clients must be >= 1. Received: clients={clients!r}")
    loop = asyncio.get_running_loop()
    pending = iter(requests)  # shared: next() never awaits, so each request goes once
    latencies: list[float] = []
    errors: list[str] = []

    async def client() -> None:
        for request in pending:
            started = loop.time()
            try:
                await send(request)
            except Exception as error:  # counted and shown; the run goes on
                errors.append(f"{type(error).__name__}: {error}"[:300])
                continue
            latencies.append(loop.time() - started)

    start = loop.time()
    await asyncio.gather(*(client() for _ in range(clients)))
    return Timing(tuple(latencies), len(errors), tuple(errors[:MAX_ERRORS_SHOWN]),
                  loop.time() - start)


def latency_ms(latencies_s: Sequence[float]) -> dict[str, float]:
    """`{"p50", "p95", "p99"}` in milliseconds (NaN with no latency)."""
    ms = np.asarray(latencies_s, dtype=np.float64) * 1000
    return {f"p{q}": float(np.percentile(ms, q)) if ms.size else math.nan
            for q in (50, 95, 99)}


@contextlib.asynccontextmanager
async def grpc_sender(target: str, timeout: float):
    """`send(request)`: one Translate call, default options, no alignments (what a UI or a
    localisation tool asks for)."""
    from nmt_api.client import AsyncTranslationClient

    async with AsyncTranslationClient(target, timeout=timeout) as client:
        async def send(request: Request):
            if request.kind == SENTENCES:
                return await client.translate(list(request.texts), with_alignment=False)
            return await client.translate_documents(list(request.texts), "text",
                                                    with_alignment=False)

        yield send


def server_values(scraped: Mapping[tuple[str, tuple], float]) -> dict[str, float]:
    """`bench.soak.metric_values` of a /metrics scrape, with `model_sentences`
    (`nmt_translated_sentences_total`: sentences the model translated)."""
    values = metric_values(scraped)
    values["model_sentences"] = sum(v for (name, _), v in scraped.items()
                                    if name == "nmt_translated_sentences_total")
    return values


@dataclasses.dataclass(frozen=True)
class CacheFigures:
    """The server's side of a run, from /metrics before and after it.

    Attributes:
        hit_rate: lookups answered by the cache during the run (NaN: no lookup).
        model_sentences: sentences the model translated during the run.
        evictions: translations evicted during the run.
        entries / cache_mb: `nmt_cache_entries`, `nmt_cache_bytes` (MiB) at the end.
        workload_mb: what the run added to `nmt_cache_bytes` (MiB).
    """

    hit_rate: float
    model_sentences: float
    evictions: float
    entries: float
    cache_mb: float
    workload_mb: float


def cache_figures(before: Mapping[str, float], after: Mapping[str, float]) -> CacheFigures:
    """From two `server_values` (a metric not yet exported counts as 0)."""
    def delta(key: str) -> float:
        return after.get(key, 0.0) - before.get(key, 0.0)

    lookups = delta("cache_hits") + delta("cache_misses")
    return CacheFigures(delta("cache_hits") / lookups if lookups else math.nan,
                        delta("model_sentences"), delta("cache_evictions"),
                        after.get("cache_entries", 0.0), after.get("cache_mb", 0.0),
                        delta("cache_mb"))


@dataclasses.dataclass(frozen=True)
class Row:
    """One cache setting's run of a workload.

    Attributes:
        cache: `off`, `on` or `small`.
        options: the `nmt serve` options that set it.
        requests / sentences: what the workload sent (sentences as keyed).
        timing: the clients' side.
        server: the server's side.
        rss_warm_mb / rss_end_mb: the server's resident memory after the warm-up
            and at the end (MiB).
    """

    cache: str
    options: str
    requests: int
    sentences: int
    timing: Timing
    server: CacheFigures
    rss_warm_mb: float
    rss_end_mb: float

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.timing.wall_s if self.timing.wall_s > 0 else math.nan

    @property
    def sentences_per_s(self) -> float:
        return self.sentences / self.timing.wall_s if self.timing.wall_s > 0 else math.nan


def small_cache_mb(workload_mb: float, share: float = SMALL_SHARE) -> float:
    """`--cache-mb` (10**6 bytes) holding `share` of `workload_mb` (MiB), at least 0.001."""
    if not workload_mb > 0:
        raise ValueError("the full cache held nothing of the workload, so a smaller one "
                         f"cannot be sized from it; pass --small-cache-mb. "
                         f"Received: workload_mb={workload_mb!r}")
    return max(round(share * workload_mb * MB / 1e6, 3), 0.001)


def cache_options(cache: str, small_mb: float | None) -> list[str]:
    """The `nmt serve` options of a cache setting."""
    if cache == "off":
        return ["--no-cache"]
    if cache == "on":
        return []
    if cache == "small" and small_mb is not None:
        return ["--cache-mb", f"{small_mb:g}"]
    raise ValueError(f"cache must be one of {CACHES} (small with its size). "
                     f"Received: cache={cache!r}, small_mb={small_mb!r}")


# --- the table -----------------------------------------------------------------------------

HEADER = ("| cache | requests/s | sentences/s | p50 ms | p95 ms | p99 ms | hit rate | "
          "model sentences | evictions | cache entries | cache MB | server RSS MB, warm → end "
          "| errors |")
ALIGN = "|---|" + "---:|" * 12


def _number(x: float, digits: int = 1) -> str:
    return "–" if math.isnan(x) else f"{x:,.{digits}f}"


def _ratio(a: float, b: float) -> str:
    return "–" if not (b and math.isfinite(a) and math.isfinite(b)) else f"×{a / b:.2f}"


def _percent(x: float) -> str:
    return "–" if math.isnan(x) else f"{x:.1%}"


def row_line(row: Row) -> str:
    ms, s = latency_ms(row.timing.latencies_s), row.server
    label = row.cache + (f" (`{row.options}`)" if row.options else " (defaults)")
    return (f"| {label} | {_number(row.requests_per_s)} | {_number(row.sentences_per_s)} | "
            f"{_number(ms['p50'])} | {_number(ms['p95'])} | {_number(ms['p99'])} | "
            f"{_percent(s.hit_rate)} | {s.model_sentences:,.0f} | {s.evictions:,.0f} | "
            f"{s.entries:,.0f} | {_number(s.cache_mb)} | {_number(row.rss_warm_mb, 0)} → "
            f"{_number(row.rss_end_mb, 0)} | {row.timing.errors} |")


def ratio_line(row: Row, base: Row) -> str:
    """`row` against `base` (cache off): ratios of the rates, latencies and model work,
    difference of the memory at the end."""
    ms, base_ms = latency_ms(row.timing.latencies_s), latency_ms(base.timing.latencies_s)
    rss = row.rss_end_mb - base.rss_end_mb
    return (f"| {row.cache} ÷ {base.cache} | {_ratio(row.requests_per_s, base.requests_per_s)} | "
            f"{_ratio(row.sentences_per_s, base.sentences_per_s)} | "
            + " | ".join(_ratio(ms[q], base_ms[q]) for q in ("p50", "p95", "p99"))
            + f" | | {_ratio(row.server.model_sentences, base.server.model_sentences)} | | | | "
            + ("–" if math.isnan(rss) else f"{rss:+,.0f} at the end") + " | |")


def table_lines(rows: Sequence[Row]) -> list[str]:
    """The Markdown table: one line per setting, then each setting against `off`."""
    lines = [HEADER, ALIGN, *(row_line(r) for r in rows)]
    base = next((r for r in rows if r.cache == "off"), None)
    if base is not None:
        lines += [ratio_line(r, base) for r in rows if r is not base]
    return lines


def repeats_line(repeats: Repeats) -> str:
    return (f"Repeat rate: {_percent(repeats.rate)} of the workload's {repeats.sentences:,} "
            f"sentences were seen before in it ({repeats.distinct:,} distinct), counted as the "
            "server keys them.")


# --- main ----------------------------------------------------------------------------------

def measure(args: argparse.Namespace, workload: Workload, cache: str, small_mb: float | None,
            log_path: Path) -> Row:
    """Starts `nmt serve` with `cache`'s options, warms it, sends the workload."""
    options = cache_options(cache, small_mb)
    metrics_port = free_port()
    process, target, _ = start_server(args.model, True, log_path,
                                      [*options, *args.server_args.split()],
                                      metrics_port=metrics_port)
    try:
        return asyncio.run(_measure(args, workload, cache, " ".join(options), process.pid,
                                    target, metrics_port))
    finally:
        process.terminate()
        process.wait(30)


async def _measure(args, workload: Workload, cache: str, options: str, pid: int, target: str,
                   metrics_port: int) -> Row:
    async with grpc_sender(target, args.timeout) as send:
        warm = await run_requests(workload.warmup, args.clients, send)
        if warm.errors:
            raise SystemExit(f"the warm-up got {warm.errors} errors: {warm.examples}")
        before, rss_warm = server_values(scrape_metrics(metrics_port)), process_stats(pid)[0]
        timing = await run_requests(workload.requests, args.clients, send)
        after, rss_end = server_values(scrape_metrics(metrics_port)), process_stats(pid)[0]
    return Row(cache, options, len(workload.requests), workload.repeats.sentences, timing,
               cache_figures(before, after), rss_warm, rss_end)


def run_workload(args: argparse.Namespace, workload: Workload, log_path: Path) -> list[Row]:
    rows: list[Row] = []
    small_mb = args.small_cache_mb
    for cache in (c for c in CACHES if c in args.caches):
        if cache == "small" and small_mb is None:
            on = next(r for r in rows if r.cache == "on")
            small_mb = small_cache_mb(on.server.workload_mb)
        rows.append(measure(args, workload, cache, small_mb, log_path))
        print(row_line(rows[-1]), file=sys.stderr, flush=True)  # progress; the table follows
    return rows


def print_workload(workload: Workload) -> None:
    print(f"### {workload.name}: {workload.description}")
    print()
    print(repeats_line(workload.repeats))
    print(f"Warm-up: {len(workload.warmup)} requests of other sentences, left out of the figures "
          "(their translations stay in the cache: entries and MB include them).")
    print(flush=True)


def print_rows(rows: Sequence[Row]) -> None:
    for line in table_lines(rows):
        print(line)
    for row in rows:
        for example in row.timing.examples:
            print(f"  error ({row.cache}): {example}")
    print()


NOTES = (
    "Sentences: the workload's, as the server keys them (hits included). Hit rate: "
    "`nmt_cache_lookups_total` during the run; below the repeat rate where a sentence came "
    "twice in one request or again while it was being translated (misses). Model sentences: "
    "`nmt_translated_sentences_total` during the run. Cache entries and MB (MiB): "
    "`nmt_cache_entries`, `nmt_cache_bytes` (the server's estimate) at the end. Server RSS: "
    "resident memory of the server process, after the warm-up → at the end; it also moves "
    "with TensorFlow's own caches, so compare it with the cache MB column."
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_and_data_arguments(parser)
    parser.add_argument("--workload", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--caches", nargs="+", choices=CACHES, default=list(CACHES),
                        help="cache settings measured (run in the order off, on, small)")
    parser.add_argument("--small-cache-mb", type=float,
                        help=f"--cache-mb of `small` (default: {SMALL_SHARE:g} of what the "
                             "workload put in the full cache)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent gRPC clients")
    parser.add_argument("--per-request", type=int, default=3,
                        help="ui: at most this many strings a request (1 to N, uniform); "
                             "po-rerun: messages a request")
    parser.add_argument("--requests", type=int, default=1000, help="ui: requests drawn")
    parser.add_argument("--zipf-s", type=float, default=1.1, help="ui: Zipf exponent")
    parser.add_argument("--pot", type=Path,
                        help=f"ui: the strings' PO/POT file (default: files-enfr/{UI_POT})")
    parser.add_argument("--seed", type=int, default=0, help="ui: seed of the draws")
    parser.add_argument("--po-files", nargs="+", default=list(SCORED),
                        help="po-rerun: file names in files-enfr/")
    parser.add_argument("--passes", type=int, default=2, help="po-rerun: times each file is sent")
    parser.add_argument("--warmup-requests", type=int, default=100,
                        help="requests of other sentences before measuring")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per request")
    parser.add_argument("--server-args", default="", help="more `nmt serve` options")
    args = parser.parse_args(argv)
    for name in ("clients", "per_request", "requests", "passes"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1. "
                         f"Received: {getattr(args, name)!r}")
    if args.warmup_requests < 0:
        parser.error(f"--warmup-requests must be >= 0. Received: {args.warmup_requests!r}")
    if args.small_cache_mb is not None and not args.small_cache_mb > 0:
        parser.error(f"--small-cache-mb must be > 0. Received: {args.small_cache_mb!r}")
    if "small" in args.caches and "on" not in args.caches and args.small_cache_mb is None:
        parser.error("`small` is sized from the `on` run: add `on` to --caches or pass "
                     "--small-cache-mb")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    versions = version_dirs(args.model)
    if not versions:
        print(f"no model at {args.model}; export one or pass --model", file=sys.stderr)
        return 2
    log_path = Path(tempfile.mkdtemp(prefix="nmt-bench-cache-")) / "server.log"
    print(f"Machine: {machine()}")
    print(f"Model: {args.model} version {max(versions)}; {args.clients} gRPC clients; cache "
          f"defaults {DEFAULT_MAX_ENTRIES:,} entries, {DEFAULT_MAX_MB:g} MB; server log: "
          f"{log_path}" + (f"; server options: {args.server_args}" if args.server_args else ""))
    print()
    measured, errors = 0, 0
    for name in args.workload:
        workload = build_workload(name, args)
        if isinstance(workload, str):
            print(f"### {name}: skipped, {workload}\n")
            continue
        print_workload(workload)
        rows = run_workload(args, workload, log_path)
        print_rows(rows)
        measured += 1
        errors += sum(r.timing.errors for r in rows)
    print(NOTES)
    return 2 if not measured else 1 if errors else 0


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    print(f"({time.monotonic() - started:.0f} s)")
    sys.exit(code)
