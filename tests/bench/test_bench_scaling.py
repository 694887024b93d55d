"""`bench/scaling.py`: the HPA's arithmetic, the ramp, and a run through the proxy on fakes."""

import asyncio
import io
import math

import pytest
from aiohttp import web

from bench.scaling import (
    Autoscaler,
    Backend,
    HpaSettings,
    RoundRobinProxy,
    clients_at,
    hpa_desired,
    run,
    samples,
)
from serving.testing import free_port

SETTINGS = HpaSettings(queue_target=10, cpu_target_percent=70, min_replicas=1, max_replicas=4,
                       downscale_window_s=5)


@pytest.mark.parametrize("current, value, expected", [
    (2, 20.0, 4),    # twice the target: twice the pods
    (2, 10.5, 2),    # within the 10% tolerance: unchanged
    (3, 11.5, 4),    # 3 * 1.15 = 3.45, rounded up
    (4, 2.0, 1),     # a fifth of the target: 4 * 0.2 = 0.8, rounded up
    (4, 0.0, 0),     # no queue at all (the bounds then keep minReplicas)
])
def test_the_replica_count_is_the_hpa_formula(current, value, expected):
    assert hpa_desired(current, value, 10.0) == expected


def test_a_target_of_zero_is_refused():
    with pytest.raises(ValueError, match="target=0"):
        hpa_desired(1, 5.0, 0)


def test_the_ramp_climbs_holds_and_comes_back():
    counts = [clients_at(t, 100, 32) for t in (0, 25, 50, 60, 74, 90, 99.9)]

    assert counts[0] == 1 and counts[2] == counts[3] == counts[4] == 32
    assert counts[1] == 16 and counts[-1] == 1
    assert counts[5] < 32


def test_the_targets_are_the_manifests():
    settings = HpaSettings.from_manifests()

    assert (settings.queue_target, settings.cpu_target_percent) == (10.0, 70.0)
    assert (settings.min_replicas, settings.max_replicas) == (2, 10)
    assert settings.downscale_window_s == 300


def test_samples_read_the_servers_own_metrics_page():
    from prometheus_client import CollectorRegistry, generate_latest

    from serving.metrics import ServingMetrics

    metrics = ServingMetrics(CollectorRegistry())
    metrics.queue_depth.set(7)
    metrics.sentences.inc(3)

    values = samples(generate_latest(metrics.registry).decode())

    assert values["nmt_queue_depth"] == 7.0
    assert values["nmt_translated_sentences_total"] == 3.0


def test_the_autoscaler_scales_up_at_once_and_down_after_its_window():
    autoscaler = Autoscaler(SETTINGS, cpu_request=2, window_s=1, act=True, sync_period_s=0)

    *_, desired = autoscaler.observe(0.0, 1, [{"nmt_queue_depth": 35.0}])
    assert desired == 4  # ceil(1 * 3.5)
    assert autoscaler.replicas(0.0, 1) == 4
    *_, desired = autoscaler.observe(2.0, 4, [{"nmt_queue_depth": 0.0}] * 4)
    assert desired == 1  # the 1-s window no longer holds the queue of t=0
    assert autoscaler.replicas(2.0, 4) == 4  # 4 was recommended within the last 5 s
    for t in (4.0, 6.0, 7.5):
        autoscaler.observe(t, 4, [{"nmt_queue_depth": 0.0}] * 4)
    assert autoscaler.replicas(7.5, 4) == 1


def test_cpu_use_is_a_share_of_the_request():
    autoscaler = Autoscaler(SETTINGS, cpu_request=2, window_s=10)

    autoscaler.observe(0.0, 1, [{"process_cpu_seconds_total": 10.0}])
    queue_now, _, cpu, _, by_cpu, _ = autoscaler.observe(
        2.0, 1, [{"process_cpu_seconds_total": 13.0}])

    assert cpu == pytest.approx(75.0)  # 1.5 cores of 2
    assert by_cpu == 1  # within 10% of 70%
    assert queue_now == 0.0


class FakeServer:
    """`/v1/translate` that takes 10 ms, and `/metrics` with a fixed queue depth."""

    def __init__(self, queue_depth: float):
        self.queue_depth, self.requests = queue_depth, 0
        self.backend = Backend(http_port=free_port(), metrics_port=free_port())
        self._runners = []

    async def start(self) -> None:
        api, metrics = web.Application(), web.Application()
        api.router.add_post("/v1/translate", self._translate)
        metrics.router.add_get("/metrics", self._metrics)
        for app, port in ((api, self.backend.http_port), (metrics, self.backend.metrics_port)):
            runner = web.AppRunner(app)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", port).start()
            self._runners.append(runner)

    async def stop(self) -> None:
        for runner in self._runners:
            await runner.cleanup()

    async def _translate(self, request: web.Request) -> web.Response:
        await request.json()
        await asyncio.sleep(0.01)
        self.requests += 1
        return web.json_response({"translations": []})

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(text=(
            "# TYPE nmt_queue_depth gauge\n"
            f"nmt_queue_depth {self.queue_depth}\n"
            "# TYPE nmt_translated_sentences counter\n"
            f"nmt_translated_sentences_total {self.requests}\n"))


async def _run_on_fakes(queue_depths, **kwargs):
    servers = [FakeServer(q) for q in queue_depths]
    for server in servers:
        await server.start()
    out = io.StringIO()
    try:
        rows = await run([s.backend for s in servers], ["Hello."], out=out,
                         autoscaler=Autoscaler(SETTINGS, 2, window_s=60), **kwargs)
    finally:
        for server in servers:
            await server.stop()
    return rows, servers, out.getvalue()


def test_a_run_prints_what_the_autoscaler_would_read_and_choose():
    rows, servers, printed = asyncio.run(_run_on_fakes(
        [30.0, 10.0], duration=2.0, max_clients=4, interval=0.25))

    assert len(rows) >= 4
    for row in rows:
        assert row.replicas == 2 and row.queue_now == 20.0  # the average over the pods
        assert row.desired_queue == 4 and row.desired == 4  # ceil(2 * 20 / 10)
        assert math.isnan(row.cpu_percent) and row.desired_cpu is None  # no CPU figure
        assert row.errors == 0
    assert max(row.clients for row in rows) == 4
    assert all(server.requests > 0 for server in servers)  # connections went round
    assert "| **4** |" in printed and "server 1:" in printed
    assert "0 errors" in printed


def test_taking_a_server_out_of_rotation_moves_its_clients():
    async def scenario():
        servers = [FakeServer(0.0), FakeServer(0.0)]
        for server in servers:
            await server.start()
        proxy = RoundRobinProxy([s.backend for s in servers])
        url = f"http://127.0.0.1:{await proxy.start()}/v1/translate"
        import aiohttp

        try:
            async with aiohttp.ClientSession() as first, aiohttp.ClientSession() as second:
                for session in (first, second, first, second):
                    async with session.post(url, json={"sentences": ["a"]}) as response:
                        assert response.status == 200
                sticky = [s.requests for s in servers]
                proxy.set_active(1)
                await asyncio.sleep(0.1)
                for session in (first, second):
                    async with session.post(url, json={"sentences": ["a"]}) as response:
                        assert response.status == 200
        finally:
            await proxy.close()
            for server in servers:
                await server.stop()
        return sticky, [s.requests for s in servers], proxy

    sticky, after, proxy = asyncio.run(scenario())

    assert sticky == [2, 2]  # each client kept its connection, hence its server
    assert after == [4, 2]  # the second client reconnected to the server left
    assert proxy.closed_by_scaling == 1
