"""Run a `TranslationServer` in a background thread, for tests and examples.

    with ServerThread(ServerConfig(model_dir=..., host="127.0.0.1", port=0,
                                   metrics_port=0)) as server:
        server.wait_until_serving()
        client = TranslationClient(server.target)
"""

from __future__ import annotations

import asyncio
import random
import socket
import threading
import urllib.request

from serving.server import ServerConfig, TranslationServer


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (for the metrics endpoint in tests).

    Drawn below the kernel's ephemeral range, where servers bound to port 0 and outgoing
    connections take theirs: a port the kernel handed out could be taken by another
    process (a parallel test worker) before the test binds it.
    """
    low = _ephemeral_start()
    for _ in range(200):
        port = random.randrange(max(1024, low - 12000), low)
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:  # in use
                continue
            return port
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _ephemeral_start() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):  # not Linux: the IANA range starts at 49152
        return 49152


def scrape_metrics(port: int, host: str = "127.0.0.1") -> dict[tuple[str, tuple], float]:
    """`{(sample name, sorted label items): value}` from a `/metrics` endpoint."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


class ServerThread:
    """A `TranslationServer` on its own event loop in a daemon thread.

    Args:
        config: server settings (use port 0 to get a free port).
        **kwargs: passed to `TranslationServer` (`registry`, `loader`).
    """

    def __init__(self, config: ServerConfig, **kwargs):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="nmt-test-server",
                                        daemon=True)
        self._thread.start()
        self.server = TranslationServer(config, **kwargs)
        try:
            self.run(self.server.start())
        except BaseException:
            self.stop()
            raise

    @property
    def target(self) -> str:
        return f"{self.server.config.host}:{self.server.port}"

    def run(self, coroutine, timeout: float | None = 120):
        """Runs a coroutine on the server's loop and returns its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def wait_until_serving(self, timeout: float = 120) -> None:
        self.run(self.server.wait_until_serving(timeout))

    def stop(self, grace: float = 0.0) -> None:
        if not self.loop.is_closed():
            self.run(self.server.stop(grace))
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
            self.loop.close()

    def __enter__(self) -> ServerThread:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
