"""The generated protobuf and gRPC modules of `proto/nmt_api/v1/translation.proto`.

The modules (`nmt_api/v1/translation_pb2.py`, `translation_pb2_grpc.py` and the
`.pyi` stub) are built with grpcio-tools, never committed or edited:

- the package's build step (`setup.py`, grpcio-tools a build requirement)
  writes them into every wheel, and into the checkout for an editable
  install, so an installed client imports them without grpcio-tools;
- in a checkout, `load()` rebuilds them when they are missing or older than
  the `.proto` (grpcio-tools comes with the `dev` extra);
- `python -m nmt_api.protos` rebuilds them explicitly after a `.proto` edit.

They land in `nmt_api/v1/` because the generated gRPC module imports its
messages by the `.proto` file's path, `nmt_api.v1.translation_pb2`; the proto
package inside the file stays `nmt.v1`, which is what the wire sees (as
`tensorflow_serving/apis/*.proto` declare `package tensorflow.serving`).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = REPO_ROOT / "proto"
PROTO_FILE = "nmt_api/v1/translation.proto"
GENERATED = ("translation_pb2.py", "translation_pb2_grpc.py", "translation_pb2.pyi")
_PACKAGE_INIT = '"""Generated protobuf modules of `proto/nmt_api/v1/` (built, not edited)."""\n'
# The gRPC service's full name (proto package `nmt.v1`): what clients call and what the
# health service reports on. A test checks it against the generated descriptor.
SERVICE_NAME = "nmt.v1.TranslationService"
# The port a server listens on for gRPC unless told otherwise, and clients try first.
DEFAULT_GRPC_PORT = 50051


def _out_dir(out_root: Path) -> Path:
    return out_root / Path(PROTO_FILE).parent


def is_stale(out_root: Path = REPO_ROOT) -> bool:
    """Whether the generated modules are missing or older than the `.proto` source."""
    source = PROTO_ROOT / PROTO_FILE
    if not source.exists():
        return False  # an installed package: nothing to build from
    targets = [_out_dir(out_root) / name for name in GENERATED]
    if not all(t.exists() for t in targets):
        return True
    return min(t.stat().st_mtime for t in targets) < source.stat().st_mtime


def generate(out_root: Path = REPO_ROOT) -> list[Path]:
    """Runs grpcio-tools' protoc; returns the generated files.

    Files are written to a temporary directory and moved into place one by
    one, so concurrent builds (a server and a client starting together)
    never see a half-written module.

    Args:
        out_root: the directory that `nmt_api/v1/` is written under: the
            checkout, or the build tree of a wheel (`setup.py`).

    Returns:
        The generated files, in the order of `GENERATED`.

    Raises:
        ModuleNotFoundError: grpcio-tools is not installed.
        RuntimeError: protoc failed (its message is included).
    """
    try:
        import grpc_tools
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            f"Building the gRPC modules from {PROTO_ROOT / PROTO_FILE} needs grpcio-tools: "
            "pip install -e '.[dev]' (or reinstall with `pip install -e .`, whose build step "
            "generates them)", name="grpc_tools") from None

    include = Path(grpc_tools.__file__).parent / "_proto"
    out_dir = _out_dir(out_root)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        # protoc runs in its own process: in-process it can crash once TensorFlow
        # (which bundles its own libprotobuf) has been imported.
        result = subprocess.run(
            [sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO_ROOT}", f"-I{include}",
             f"--python_out={tmp}", f"--grpc_python_out={tmp}", f"--pyi_out={tmp}", PROTO_FILE],
            capture_output=True, text=True, check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"protoc failed on {PROTO_ROOT / PROTO_FILE} (exit code {result.returncode}): "
                f"{result.stderr.strip()}"
            )
        for name in GENERATED:
            os.replace(Path(tmp) / Path(PROTO_FILE).parent / name, out_dir / name)
    init = out_dir / "__init__.py"
    if not init.exists():
        init.write_text(_PACKAGE_INIT)
    return [out_dir / name for name in GENERATED]


def load() -> tuple[ModuleType, ModuleType]:
    """`(translation_pb2, translation_pb2_grpc)`, building them first if needed."""
    if is_stale():
        generate()
        importlib.invalidate_caches()
    try:
        pb2 = importlib.import_module("nmt_api.v1.translation_pb2")
        pb2_grpc = importlib.import_module("nmt_api.v1.translation_pb2_grpc")
    except ModuleNotFoundError as error:
        raise ImportError(
            "The generated gRPC modules nmt_api/v1/translation_pb2*.py are missing and there is "
            f"no proto/ source beside this package to build them from ({PROTO_ROOT}). Build them "
            "in a checkout with `python -m nmt_api.protos`; a wheel (`pip install .`) builds "
            "them itself."
        ) from error
    return pb2, pb2_grpc


if __name__ == "__main__":
    for path in generate():
        print(path)
    sys.exit(0)
