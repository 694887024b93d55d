"""Builds the kustomizations of deploy/kubernetes/ in Python, for tests without kubectl.

`build(directory)` does what `kubectl kustomize directory` does for the subset of
Kustomize that the manifests use, and refuses anything else by name, so that a
manifest never relies on a feature this builder would silently skip:

- `resources`: YAML files and directories (built recursively);
- `components`: directories whose kustomization is `kind: Component`, applied
  after the resources (their resources added, their patches applied);
- `patches`: a strategic-merge patch (a whole object, matched by kind and name)
  or a JSON 6902 patch (a list of `add`, `replace` and `remove` operations, with
  a `target`), from `path` or inline `patch`;
- `images`: `name` replaced by `newName` and/or `newTag` in every pod template.

Strategic merge follows the Kubernetes patch strategy of the fields used here:
lists of containers, volumes, env, ports and volume mounts merge by their key
(`MERGE_KEYS`); every other list is replaced. `test_kubernetes.py` checks the
result against `kubectl kustomize` where kubectl is installed.
"""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

KUSTOMIZATION = "kustomization.yaml"
SUPPORTED_KEYS = frozenset({"apiVersion", "kind", "resources", "components", "patches",
                            "images"})
# Field name -> the key its list items merge on (k8s.io/api `patchMergeKey`).
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "env": "name",
    "imagePullSecrets": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
}
# Where pod templates sit, by kind.
POD_SPEC_PATHS = {
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


def read_documents(path: Path) -> list[dict]:
    """The non-empty YAML documents of a file."""
    with open(path, encoding="utf-8") as stream:
        return [document for document in yaml.safe_load_all(stream) if document is not None]


def read_kustomization(directory: Path) -> dict:
    path = Path(directory) / KUSTOMIZATION
    if not path.is_file():
        raise FileNotFoundError(f"no {KUSTOMIZATION} in {directory}")
    [kustomization] = read_documents(path)
    unknown = sorted(set(kustomization) - SUPPORTED_KEYS)
    if unknown:
        raise ValueError(f"{path} uses {', '.join(unknown)}, which this builder does not "
                         f"implement (it knows {', '.join(sorted(SUPPORTED_KEYS))}); extend "
                         "tests/deploy/k8s_manifests.py or keep to those")
    return kustomization


def build(directory: Path | str) -> list[dict]:
    """The objects `kubectl kustomize directory` would print (in no particular order)."""
    directory = Path(directory)
    kustomization = read_kustomization(directory)
    if kustomization.get("kind", "Kustomization") != "Kustomization":
        raise ValueError(f"{directory} is a {kustomization['kind']}; build a Kustomization")
    objects = _resources(directory, kustomization)
    for component in kustomization.get("components", []):
        _apply_component(directory / component, objects)
    _apply_patches(directory, kustomization, objects)
    _apply_images(kustomization, objects)
    return objects


def _resources(directory: Path, kustomization: dict) -> list[dict]:
    objects = []
    for entry in kustomization.get("resources", []):
        path = directory / entry
        objects += build(path) if path.is_dir() else read_documents(path)
    return objects


def _apply_component(directory: Path, objects: list[dict]) -> None:
    component = read_kustomization(directory)
    if component.get("kind") != "Component":
        raise ValueError(f"{directory} is listed under components but its kind is "
                         f"{component.get('kind', 'Kustomization')!r}, not 'Component'")
    objects += _resources(directory, component)
    _apply_patches(directory, component, objects)
    _apply_images(component, objects)


def _apply_patches(directory: Path, kustomization: dict, objects: list[dict]) -> None:
    for entry in kustomization.get("patches", []):
        if "path" in entry:
            patch = yaml.safe_load((directory / entry["path"]).read_text(encoding="utf-8"))
        else:
            patch = yaml.safe_load(entry["patch"])
        if isinstance(patch, list):
            targets = [o for o in objects if matches(o, entry.get("target"))]
            if not targets:
                raise ValueError(f"the JSON patch of {directory} matches no object: "
                                 f"target={entry.get('target')!r}")
            for target in targets:
                json_patch(target, patch)
        else:
            key = (patch["kind"], patch["metadata"]["name"])
            [target] = [o for o in objects if (o["kind"], o["metadata"]["name"]) == key] or [None]
            if target is None:
                raise ValueError(f"the patch {entry} of {directory} matches no object {key}")
            merged = strategic_merge(target, patch)
            target.clear()
            target.update(merged)


def matches(obj: dict, target: dict | None) -> bool:
    """Whether `obj` is selected by a patch `target` (group, version, kind, name)."""
    if not target:
        return True
    group, _, version = obj["apiVersion"].rpartition("/")
    wanted = {"group": group, "version": version, "kind": obj["kind"],
              "name": obj["metadata"]["name"]}
    unknown = set(target) - set(wanted)
    if unknown:
        raise ValueError(f"patch target fields {sorted(unknown)} are not implemented here")
    return all(wanted[field] == value for field, value in target.items())


def strategic_merge(base, patch, field: str | None = None):
    """`patch` merged into `base` (neither is changed); a None value in a patch deletes."""
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = copy.deepcopy(base)
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            elif key in merged:
                merged[key] = strategic_merge(merged[key], value, key)
            else:
                merged[key] = copy.deepcopy(value)
        return merged
    if isinstance(base, list) and isinstance(patch, list) and field in MERGE_KEYS:
        key = MERGE_KEYS[field]
        merged = [copy.deepcopy(item) for item in base]
        for item in patch:
            index = next((i for i, old in enumerate(merged) if old.get(key) == item.get(key)),
                         None)
            if index is None:
                merged.append(copy.deepcopy(item))
            else:
                merged[index] = strategic_merge(merged[index], item, None)
        return merged
    return copy.deepcopy(patch)


def json_patch(obj: dict, operations: list[dict]) -> None:
    """Applies JSON 6902 `add`, `replace` and `remove` operations to `obj` in place."""
    for operation in operations:
        op, path = operation["op"], operation["path"]
        if op not in ("add", "replace", "remove"):
            raise ValueError(f"JSON patch op {op!r} is not implemented here. Received: "
                             f"{operation!r}")
        *parents, last = [part.replace("~1", "/").replace("~0", "~")
                          for part in path.lstrip("/").split("/")]
        node = obj
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        value = copy.deepcopy(operation.get("value"))
        if isinstance(node, list):
            if op == "add":
                node.insert(len(node) if last == "-" else int(last), value)
            elif op == "replace":
                node[int(last)] = value
            else:
                del node[int(last)]
        elif op == "remove":
            del node[last]
        else:
            if op == "replace" and last not in node:
                raise ValueError(f"JSON patch replaces {path}, which does not exist")
            node[last] = value


def pod_spec(obj: dict) -> dict | None:
    """The pod spec of a workload, or None for other kinds."""
    path = POD_SPEC_PATHS.get(obj["kind"])
    if path is None:
        return None
    node = obj
    for part in path:
        node = node[part]
    return node


def _apply_images(kustomization: dict, objects: list[dict]) -> None:
    for image in kustomization.get("images", []):
        for obj in objects:
            spec = pod_spec(obj)
            if spec is None:
                continue
            for container in spec.get("containers", []) + spec.get("initContainers", []):
                name, tag = _split_image(container["image"])
                if name == image["name"]:
                    new_tag = image.get("newTag", tag)
                    container["image"] = image.get("newName", name) + (
                        f":{new_tag}" if new_tag else "")


def _split_image(reference: str) -> tuple[str, str | None]:
    """`(name, tag)` of an image reference (a registry port is not a tag)."""
    name, colon, tag = reference.rpartition(":")
    if not colon or "/" in tag:
        return reference, None
    return name, tag


def canonical(objects: list[dict]) -> dict[tuple[str, str], dict]:
    """`{(kind, name): object}` with keyed lists sorted by their key, to compare builds."""
    return {(o["kind"], o["metadata"]["name"]): _sorted_lists(o) for o in objects}


def _sorted_lists(node, field: str | None = None):
    if isinstance(node, dict):
        return {key: _sorted_lists(value, key) for key, value in node.items()}
    if isinstance(node, list):
        items = [_sorted_lists(item) for item in node]
        if field in MERGE_KEYS and all(isinstance(item, dict) for item in items):
            items.sort(key=lambda item: str(item.get(MERGE_KEYS[field])))
        return items
    return node
