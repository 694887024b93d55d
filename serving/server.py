"""The translation server: gRPC service, health, reflection, HTTP/JSON, metrics, shutdown.

Start-up order: the ports open at once with health NOT_SERVING (`/readyz`
503); the model loads and warms up in a thread; health turns SERVING. The
base directory is then polled for new versions. On SIGTERM health turns
NOT_SERVING, new calls are refused (gRPC and HTTP) and calls in flight get
`grace_s` seconds to finish. Named glossaries (`glossaries_dir`) are loaded
before the ports open and their files polled with the model's.

gRPC and HTTP/JSON (`serving.http_api`, on the same event loop) call the
same `TranslationServicer`: one model, one batching queue.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import signal
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import CollectorRegistry

from nmt.inference.precision import AUTO, check_load_choice
from nmt.types import DecodeOptions, Translation
from nmt_api.protos import DEFAULT_GRPC_PORT, SERVICE_NAME
from serving.batching import ALIGN, Batcher, BatchingConfig
from serving.cache import CacheConfig, TranslationCache
from serving.glossaries import GlossaryStore
from serving.http_api import HttpApi
from serving.interceptors import BearerTokenInterceptor, KeyInterceptor, RequestInterceptor
from serving.keys import usage_path_for
from serving.metrics import MetricsHTTPServer, ServingMetrics
from serving.model_store import ModelStore, translator_loader
from serving.quotas import KeyMetrics, Quotas
from serving.servicer import TranslationServicer, generic_handler
from serving.validation import Limits

log = logging.getLogger("nmt.serving.server")

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


DEFAULT_METRICS_PORT = 9090
# Off in the dataclass (tests, embedding); `nmt serve` turns it on by default.
DEFAULT_HTTP_PORT = 8080
NO_CACHE = CacheConfig(max_entries=0)
# gRPC reads connection ages as milliseconds in a 32-bit integer: about 24.8 days.
MAX_CONNECTION_AGE_S = (2**31 - 1) // 1000


@dataclasses.dataclass(frozen=True)
class ServerConfig:
    """Everything `nmt serve` can set; validated once here.

    Attributes:
        model_dir: base directory of `<version>/` SavedModels.
        host: address to listen on (gRPC, HTTP and metrics).
        port: gRPC port; 0 picks a free one.
        metrics_port: Prometheus port; 0 disables the metrics endpoint.
        http_port: HTTP/JSON API and page port; 0 disables them.
        http_host: address for HTTP when it differs from `host`, e.g.
            127.0.0.1 behind a reverse proxy; None means `host`.
        batching: dynamic batching settings.
        cache: the translation cache's limits (off in the dataclass; `nmt
            serve` turns it on with `serving.cache`'s defaults).
        limits: request limits.
        poll_interval_s: how often the model directory is checked for new
            versions; 0 disables the check.
        grace_s: time calls in flight get to finish at shutdown.
        stream_window: requests of one stream translated at once.
        tls_cert / tls_key: PEM files; both or neither (gRPC only: put HTTP
            behind a reverse proxy that terminates TLS).
        auth_token: when set, calls need `authorization: Bearer <token>`
            (gRPC metadata or HTTP header).
        precision: the export's path to translate on (`nmt.inference.precision`):
            `auto` (bfloat16 where the CPU has a bfloat16 unit, else
            float32), `float32` or `bfloat16`; chosen again at each load.
        glossaries_dir: directory of named glossaries, `*.tsv` and `*.csv`
            (`serving.glossaries`), checked for changes every
            `poll_interval_s`; None: none.
        keys_file: API keys with quotas (`serving.keys`, made by `nmt keys`):
            every call but health and reflection (gRPC) and the probes, page
            and OpenAPI description (HTTP) needs a key of the file, which is
            reloaded when it changes (every `poll_interval_s`); None: no keys.
        keys_usage_file: where the keys' usage of the day is saved, so a
            restart keeps it; None: beside `keys_file` (`keys.usage.json`).
        max_connection_age_s: each gRPC connection is closed (GOAWAY; the client
            reconnects at its next call) after about this many seconds, so that
            clients behind a connection-level balancer (a Kubernetes Service)
            spread over replicas added later; 0 keeps connections as long as the
            clients do.
        max_connection_age_grace_s: how long calls in flight on an aged
            connection may run before it is cut; None: until they end.
    """

    model_dir: Path
    host: str = "0.0.0.0"
    port: int = DEFAULT_GRPC_PORT
    metrics_port: int = DEFAULT_METRICS_PORT
    http_port: int = 0
    http_host: str | None = None
    batching: BatchingConfig = BatchingConfig()
    cache: CacheConfig = NO_CACHE
    limits: Limits = Limits()
    poll_interval_s: float = 10.0
    grace_s: float = 10.0
    stream_window: int = 8
    tls_cert: Path | None = None
    tls_key: Path | None = None
    auth_token: str | None = dataclasses.field(default=None, repr=False)
    precision: str = AUTO
    glossaries_dir: Path | None = None
    keys_file: Path | None = None
    keys_usage_file: Path | None = None
    max_connection_age_s: float = 0.0
    max_connection_age_grace_s: float | None = None

    def __post_init__(self) -> None:
        check_load_choice(self.precision)
        if self.glossaries_dir is not None and not Path(self.glossaries_dir).is_dir():
            raise FileNotFoundError(
                f"glossary directory {self.glossaries_dir} does not exist: create it and put "
                "glossary files (name.tsv: source<TAB>target a line) in it, or leave "
                "--glossaries out")
        for name in ("port", "metrics_port", "http_port"):
            value = getattr(self, name)
            if not isinstance(value, int) or not 0 <= value <= 65535:
                raise ValueError(f"{name} must be in [0, 65535]. Received: {name}={value!r}")
        for name in ("poll_interval_s", "grace_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0. Received: {name}={getattr(self, name)!r}")
        if self.stream_window < 1:
            raise ValueError(f"stream_window must be >= 1. Received: {self.stream_window!r}")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("TLS needs both a certificate and a key (--tls-cert and --tls-key). "
                             f"Received: tls_cert={self.tls_cert!r}, tls_key={self.tls_key!r}")
        for path in (self.tls_cert, self.tls_key):
            if path is not None and not Path(path).is_file():
                raise FileNotFoundError(f"TLS file not found: {path}")
        if self.auth_token == "":
            raise ValueError("auth_token is empty; unset it to disable auth, or give a token")
        if self.keys_file is not None and self.auth_token:
            raise ValueError("--keys and a bearer token (NMT_AUTH_TOKEN) both turn auth on: use "
                             "one (keys have names, limits and can be revoked one by one)")
        self._check_connection_age()

    def _check_connection_age(self) -> None:
        age, grace = self.max_connection_age_s, self.max_connection_age_grace_s
        if age != 0 and not 1 <= age <= MAX_CONNECTION_AGE_S:
            raise ValueError(
                f"max_connection_age_s must be 0 (off) or between 1 and {MAX_CONNECTION_AGE_S} "
                "seconds: pass e.g. --max-connection-age 60, or 0 to keep connections open. "
                f"Received: max_connection_age_s={age!r}")
        if grace is None:
            return
        if age == 0:
            raise ValueError(
                "max_connection_age_grace_s applies only to aged connections: add "
                "--max-connection-age SECONDS, or drop --max-connection-age-grace. "
                f"Received: max_connection_age_grace_s={grace!r}, max_connection_age_s=0")
        if not 0 <= grace <= MAX_CONNECTION_AGE_S:
            raise ValueError(
                f"max_connection_age_grace_s must be between 0 and {MAX_CONNECTION_AGE_S} "
                "seconds, or unset to let calls on an aged connection run to their end. "
                f"Received: max_connection_age_grace_s={grace!r}")


class TranslationServer:
    """The service, its health and reflection services and its metrics endpoint.

    Args:
        config: server settings.
        registry: Prometheus registry for the metrics; a fresh one if None.
        loader: `path -> Translator` (tests wrap `Translator.load`); by default
            `Translator.load` on the path `config.precision`.
    """

    def __init__(self, config: ServerConfig, *, registry: CollectorRegistry | None = None,
                 loader=None):
        self.config = config
        self.metrics = ServingMetrics(registry)
        self.store = ModelStore(config.model_dir, self.metrics,
                                loader or translator_loader(config.precision))
        self.glossaries = GlossaryStore(config.glossaries_dir, self.metrics)
        # A bad keys file refuses to start (KeysFileError, a ValueError saying what to fix).
        self.quotas = None if config.keys_file is None else Quotas(
            config.keys_file, metrics=KeyMetrics(self.metrics.registry),
            usage_path=config.keys_usage_file or usage_path_for(config.keys_file))
        self.health = health.aio.HealthServicer()
        self._batcher: Batcher | None = None
        self._server: grpc.aio.Server | None = None
        self._metrics_http: MetricsHTTPServer | None = None
        self._http: HttpApi | None = None
        self.http_port: int | None = None
        self._model_task: asyncio.Task | None = None
        self._glossary_task: asyncio.Task | None = None
        self._keys_task: asyncio.Task | None = None
        self._serving = asyncio.Event()
        self.port = config.port

    @property
    def metrics_port(self) -> int | None:
        return self._metrics_http.port if self._metrics_http else None

    async def start(self) -> None:
        """Opens the ports (health NOT_SERVING) and starts loading the model."""
        config = self.config
        cache = (TranslationCache(config.cache, self.metrics) if config.cache.enabled
                 else None)
        self._batcher = Batcher(self._run_batch, config.batching, self.metrics, cache,
                                version=lambda: self.store.version)
        self._batcher.start()
        await self._refresh_glossaries()  # before the ports open: a name works from the start
        servicer = TranslationServicer(self.store, self._batcher, config.limits,
                                       config.stream_window, self.glossaries)
        self._server = grpc.aio.server(interceptors=self._interceptors(),
                                       options=grpc_server_options(config))
        self._server.add_generic_rpc_handlers((generic_handler(servicer),))
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self._server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), self._server)
        self.port = self._bind(f"{_host(config.host)}:{config.port}")
        await self._set_health(NOT_SERVING)
        await self._server.start()
        if config.http_port:
            self._http = HttpApi(servicer, self.metrics, config.limits,
                                 ready=self._serving.is_set, auth_token=config.auth_token,
                                 keys=self.quotas)
            self.http_port = await self._http.start(config.http_host or config.host,
                                                    config.http_port)
        if config.metrics_port:
            self._metrics_http = MetricsHTTPServer(self.metrics.registry, config.host,
                                                   config.metrics_port)
            self._metrics_http.start()
        self._model_task = asyncio.get_running_loop().create_task(self._keep_model_fresh())
        if config.glossaries_dir is not None and config.poll_interval_s:
            self._glossary_task = asyncio.get_running_loop().create_task(
                self._keep_glossaries_fresh())
        if self.quotas is not None and config.poll_interval_s:
            self._keys_task = asyncio.get_running_loop().create_task(
                self.quotas.keep_fresh(config.poll_interval_s))

    def _run_batch(self, kind: str, inputs: list, options: DecodeOptions | None
                   ) -> tuple[int, list[Translation]]:
        """The batcher's model call (`serving.batching.RunBatch`) on the store."""
        if kind == ALIGN:
            sources, targets = zip(*inputs, strict=True)
            return self.store.align(list(sources), list(targets))
        return self.store.translate(inputs, options)

    def _interceptors(self) -> list[grpc.aio.ServerInterceptor]:
        interceptors = [RequestInterceptor(self.metrics)]  # outermost: sees every outcome
        if self.config.auth_token:
            interceptors.append(BearerTokenInterceptor(self.config.auth_token))
        if self.quotas is not None:  # after RequestInterceptor, which maps its errors
            interceptors.append(KeyInterceptor(self.quotas))
        return interceptors

    def _bind(self, address: str) -> int:
        try:
            if self.config.tls_cert is None:
                return self._server.add_insecure_port(address)
            key = Path(self.config.tls_key).read_bytes()
            cert = Path(self.config.tls_cert).read_bytes()
            credentials = grpc.ssl_server_credentials([(key, cert)])
            return self._server.add_secure_port(address, credentials)
        except RuntimeError as error:
            raise ValueError(f"cannot listen on {address} ({error}); is the port in use? "
                             "Choose another with --port.") from error

    async def _set_health(self, status) -> None:
        for service in ("", SERVICE_NAME):
            await self.health.set(service, status)

    async def _keep_model_fresh(self) -> None:
        """Loads the model, turns health SERVING, then polls for new versions."""
        while True:
            try:
                await asyncio.to_thread(self.store.refresh)
            except OSError as error:  # e.g. a version directory being replaced; retry later
                log.warning(json.dumps({"event": "model_watch_failed", "error": str(error)}))
            if self.store.version is not None and not self._serving.is_set():
                self._serving.set()
                await self._set_health(SERVING)
            elif self.store.version is None:
                log.warning(json.dumps({"event": "no_model", "model_dir": str(self.store.base_dir),
                                        "hint": "waiting for a loadable <version>/ directory"}))
            if not self.config.poll_interval_s:
                return
            await asyncio.sleep(self.config.poll_interval_s)

    async def _refresh_glossaries(self) -> None:
        try:
            await asyncio.to_thread(self.glossaries.refresh)
        except OSError as error:  # e.g. the directory removed; keep what is loaded
            log.warning(json.dumps({"event": "glossary_watch_failed", "error": str(error),
                                    "glossaries_dir": str(self.config.glossaries_dir)}))

    async def _keep_glossaries_fresh(self) -> None:
        """Reloads changed glossary files every `poll_interval_s`."""
        while True:
            await asyncio.sleep(self.config.poll_interval_s)
            await self._refresh_glossaries()

    async def wait_until_serving(self, timeout: float | None = None) -> None:
        """Returns once a model serves; raises `TimeoutError` after `timeout` seconds."""
        await asyncio.wait_for(self._serving.wait(), timeout)

    async def stop(self, grace: float | None = None) -> None:
        """NOT_SERVING, refuse new calls, let calls in flight finish within `grace` seconds."""
        grace = self.config.grace_s if grace is None else grace
        await self.health.enter_graceful_shutdown()
        self._serving.clear()  # /readyz: 503 from now on
        for task in (self._model_task, self._glossary_task, self._keys_task):
            if task is not None:
                task.cancel()
        http = (asyncio.get_running_loop().create_task(self._http.stop(grace))
                if self._http is not None else None)
        if self._server is not None:
            await self._server.stop(grace)  # at once: new gRPC calls are refused from here
        if http is not None:
            await http
        if self._batcher is not None:
            await self._batcher.close()
        if self.quotas is not None:
            await self.quotas.close()  # saves the day's usage
        if self._metrics_http is not None:
            self._metrics_http.stop()

    async def wait_for_termination(self) -> None:
        await self._server.wait_for_termination()


def grpc_server_options(config: ServerConfig) -> list[tuple[str, int]]:
    """The gRPC server's channel arguments for `config`."""
    options = [
        ("grpc.max_receive_message_length", config.limits.max_message_bytes),
        ("grpc.so_reuseport", 0),  # a port in use is an error, not a shared port
    ]
    if config.max_connection_age_s:
        # gRPC adds +-10% jitter to the age, so clients connected together do not all
        # reconnect together. Without a grace, calls in flight (a long TranslateStream
        # too) finish on the old connection; only new calls take the new one.
        options.append(("grpc.max_connection_age_ms", _ms(config.max_connection_age_s)))
        if config.max_connection_age_grace_s is not None:
            options.append(("grpc.max_connection_age_grace_ms",
                            _ms(config.max_connection_age_grace_s)))
    return options


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def _host(host: str) -> str:
    """IPv6 literals need brackets in a gRPC address."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


async def serve(config: ServerConfig, registry: CollectorRegistry | None = None) -> None:
    """Runs the server until SIGTERM or SIGINT, then shuts down gracefully."""
    server = TranslationServer(config, registry=registry)
    await server.start()
    log.info(json.dumps({
        "event": "listening", "address": f"{config.host}:{server.port}",
        "metrics_port": server.metrics_port, "http_port": server.http_port,
        "http_host": config.http_host or config.host,
        "model_dir": str(config.model_dir), "precision": config.precision,
        "tls": config.tls_cert is not None, "auth": bool(config.auth_token),
        "keys_file": str(config.keys_file) if config.keys_file else None,
        "batching": dataclasses.asdict(config.batching),
        "max_connection_age_s": config.max_connection_age_s,
        "cache": dataclasses.asdict(config.cache),
        "limits": dataclasses.asdict(config.limits), "pid": os.getpid(),
        "glossaries_dir": str(config.glossaries_dir) if config.glossaries_dir else None,
        "glossaries": [g.name for g in server.glossaries.glossaries()]}))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info(json.dumps({"event": "shutting_down", "grace_s": config.grace_s}))
    await server.stop()
    log.info(json.dumps({"event": "stopped"}))
