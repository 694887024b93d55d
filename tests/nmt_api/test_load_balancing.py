"""Client-side load balancing (`load_balancing=` of the clients, nmt_api/client.py): with
`round_robin` the calls are spread over every address of the target, with `pick_first` (gRPC's
default) they go to one. Two servers on fake models stand for two pods behind one name."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from nmt_api.client import AsyncTranslationClient, TranslationClient, channel_options
from tests.serving.file_fakes import fake_server


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory):
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(fake_server(tmp_path_factory.mktemp(f"model{i}")))
                   for i in range(2)]
        yield servers


def _both(servers) -> str:
    """A target that resolves to both servers, as a headless Service's name resolves to pods."""
    return "ipv4:" + ",".join(server.target for server, _ in servers)


def _calls(servers) -> list[int]:
    return [len(model.calls) for _, model in servers]


def test_round_robin_spreads_the_calls_over_every_address(two_servers):
    before = _calls(two_servers)
    with TranslationClient(_both(two_servers), load_balancing="round_robin") as client:
        client.wait_until_serving(timeout=30)
        for i in range(20):
            assert client.translate([f"call number {i}"])[0].text == f"CALL NUMBER {i}"
    made = [after - b for after, b in zip(_calls(two_servers), before, strict=True)]
    assert sum(made) == 20 and min(made) >= 1, made  # pick_first: [0, 20]


def test_pick_first_sends_every_call_to_one_server(two_servers):
    before = _calls(two_servers)
    with TranslationClient(_both(two_servers), load_balancing="pick_first") as client:
        client.wait_until_serving(timeout=30)
        for i in range(6):
            client.translate([f"call {i}"])
    made = sorted(after - b for after, b in zip(_calls(two_servers), before, strict=True))
    assert made == [0, 6]


def test_the_async_client_balances_too(two_servers):
    async def twelve_calls():
        async with AsyncTranslationClient(_both(two_servers),
                                          load_balancing="round_robin") as client:
            await client.wait_until_serving(timeout=30)
            for i in range(12):
                await client.translate([f"async call {i}"])

    before = _calls(two_servers)
    asyncio.run(twelve_calls())
    made = [after - b for after, b in zip(_calls(two_servers), before, strict=True)]
    assert sum(made) == 12 and min(made) >= 1, made


def test_an_unknown_policy_is_named():
    assert ("grpc.lb_policy_name", "round_robin") in channel_options("round_robin")
    assert not any(key == "grpc.lb_policy_name" for key, _ in channel_options())
    with pytest.raises(ValueError, match="Received: load_balancing='random'"):
        channel_options("random")
