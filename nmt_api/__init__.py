"""The wire API of the translation service: what a client needs, without TensorFlow.

- `nmt_api.protos`: the protobuf and gRPC modules generated from
  `proto/nmt_api/v1/translation.proto` (package `nmt.v1`) into `nmt_api/v1/`,
  and the service's name;
- `nmt_api.convert`: protobuf messages <-> the plain types of `nmt.types`;
- `nmt_api.client`: the blocking and `asyncio` Python clients;
- `nmt_api.healthcheck`: the container probe (`python -m nmt_api.healthcheck`).

Imported by the server (`serving/`), the batch jobs and the `nmt` command;
imports none of them, and nothing of the project but `nmt.types` (plain
dataclasses, no TensorFlow).
"""
