"""Exit 0 when the translation service reports SERVING, 1 otherwise (container probes).

    python -m nmt_api.healthcheck --target 127.0.0.1:50051 [--tls-ca ca.pem]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from nmt_api.protos import DEFAULT_GRPC_PORT, SERVICE_NAME


def check(target: str, timeout: float = 3.0, root_certificates: bytes | None = None) -> bool:
    """Whether the health service at `target` reports the translation service SERVING."""
    channel = (grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates))
               if root_certificates else grpc.insecure_channel(target))
    with channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            response = stub.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME),
                                  timeout=timeout)
        except grpc.RpcError as error:
            print(f"{target}: {error.code().name} {error.details()}", file=sys.stderr)
            return False
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)
    print(f"{target}: {status}")
    return response.status == health_pb2.HealthCheckResponse.SERVING


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=f"127.0.0.1:{DEFAULT_GRPC_PORT}")
    parser.add_argument("--timeout", type=float, default=3.0)
    parser.add_argument("--tls-ca", type=Path, help="PEM CA certificate when the server uses TLS")
    args = parser.parse_args(argv)
    roots = args.tls_ca.read_bytes() if args.tls_ca else None
    return 0 if check(args.target, args.timeout, roots) else 1


if __name__ == "__main__":
    sys.exit(main())
