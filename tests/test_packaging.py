"""pyproject.toml's roles install what their modules import; the build step's pins agree.

Each role's modules are read with `ast` (imports at module level and inside
functions, followed through the project's own modules) and every
third-party import must come from the bare install or the role's extra.
That catches a new import in `serving/` whose package only `dev` installs,
which `make test` (a `dev` install) never would. The client role itself is
installed and run in a fresh venv by tests/nmt_api/test_client_install.py.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import pytest

from nmt_cli.extras import distribution_of, extra_distributions

REPO = Path(__file__).resolve().parents[1]
PROJECT = ("nmt", "documents", "nmt_api", "serving", "batch", "training", "nmt_cli")
# Role -> (modules it runs, whether imports inside functions count). The client's commands
# import the model stack inside functions, behind `--server`, so only its module-level
# imports must be the bare install's; the other roles own every import of their package.
ROLES: dict[str, tuple[tuple[str, ...], bool]] = {
    "client": (("nmt_api.client", "nmt_api.healthcheck", "nmt_cli.main", "nmt_cli.documents",
                "batch.job", "batch.engines"), False),
    "serve": (("serving",), True),
    "batch": (("batch",), True),
    "train": (("training",), True),
}
# Imports a role's code makes only when the package is there, saying so when it is not.
OPTIONAL: dict[str, frozenset[str]] = {
    # Corpus alignment for guided training: the `align` extra (GPL-3.0).
    "train": frozenset({"eflomal"}),
}
# In a checkout only (`dev`): nmt_api.protos rebuilds stale gRPC modules from the .proto,
# and the OpenAPI description reads its field comments there.
CHECKOUT_ONLY = frozenset({"grpcio-tools"})


def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def pyproject_requirements() -> list[str]:
    """pyproject.toml's dependencies as the `Requires-Dist` lines a wheel's metadata holds."""
    project = pyproject()["project"]
    lines = list(project["dependencies"])
    for extra, requirements in project["optional-dependencies"].items():
        lines += [f'{requirement}; extra == "{extra}"' for requirement in requirements]
    return lines


def _module_path(dotted: str) -> Path | None:
    path = REPO / dotted.replace(".", "/")
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return path / "__init__.py" if (path / "__init__.py").is_file() else None


def _imports(path: Path, nested: bool) -> set[str]:
    """Dotted names `path` imports (module level only unless `nested`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    nodes = ast.walk(tree) if nested else iter(tree.body)
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def third_party_imports(modules: tuple[str, ...], nested: bool) -> dict[str, set[str]]:
    """`{top-level import name: {project modules importing it}}` over the import closure."""
    todo = []
    for name in modules:
        package = REPO / name
        todo += ([".".join(p.relative_to(REPO).with_suffix("").parts)
                  for p in package.rglob("*.py") if "_pb2" not in p.name]
                 if package.is_dir() else [name])
    seen: set[str] = set()
    found: dict[str, set[str]] = {}
    while todo:
        module = todo.pop()
        path = _module_path(module)
        if module in seen or path is None:
            continue
        seen.add(module)
        parents = module.split(".")
        todo += [".".join(parents[:i]) for i in range(1, len(parents))]
        for name in _imports(path, nested):
            root = name.partition(".")[0]
            if root in PROJECT:
                todo.append(name)
            elif root not in sys.stdlib_module_names and root != "__future__":
                found.setdefault(root, set()).add(module)
    return found


@pytest.mark.parametrize("role", ROLES)
def test_each_role_installs_what_its_modules_import(role):
    requirements = pyproject_requirements()
    bare = {distribution_of(re.split(r"[\s\[<>=!~;]", line, maxsplit=1)[0])
            for line in pyproject()["project"]["dependencies"]}
    installed = bare | extra_distributions(requirements).get(role, frozenset())
    allowed = installed | OPTIONAL.get(role, frozenset()) | CHECKOUT_ONLY
    modules, nested = ROLES[role]
    missing = {name: sorted(users)
               for name, users in third_party_imports(modules, nested).items()
               if distribution_of(name) not in allowed}
    assert not missing, (
        f"the {role} role does not install {sorted(distribution_of(m) for m in missing)}, "
        f"imported by {missing}: add them to pyproject.toml's "
        f"{'dependencies' if role == 'client' else f'[{role}] extra'}")


def test_the_scan_follows_imports_into_the_model_library():
    serving = third_party_imports(("serving",), True)
    client = third_party_imports(ROLES["client"][0], False)

    assert "tensorflow" in serving  # through nmt.inference.translator
    assert "tensorflow" not in client and "grpc" in client and "sentencex" in client


def _pin(requirements: list[str], name: str) -> str:
    [pin] = [r for r in requirements if re.match(rf"{name}\s*==", r)]
    return pin.split("==")[1].strip()


def test_the_build_step_and_dev_generate_with_the_same_grpcio_tools():
    config = pyproject()
    build = _pin(config["build-system"]["requires"], "grpcio-tools")
    dev = _pin(config["project"]["optional-dependencies"]["dev"], "grpcio-tools")

    assert build == dev
    generated = REPO / "nmt_api" / "v1" / "translation_pb2_grpc.py"
    if generated.exists():  # built by the editable install or `python -m nmt_api.protos`
        stated = re.search(r"GRPC_GENERATED_VERSION = '([^']+)'", generated.read_text())
        assert stated.group(1) == build, "regenerate: python -m nmt_api.protos"


@pytest.mark.parametrize("dockerfile", ["Dockerfile", "Dockerfile.train"])
def test_the_images_copy_every_package(dockerfile):
    packages = {name for name in pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]
                if "." not in name}
    text = (REPO / "docker" / dockerfile).read_text(encoding="utf-8")
    copied = set(re.findall(r"^COPY (\w+)/ \1/$", text, flags=re.MULTILINE))

    assert packages <= copied, f"docker/{dockerfile} does not copy {sorted(packages - copied)}"
