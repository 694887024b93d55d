"""Scaling simulation: several servers behind one port, a load ramp, and what the HPA would do.

Starts `--servers` `nmt serve` processes on one model and puts a round-robin TCP proxy
(asyncio) in front of them on one port, as a Kubernetes ClusterIP Service does: it
balances connections, not requests. Clients (HTTP/JSON, one sentence a request) ramp
from 1 to `--max-clients` over the first half of `--duration`, hold for a quarter and
ramp down. Every `--interval` seconds it scrapes each server's /metrics the way
Prometheus scrapes each pod, and prints what the HorizontalPodAutoscaler of
deploy/kubernetes/ would read: `nmt_queue_depth` averaged over the pods (now, and over
`--window` seconds as the adapter's `avg_over_time` gives it), the CPU use per pod, and
the replica count the HPA formula gives, desired = ceil(current * value / target) for
each metric, the larger of the two, within [minReplicas, maxReplicas]; with the
latency and throughput the clients saw.

    .venv/bin/python bench/scaling.py --servers 3 --duration 300 --max-clients 48
    .venv/bin/python bench/scaling.py --servers 3 --scale      # act on the recommendation

With `--scale` the proxy starts with `--min-replicas` servers in its rotation and adds or
removes servers (all loaded beforehand, as ready pods) every `--sync-period` seconds as
the HPA would: up at once, down only after `--downscale-window` seconds of lower
recommendations. Each client keeps one connection (`--connection per-client`, like a gRPC
channel) or opens one per request (`per-request`, like HTTP clients without keep-alive).
On one machine the servers share its cores: the simulation shows the signal, the formula
and the balancing, not the capacity of a cluster. Targets default to the manifests'.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
import math
import os
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run from a checkout without installing

from bench.load_test import SENTENCES  # noqa: E402
from bench.support.inputs import TRAFFIC_MIX, machine  # noqa: E402
from bench.support.memory import rss_mb  # noqa: E402
from nmt.data.corpus import read_lines  # noqa: E402
from nmt.options import DEFAULT_MODEL_DIR  # noqa: E402
from serving.testing import free_port  # noqa: E402

DEPLOY = REPO / "deploy" / "kubernetes"
QUEUE_METRIC = "nmt_queue_depth"
CPU_METRIC = "process_cpu_seconds_total"
SENTENCES_METRIC = "nmt_translated_sentences_total"
TOLERANCE = 0.1  # the HPA leaves the count alone within 10% of the target (its default)


@dataclasses.dataclass(frozen=True)
class HpaSettings:
    """The autoscaler's targets and bounds (read from deploy/kubernetes/ by `from_manifests`)."""

    queue_target: float
    cpu_target_percent: float
    min_replicas: int
    max_replicas: int
    downscale_window_s: float

    @classmethod
    def from_manifests(cls, deploy: Path = DEPLOY) -> HpaSettings:
        import yaml

        hpa = yaml.safe_load((deploy / "base" / "hpa.yaml").read_text(encoding="utf-8"))
        [queue] = yaml.safe_load((deploy / "components" / "monitoring" / "hpa-queue-depth.yaml")
                                 .read_text(encoding="utf-8"))
        [cpu] = [m for m in hpa["spec"]["metrics"] if m["type"] == "Resource"]
        return cls(queue_target=float(queue["value"]["pods"]["target"]["averageValue"]),
                   cpu_target_percent=float(cpu["resource"]["target"]["averageUtilization"]),
                   min_replicas=hpa["spec"]["minReplicas"], max_replicas=hpa["spec"]["maxReplicas"],
                   downscale_window_s=float(
                       hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"]))


def hpa_desired(current: int, value: float, target: float, tolerance: float = TOLERANCE) -> int:
    """The HPA's replica count for one metric: ceil(current * value / target).

    Args:
        current: replicas now (pods the metric was averaged over).
        value: the metric averaged over those pods.
        target: the metric's target average.
        tolerance: within this fraction of the target, the count stays.
    """
    if target <= 0:
        raise ValueError(f"target must be > 0. Received: target={target!r}")
    ratio = value / target
    if abs(ratio - 1.0) <= tolerance:
        return current
    return math.ceil(current * ratio)


def clamp(count: int, low: int, high: int) -> int:
    return max(low, min(high, count))


def clients_at(t: float, duration: float, max_clients: int) -> int:
    """Clients at time `t`: 1 → max over the first half, held for a quarter, back to 1."""
    up, hold = duration / 2, duration * 3 / 4
    if t < up:
        share = t / up
    elif t < hold:
        share = 1.0
    else:
        share = max(0.0, (duration - t) / (duration - hold))
    return max(1, round(1 + (max_clients - 1) * share))


def samples(text: str) -> dict[str, float]:
    """`{name: value}` of the unlabelled samples of a Prometheus text page."""
    from prometheus_client.parser import text_string_to_metric_families

    return {s.name: s.value for family in text_string_to_metric_families(text)
            for s in family.samples if not s.labels}


@dataclasses.dataclass
class Backend:
    """One server: where its HTTP API and metrics listen, and its process if we started it."""

    http_port: int
    metrics_port: int
    process: subprocess.Popen | None = None
    started_s: float = float("nan")  # seconds from start to /readyz 200


class RoundRobinProxy:
    """A TCP proxy on one port: each new connection goes to the next server in rotation.

    Like a ClusterIP Service it balances connections, not requests: a client that keeps
    its connection keeps its server. Taking servers out of the rotation (`set_active`)
    closes their connections, as a pod's termination does, and the clients reconnect
    to the servers left.

    Args:
        backends: the servers, in rotation order.
        active: how many of them (the first ones) are in the rotation, like the ready
            endpoints of a Service; all by default.
    """

    def __init__(self, backends: Sequence[Backend], active: int | None = None):
        self.backends = list(backends)
        self.active = len(self.backends) if active is None else active
        self.connections = [0] * len(self.backends)  # ever opened, per server
        self.closed_by_scaling = 0
        self._open: list[set[asyncio.StreamWriter]] = [set() for _ in self.backends]
        self._next = itertools.count()
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self, host: str = "127.0.0.1") -> int:
        self._server = await asyncio.start_server(self._handle, host, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for writers in self._open:
                for writer in list(writers):
                    writer.close()
            await self._server.wait_closed()

    def set_active(self, count: int) -> None:
        """Puts the first `count` servers in rotation; the others' connections are closed."""
        for index in range(count, len(self.backends)):
            self.closed_by_scaling += len(self._open[index]) // 2
            for writer in list(self._open[index]):
                writer.close()
        self.active = count

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        index = next(self._next) % max(1, self.active)
        self.connections[index] += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(
                "127.0.0.1", self.backends[index].http_port)
        except OSError:
            writer.close()
            return
        self._open[index].update((writer, up_writer))
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            self._open[index].difference_update((writer, up_writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


@dataclasses.dataclass
class Load:
    """What the clients saw: `(finish time, latency s)` per answer, and errors."""

    answers: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    errors: int = 0

    def since(self, start: float) -> list[float]:
        return [latency for finished, latency in self.answers if finished >= start]


async def client(url: str, sentences: Sequence[str], index: int, stop: asyncio.Event,
                 load: Load, per_request: bool) -> None:
    """One client: a sentence a request until `stop`; one connection unless `per_request`."""
    import aiohttp

    connector = aiohttp.TCPConnector(limit=1, force_close=per_request)
    loop = asyncio.get_running_loop()
    async with aiohttp.ClientSession(connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=120)) as session:
        for i in itertools.count(index):
            if stop.is_set():
                return
            started = loop.time()
            body = {"sentences": [sentences[i % len(sentences)]], "withAlignment": False}
            try:
                async with session.post(f"{url}/v1/translate", json=body) as response:
                    await response.read()
                    ok = response.status == 200
            except (TimeoutError, aiohttp.ClientError):
                ok = False
            if ok:
                load.answers.append((loop.time(), loop.time() - started))
            else:
                load.errors += 1
                await asyncio.sleep(0.1)


async def scrape(session, backend: Backend) -> dict[str, float]:
    """The unlabelled samples of one server's /metrics (empty if it does not answer)."""
    import aiohttp

    try:
        async with session.get(f"http://127.0.0.1:{backend.metrics_port}/metrics") as response:
            return samples(await response.text())
    except (TimeoutError, aiohttp.ClientError):
        return {}


@dataclasses.dataclass
class Row:
    """One line of the report."""

    t: float
    clients: int
    replicas: int
    queue_now: float
    queue_window: float
    cpu_percent: float
    desired_queue: int
    desired_cpu: int | None
    desired: int
    throughput: float
    p50_ms: float
    p95_ms: float
    errors: int

    HEADER = ("| t s | clients | replicas | queue/pod now | queue/pod avg | CPU/pod % "
              "| desired (queue) | desired (CPU) | desired | sentences/s | p50 ms | p95 ms "
              "| errors (total) |\n" + "|---:" * 13 + "|")

    def markdown(self) -> str:
        by_cpu = "–" if self.desired_cpu is None else self.desired_cpu
        return (f"| {self.t:.0f} | {self.clients} | {self.replicas} | {self.queue_now:.1f} | "
                f"{self.queue_window:.1f} | {self.cpu_percent:.0f} | {self.desired_queue} | "
                f"{by_cpu} | **{self.desired}** | {self.throughput:.1f} | "
                f"{self.p50_ms:.0f} | {self.p95_ms:.0f} | {self.errors} |")


class Autoscaler:
    """The HPA's arithmetic over the scraped pods, and (with `act`) its decisions.

    Args:
        settings: targets and bounds.
        cpu_request: cores requested per pod (CPU use is a share of it).
        window_s: seconds the queue depth is averaged over (the adapter's avg_over_time).
        act: change the proxy's rotation every `sync_period_s` seconds.
        sync_period_s: how often the HPA acts.
    """

    def __init__(self, settings: HpaSettings, cpu_request: float, window_s: float,
                 act: bool = False, sync_period_s: float = 15.0):
        self.settings, self.cpu_request = settings, cpu_request
        self.act, self.sync_period_s = act, sync_period_s
        self._queue: deque[tuple[float, float]] = deque()  # (t, average over pods)
        self._window_s = window_s
        self._recommendations: deque[tuple[float, int]] = deque()
        self._last_cpu: dict[int, tuple[float, float]] = {}
        self._last_sync = 0.0

    def observe(self, t: float, replicas: int, scraped: Sequence[dict[str, float]]
                ) -> tuple[float, float, float, int, int | None, int]:
        """`(queue now, queue over the window, CPU %, desired by queue, by CPU, desired)`."""
        s = self.settings
        queues = [pod.get(QUEUE_METRIC, 0.0) for pod in scraped]
        queue_now = float(np.mean(queues)) if queues else 0.0
        self._queue.append((t, queue_now))
        while self._queue[0][0] < t - self._window_s:
            self._queue.popleft()
        queue_window = float(np.mean([q for _, q in self._queue]))
        cpu = self._cpu_percent(t, scraped)
        by_queue = hpa_desired(replicas, queue_window, s.queue_target)
        # No CPU figure yet (the first scrape): the queue decides alone.
        by_cpu = None if math.isnan(cpu) else hpa_desired(replicas, cpu, s.cpu_target_percent)
        desired = clamp(max(by_queue, by_cpu or 0), s.min_replicas, s.max_replicas)
        self._recommendations.append((t, desired))
        while self._recommendations[0][0] < t - s.downscale_window_s:
            self._recommendations.popleft()
        return queue_now, queue_window, cpu, by_queue, by_cpu, desired

    def _cpu_percent(self, t: float, scraped: Sequence[dict[str, float]]) -> float:
        """CPU use per pod since the last scrape, as a percentage of the request."""
        uses = []
        for index, pod in enumerate(scraped):
            if CPU_METRIC not in pod:
                continue
            previous = self._last_cpu.get(index)
            self._last_cpu[index] = (t, pod[CPU_METRIC])
            if previous is not None and t > previous[0]:
                cores = (pod[CPU_METRIC] - previous[1]) / (t - previous[0])
                uses.append(100.0 * cores / self.cpu_request)
        return float(np.mean(uses)) if uses else float("nan")

    def replicas(self, t: float, current: int) -> int:
        """The count to run from `t`: up at once, down to the highest recent recommendation."""
        if not self.act or t - self._last_sync < self.sync_period_s or not self._recommendations:
            return current
        self._last_sync = t
        latest = self._recommendations[-1][1]
        if latest > current:
            return latest
        return min(current, max(count for _, count in self._recommendations))


async def run(backends: Sequence[Backend], sentences: Sequence[str], duration: float,
              max_clients: int, autoscaler: Autoscaler, interval: float = 1.0,
              per_request: bool = False, start_replicas: int | None = None,
              out=sys.stdout) -> list[Row]:
    """Runs the ramp through a proxy over `backends`, printing a row every `interval` s."""
    import aiohttp

    proxy = RoundRobinProxy(backends, start_replicas)
    url = f"http://127.0.0.1:{await proxy.start()}"
    load, rows = Load(), []
    clients: list[tuple[asyncio.Task, asyncio.Event]] = []
    tasks: list[asyncio.Task] = []
    loop = asyncio.get_running_loop()
    print(Row.HEADER, file=out, flush=True)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
        first = await asyncio.gather(*(scrape(session, b) for b in backends))
        begin = loop.time()
        while (t := loop.time() - begin) < duration:
            wanted = clients_at(t, duration, max_clients)
            while len(clients) < wanted:
                stop = asyncio.Event()
                # Clients start spread over the sentences, so that they do not ask for the
                # same sentence at once (which in-flight sharing would answer once).
                start = len(clients) * len(sentences) // max_clients
                task = loop.create_task(client(url, sentences, start, stop, load, per_request))
                clients.append((task, stop))
                tasks.append(task)
            while len(clients) > wanted:
                clients.pop()[1].set()  # finishes its request, then stops
            await asyncio.sleep(interval)
            scraped = await asyncio.gather(*(scrape(session, b) for b in backends))
            now = loop.time()
            rows.append(_row(now - begin, wanted, proxy.active, scraped[:proxy.active],
                             autoscaler, load.since(now - interval), interval, load.errors))
            print(rows[-1].markdown(), file=out, flush=True)
            proxy.set_active(autoscaler.replicas(rows[-1].t, proxy.active))
        final = await asyncio.gather(*(scrape(session, b) for b in backends))
    for _, stop in clients:
        stop.set()
    if tasks:
        await asyncio.wait(tasks, timeout=120)
    await proxy.close()
    _summary(load, duration, proxy, first, final, out)
    return rows


def _row(t: float, clients: int, replicas: int, scraped, autoscaler: Autoscaler,
         latencies: list[float], interval: float, errors: int) -> Row:
    queue_now, queue_window, cpu, by_queue, by_cpu, desired = autoscaler.observe(
        t, replicas, scraped)
    ms = np.array(latencies) * 1000
    p50, p95 = np.percentile(ms, [50, 95]) if len(ms) else (float("nan"), float("nan"))
    return Row(t, clients, replicas, queue_now, queue_window, cpu, by_queue, by_cpu, desired,
               len(ms) / interval, float(p50), float(p95), errors)


def _summary(load: Load, duration: float, proxy: RoundRobinProxy, first: list[float],
             final: Sequence[dict[str, float]], out) -> None:
    ms = np.array([latency for _, latency in load.answers]) * 1000
    print(file=out)
    if len(ms):
        p50, p95, p99 = np.percentile(ms, [50, 95, 99])
        print(f"All answers: {len(ms)} ({len(ms) / duration:.1f} sentences/s), p50 {p50:.0f} ms, "
              f"p95 {p95:.0f} ms, p99 {p99:.0f} ms, {load.errors} errors", file=out)
    if proxy.closed_by_scaling:
        print(f"{proxy.closed_by_scaling} connections closed when their server left the "
              "rotation (a request in flight on one counts as an error)", file=out)
    for index, backend in enumerate(proxy.backends):
        served = (final[index].get(SENTENCES_METRIC, float("nan"))
                  - first[index].get(SENTENCES_METRIC, 0.0))
        memory = rss_mb(backend.process.pid) if backend.process else float("nan")
        print(f"server {index}: {proxy.connections[index]} connections, {served:.0f} sentences, "
              f"ready after {backend.started_s:.1f} s, {memory:.0f} MB resident", file=out)


def start_servers(count: int, model: Path, log_dir: Path, extra: Sequence[str] = (),
                  timeout: float = 600) -> list[Backend]:
    """`count` `nmt serve` processes on 127.0.0.1, loading at once; returns when all are ready."""
    import urllib.error
    import urllib.request

    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(REPO)}
    env.pop("NMT_AUTH_TOKEN", None)
    backends, begin = [], time.monotonic()
    for index in range(count):
        backend = Backend(http_port=free_port(), metrics_port=free_port())
        command = [sys.executable, "-m", "nmt_cli", "serve", "--model", str(model),
                   "--host", "127.0.0.1", "--port", str(free_port()),
                   "--http-port", str(backend.http_port),
                   "--metrics-port", str(backend.metrics_port),
                   "--poll-interval", "0", "--grace", "2", *extra]
        log = open(log_dir / f"server-{index}.log", "a")  # kept open for the server's lifetime
        backend.process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=log)
        backends.append(backend)
    waiting = list(backends)
    while waiting:
        if time.monotonic() - begin > timeout:
            stop_servers(backends)
            raise SystemExit(f"servers not ready after {timeout:.0f} s; see {log_dir}")
        for backend in list(waiting):
            if backend.process.poll() is not None:
                stop_servers(backends)
                raise SystemExit(f"a server exited ({backend.process.returncode}); see {log_dir}")
            try:
                with urllib.request.urlopen(
                        f"http://127.0.0.1:{backend.http_port}/readyz", timeout=2) as response:
                    ready = response.status == 200
            except (urllib.error.URLError, OSError):
                ready = False
            if ready:
                backend.started_s = time.monotonic() - begin
                waiting.remove(backend)
        time.sleep(0.5)
    return backends


def stop_servers(backends: Sequence[Backend]) -> None:
    for backend in backends:
        if backend.process is not None and backend.process.poll() is None:
            backend.process.terminate()
    for backend in backends:
        if backend.process is not None:
            try:
                backend.process.wait(30)
            except subprocess.TimeoutExpired:
                backend.process.kill()


def main(argv: list[str] | None = None) -> int:
    manifests = HpaSettings.from_manifests()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR,
                        help="base directory of <version>/ SavedModels")
    parser.add_argument("--servers", type=int, default=3, help="server processes (pods)")
    parser.add_argument("--duration", type=float, default=300.0, help="seconds of load")
    parser.add_argument("--max-clients", type=int, default=48,
                        help="clients at the top of the ramp")
    parser.add_argument("--sentences", type=Path, default=TRAFFIC_MIX,
                        help="one sentence a line, sent in turn (default: the traffic mix; "
                             "bench/load_test.py's short sentences when it is absent)")
    parser.add_argument("--connection", choices=("per-client", "per-request"),
                        default="per-client",
                        help="one connection per client (sticky, like a gRPC channel) or a "
                             "new one per request")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between scrapes")
    parser.add_argument("--window", type=float, default=60.0,
                        help="seconds the queue depth is averaged over (the adapter's rule)")
    parser.add_argument("--queue-target", type=float, default=manifests.queue_target,
                        help="nmt_queue_depth target per pod (default: the HPA manifest's)")
    parser.add_argument("--cpu-target", type=float, default=manifests.cpu_target_percent,
                        help="CPU target, percent of the request (default: the manifest's)")
    parser.add_argument("--cpu-request", type=float, default=2.0,
                        help="cores requested per pod (the Deployment's)")
    parser.add_argument("--scale", action="store_true",
                        help="act on the recommendation: change the servers in rotation")
    parser.add_argument("--min-replicas", type=int, default=1,
                        help="servers in rotation at the start with --scale")
    parser.add_argument("--sync-period", type=float, default=15.0,
                        help="seconds between the HPA's decisions with --scale")
    parser.add_argument("--downscale-window", type=float, default=60.0,
                        help="seconds of lower recommendations before scaling down (the "
                             f"manifest has {manifests.downscale_window_s:g})")
    parser.add_argument("--server-args", default="--no-cache",
                        help="`nmt serve` options, e.g. '--no-cache --workers 2' (default "
                             "--no-cache: the clients go round the same sentences, which a "
                             "cache would answer after the first round, leaving no load)")
    args = parser.parse_args(argv)
    for name in ("servers", "max_clients", "min_replicas"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if not args.model.is_dir():
        print(f"no model at {args.model}; export one or pass --model", file=sys.stderr)
        return 2
    if args.sentences.is_file():
        sentences = [line for line in read_lines(args.sentences) if line.strip()]
    else:
        sentences = SENTENCES
    settings = dataclasses.replace(
        manifests, queue_target=args.queue_target, cpu_target_percent=args.cpu_target,
        min_replicas=args.min_replicas if args.scale else 1, max_replicas=args.servers,
        downscale_window_s=args.downscale_window)
    log_dir = Path(tempfile.mkdtemp(prefix="nmt-scaling-"))
    acting = f"acting every {args.sync_period:g} s" if args.scale else "not acting"
    print(f"Machine: {machine()}")
    print(f"Model: {args.model}; {args.servers} servers behind one round-robin TCP port "
          f"({args.connection} connections); clients 1 -> {args.max_clients} -> 1 over "
          f"{args.duration:g} s; {len(sentences)} sentences in turn; HPA targets: "
          f"nmt_queue_depth {settings.queue_target:g}/pod (averaged over {args.window:g} s), "
          f"CPU {settings.cpu_target_percent:g}% of {args.cpu_request:g} cores; "
          f"{acting}; logs in {log_dir}", flush=True)
    backends = start_servers(args.servers, args.model, log_dir, args.server_args.split())
    try:
        autoscaler = Autoscaler(settings, args.cpu_request, args.window, args.scale,
                                args.sync_period)
        print(f"Servers ready after {max(b.started_s for b in backends):.1f} s\n", flush=True)
        asyncio.run(run(backends, sentences, args.duration, args.max_clients, autoscaler,
                        args.interval, args.connection == "per-request",
                        args.min_replicas if args.scale else None))
    finally:
        stop_servers(backends)
    return 0


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    print(f"({time.monotonic() - started:.0f} s)")
    sys.exit(code)
