"""The client role, installed alone in a fresh venv, calls a running server.

`pip install '<checkout>[client]'` into a new venv (from the package registry)
must give the wire API, the Python clients and the `nmt` command with neither
TensorFlow nor grpcio-tools: the gRPC modules come from the package's build
step (setup.py), so the checkout's copy is left out of what is installed. The
server runs in this process on the tiny test model; the client runs in the
venv's own Python, away from the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import pytest

# End-to-end: `make test-slow` (and CI) runs it; `make test` leaves it out.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SENTENCE = "The cat is black."
DEFAULT_INDEX = "https://pypi.org/simple"
_CLIENT_CALL = """
import json, sys
import nmt_api, nmt_api.v1.translation_pb2 as pb2
from nmt_api.client import TranslationClient

with TranslationClient(sys.argv[1], timeout=60) as client:
    client.wait_until_serving(timeout=60)
    [translation] = client.translate([sys.argv[2]])
print(json.dumps({"text": translation.text, "links": translation.best.pharaoh(),
                  "alignment": list(translation.alignment.shape),
                  "package": nmt_api.__file__, "generated": pb2.__file__}))
"""


def _copy_packaged_tree(out: Path) -> Path:
    """What a build of the package reads, without the generated gRPC modules or caches."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    packages = [p for p in config["tool"]["setuptools"]["packages"]["find"]["include"]
                if "*" not in p]
    ignore = shutil.ignore_patterns("__pycache__", "*_pb2.py", "*_pb2_grpc.py", "*_pb2.pyi")
    out.mkdir(parents=True)
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, out / name)
    for name in ("proto", *packages):
        shutil.copytree(REPO / name, out / name, ignore=ignore)
    return out


def _index_url(python: Path) -> str:
    """The index pip installs from: PIP_INDEX_URL, else pip's configuration, else PyPI."""
    if os.environ.get("PIP_INDEX_URL"):
        return os.environ["PIP_INDEX_URL"].split()[0]
    done = subprocess.run([str(python), "-m", "pip", "config", "get", "global.index-url"],
                          capture_output=True, text=True, timeout=60, check=False)
    return (done.stdout.strip() or DEFAULT_INDEX) if done.returncode == 0 else DEFAULT_INDEX


def _unreachable(index: str) -> str | None:
    """Why the package index cannot be reached, or None when it answers."""
    if not index.startswith(("http://", "https://")):
        return None  # a local directory: reachable
    context = ssl.create_default_context(cafile=os.environ.get("PIP_CERT") or None)
    try:
        with urllib.request.urlopen(index.rstrip("/") + "/pip/", timeout=20, context=context):
            return None
    except urllib.error.HTTPError:
        return None  # it answered
    except OSError as error:  # URLError, timeouts, refused connections
        return str(error)


def _clean_env() -> dict[str, str]:
    """This environment without what would put the checkout or this venv on sys.path."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory) -> Path:
    """A fresh venv with `nmt-attention[client]` installed from a copy of the checkout."""
    root = tmp_path_factory.mktemp("client-install")
    source = _copy_packaged_tree(root / "src")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check",
         f"{source}[client]"],
        capture_output=True, text=True, timeout=600, check=False, env=_clean_env(), cwd=root)
    output = done.stdout + done.stderr
    if done.returncode != 0:
        index = _index_url(venv / "bin" / "python")
        why = _unreachable(index)
        if why is not None:
            pytest.skip(f"the package registry {index} cannot be reached ({why}), so the "
                        "client role cannot be installed in a fresh venv")
    assert done.returncode == 0, f"pip install '.[client]' failed:\n{output[-4000:]}"
    return venv


@pytest.fixture(scope="module")
def server(tiny_server):
    return tiny_server


def _run(venv: Path, *argv: str) -> subprocess.CompletedProcess:
    """A command of the venv, run outside the checkout (so only the installed package counts)."""
    return subprocess.run([str(venv / "bin" / argv[0]), *argv[1:]], capture_output=True,
                          text=True, timeout=120, check=False, env=_clean_env(),
                          cwd=venv.parent)


def test_the_client_role_installs_without_tensorflow_or_grpcio_tools(client_venv):
    for module in ("tensorflow", "grpc_tools", "apache_beam", "matplotlib"):
        done = _run(client_venv, "python", "-c", f"import {module}")
        assert done.returncode != 0, f"{module} is importable in the client install"
        assert f"No module named '{module}'" in done.stderr
    check = _run(client_venv, "python", "-m", "pip", "check")
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_installed_client_translates_through_the_server(client_venv, server):
    expected = server.server.store.translator.translate([SENTENCE])[0]

    done = _run(client_venv, "python", "-c", _CLIENT_CALL, server.target, SENTENCE)

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["text"] == expected.text
    assert result["links"] == expected.best.pharaoh()
    assert result["alignment"] == list(expected.alignment.shape)
    # The package and its generated gRPC modules are the venv's, built at install time.
    assert Path(result["package"]).is_relative_to(client_venv)
    assert Path(result["generated"]).is_relative_to(client_venv)


def test_the_installed_command_translates_through_the_server(client_venv, server):
    expected = server.server.store.translator.translate([SENTENCE])[0]

    done = _run(client_venv, "nmt", "translate", "--server", server.target, "--alignment",
                SENTENCE)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == expected.text
    assert f"pharaoh: {expected.best.pharaoh()}" in done.stdout


@pytest.mark.parametrize("argv, extra", [
    (("serve",), "serve"),
    (("translate", SENTENCE), "serve"),
    (("train", "--config", "c.yaml", "--run", "r"), "train"),
])
def test_commands_of_other_roles_name_their_extra(client_venv, argv, extra):
    done = _run(client_venv, "nmt", *argv)

    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"nmt {argv[0]} needs the {extra} extra" in done.stderr
    assert f"pip install 'nmt-attention[{extra}]'" in done.stderr
