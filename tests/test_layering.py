"""Dependencies between the project's packages point one way.

From the bottom up: the model library `nmt`; the plain-Python text work around it
(`documents`) and the wire API `nmt_api`; the applications `serving`, `batch` and
`training`; on top the `nmt` command (`nmt_cli`) and the benchmarks (`bench/`). Every
import statement of every module is read with `ast`, at module level and inside
functions, and `importlib.import_module("...")` calls with a literal name too.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Which packages of the project each package may import (itself always).
MAY_IMPORT: dict[str, frozenset[str]] = {
    "nmt": frozenset(),
    "documents": frozenset({"nmt"}),  # nmt's plain-Python core only, see PLAIN_CORE_OF_NMT
    "nmt_api": frozenset({"nmt"}),  # nmt.types only, see NMT_API_MAY_IMPORT_FROM_NMT
    "serving": frozenset({"nmt", "documents", "nmt_api"}),
    "batch": frozenset({"nmt", "documents", "nmt_api"}),
    # training.corpus.sources.po reads PO catalogues with the documents' PO reader.
    "training": frozenset({"nmt", "documents"}),
    "nmt_cli": frozenset({"nmt", "documents", "nmt_api", "serving", "batch", "training"}),
    "bench": frozenset({"nmt", "documents", "nmt_api", "serving", "batch", "training"}),
}
# The middle packages (serving, batch, training) import none of each other but for the
# pairs below. An import between two of them that is genuinely needed goes here, as
# ("importing package", "imported package"), with the reason beside it.
ALLOWED_BETWEEN_APPLICATIONS: frozenset[tuple[str, str]] = frozenset({
    # `nmt distill` (training.distill) has the teacher translate the training sources with
    # the resumable batch job, rather than a second copy of it.
    ("training", "batch"),
})
# The wire API installs without the model stack: of `nmt` it uses the plain types only.
NMT_API_MAY_IMPORT_FROM_NMT = ("nmt.types",)
NOT_IN_NMT_API = ("tensorflow", "tensorflow_text", "keras")
# Text and file handling needs no model: of `nmt` it uses the plain-Python core only.
PLAIN_CORE_OF_NMT = ("nmt.types", "nmt.constants")
NOT_IN_DOCUMENTS = ("tensorflow", "tensorflow_text", "keras", "jax", "torch")
PROJECT = frozenset(MAY_IMPORT)


def _modules() -> list[Path]:
    """Every module of every package, generated protobuf code aside."""
    return sorted(path for package in MAY_IMPORT for path in (REPO / package).rglob("*.py")
                  if not path.stem.endswith(("_pb2", "_pb2_grpc")))


def _imports(path: Path) -> list[tuple[int, str]]:
    """`(line, dotted name)` of everything `path` imports, wherever the statement is."""
    package = path.relative_to(REPO).with_suffix("").parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the module's own package
                parent = package[: len(package) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            for alias in node.names:
                # `from nmt import types` imports nmt.types; `from nmt.types import X` nmt.types.
                submodule = node.module is None or _is_package(base)
                found.append((node.lineno, f"{base}.{alias.name}" if submodule else base))
        elif (isinstance(node, ast.Call) and _is_import_module(node.func) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append((node.lineno, node.args[0].value))
    return found


def _is_package(dotted: str) -> bool:
    return (REPO / dotted.replace(".", "/") / "__init__.py").exists()


def _is_import_module(func: ast.expr) -> bool:
    return ((isinstance(func, ast.Attribute) and func.attr == "import_module")
            or (isinstance(func, ast.Name) and func.id in ("import_module", "__import__")))


def _violations(path: Path) -> list[str]:
    owner = path.relative_to(REPO).parts[0]
    where = path.relative_to(REPO)
    problems = []
    for line, name in _imports(path):
        root = name.split(".")[0]
        if root in PROJECT and root != owner and root not in MAY_IMPORT[owner]:
            if (owner, root) not in ALLOWED_BETWEEN_APPLICATIONS:
                allowed = ", ".join(sorted(MAY_IMPORT[owner])) or "no other package"
                problems.append(f"{where}:{line}: imports {name}; {owner} may import {allowed}")
        if owner == "nmt_api" and root == "nmt" and not name.startswith(
                NMT_API_MAY_IMPORT_FROM_NMT):
            problems.append(f"{where}:{line}: imports {name}; nmt_api may use only "
                            f"{', '.join(NMT_API_MAY_IMPORT_FROM_NMT)} of nmt")
        if owner == "nmt_api" and root in NOT_IN_NMT_API:
            problems.append(f"{where}:{line}: imports {name}; nmt_api must not need {root}")
        if owner == "documents" and root == "nmt" and not name.startswith(PLAIN_CORE_OF_NMT):
            problems.append(f"{where}:{line}: imports {name}; documents may use only "
                            f"{', '.join(PLAIN_CORE_OF_NMT)} of nmt")
        if owner == "documents" and root in NOT_IN_DOCUMENTS:
            problems.append(f"{where}:{line}: imports {name}; documents must not need {root}")
    return problems


def test_every_package_has_a_layer():
    packages = {p.parent.name for p in REPO.glob("*/__init__.py")}
    assert packages | {"bench"} == set(MAY_IMPORT), (
        "add the new package to MAY_IMPORT (and to docs/layout.md, 'Where things are')")


def test_the_scan_sees_imports_inside_functions():
    cli = {name for _, name in _imports(REPO / "nmt_cli" / "main.py")}
    client = {name for _, name in _imports(REPO / "nmt_api" / "client.py")}
    assert "training.train" in cli  # imported inside `_train` only
    assert {"nmt.types", "nmt_api.convert", "nmt_api.protos"} <= client


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(REPO)))
def test_imports_point_down(path):
    problems = _violations(path)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("module", [
    "nmt_api.client", "nmt_api.healthcheck", "nmt_cli.main", "batch.engines",
    "documents.file_formats", "documents.terminology",
])
def test_importing_does_not_load_tensorflow(module):
    """Clients need no TensorFlow; the CLI silences TensorFlow's logs before it loads."""
    code = (f"import sys, {module}; "
            "print(sorted(m for m in ('tensorflow', 'keras', 'tensorflow_text') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"importing {module} loads {done.stdout.strip()}"
