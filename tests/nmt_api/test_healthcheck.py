"""`python -m nmt_api.healthcheck`: the container probe's exit code follows the health service."""

from concurrent import futures

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from nmt_api.healthcheck import SERVICE_NAME, main
from serving.testing import free_port


@pytest.fixture(scope="module")
def health_server():
    server = grpc.server(futures.ThreadPoolExecutor(2))
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield servicer, f"127.0.0.1:{port}"
    server.stop(0)


@pytest.mark.parametrize("status, code", [
    (health_pb2.HealthCheckResponse.SERVING, 0),
    (health_pb2.HealthCheckResponse.NOT_SERVING, 1),
])
def test_exit_code_follows_the_status(health_server, status, code, capsys):
    servicer, target = health_server
    servicer.set(SERVICE_NAME, status)

    assert main(["--target", target]) == code
    assert health_pb2.HealthCheckResponse.ServingStatus.Name(status) in capsys.readouterr().out


def test_no_server_is_unhealthy():
    assert main(["--target", f"127.0.0.1:{free_port()}", "--timeout", "1"]) == 1
