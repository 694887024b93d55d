"""The build step: the gRPC modules of `proto/` go into the package.

`pyproject.toml` holds the metadata; this adds one thing to setuptools'
`build_py`: protoc (grpcio-tools, a build requirement) writes
`nmt_api/v1/translation_pb2*.py` from `proto/nmt_api/v1/translation.proto`, so
that every wheel ships them and no install needs grpcio-tools at run time.
The generation itself is `nmt_api.protos.generate`, which
`python -m nmt_api.protos` runs in a checkout.
"""

from __future__ import annotations

import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nmt_api import protos  # noqa: E402  (standard library only until it runs protoc)


class BuildPyWithProtos(build_py):
    """`build_py`, then protoc into the built package (or, editable, into the checkout)."""

    def run(self) -> None:
        super().run()
        # An editable install imports the checkout's own files, so they are built there.
        out_root = protos.REPO_ROOT if self.editable_mode else Path(self.build_lib)
        for path in protos.generate(out_root):
            self.announce(f"generated {path}", level=2)


setup(cmdclass={"build_py": BuildPyWithProtos})
