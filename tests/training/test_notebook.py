"""The Colab/Kaggle retraining notebook, executed end to end with tiny settings."""

import ast
import json
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

REPO_ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO_ROOT / "training" / "notebooks" / "retrain_en_fr.ipynb"
TINY_PAIRS = REPO_ROOT / "tests" / "fixtures" / "tiny_pairs.tsv"
KERNEL_NAME = "nmt-notebook-test"

PARAMETERS = ("install", "repo_url", "repo_dir", "data", "dev_fraction", "config", "max_time",
              "overrides", "work_dir", "export_version", "beam_size", "example", "offer_download")

TINY_OVERRIDES = {
    "tokenizer.vocab_size": 150, "model.embedding_dim": 16, "model.hidden_dim": 16,
    "model.attention_units": 8, "model.encoder_layers": 1, "optim.max_steps": 6,
    "optim.eval_every": 3, "optim.log_every": 3, "optim.warmup_steps": 2,
    "optim.max_tokens": 400, "optim.precision": "float32",
}


def parameters_cell_index(notebook) -> int:
    tagged = [i for i, cell in enumerate(notebook.cells)
              if "parameters" in cell.metadata.get("tags", [])]
    if len(tagged) != 1:
        raise ValueError(f"expected one cell tagged 'parameters'. Received: cells {tagged}")
    return tagged[0]


def inject_parameters(notebook, values: dict) -> None:
    """Papermill's convention: a cell tagged `injected-parameters` after the `parameters` one."""
    source = "\n".join(f"{name} = {value!r}" for name, value in values.items())
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": ["injected-parameters"]})
    notebook.cells.insert(parameters_cell_index(notebook) + 1, cell)


def text_output(cell) -> str:
    return "".join(out.get("text", "") for out in cell.outputs if out.output_type == "stream")


@pytest.fixture
def this_interpreter_kernel(tmp_path, monkeypatch) -> str:
    """A kernelspec that runs this interpreter, whatever kernelspecs the machine has."""
    spec_dir = tmp_path / "jupyter" / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "nmt test", "language": "python"}
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))  # searched first
    return KERNEL_NAME


def test_parameters_cell_declares_every_setting_as_a_literal():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    tree = ast.parse(notebook.cells[parameters_cell_index(notebook)].source)
    assigned = {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body}
    assert tuple(assigned) == PARAMETERS
    assert assigned["data"] == "anki" and assigned["install"] is True


def test_notebook_is_stored_without_outputs():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(not cell.outputs and cell.execution_count is None for cell in code_cells)


@pytest.mark.slow
def test_notebook_trains_exports_and_packages_a_tiny_model(tmp_path, this_interpreter_kernel):
    from nmt.inference.export import read_metadata

    work = tmp_path / "work"
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    inject_parameters(notebook, {
        "install": False, "data": str(TINY_PAIRS), "dev_fraction": 0.1, "max_time": "5m",
        "overrides": TINY_OVERRIDES, "work_dir": str(work), "export_version": 3,
        "beam_size": 2, "example": "I like coffee.", "offer_download": False,
    })
    client = NotebookClient(notebook, kernel_name=this_interpreter_kernel, timeout=300,
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()

    version_dir = work / "models" / "en-fr" / "3"
    assert (version_dir / "saved_model.pb").exists()
    metadata = read_metadata(version_dir)
    assert metadata["model_config"]["hidden_dim"] == 16, "overrides reached the export"
    assert metadata["data"] == "tiny_pairs.tsv"
    assert metadata["training"]["steps"] == 6
    dev = (work / "data" / "dev.tsv").read_text(encoding="utf-8").splitlines()
    train = (work / "data" / "train.tsv").read_text(encoding="utf-8").splitlines()
    assert dev and train and not {line.split("\t")[0] for line in dev} & {
        line.split("\t")[0] for line in train}

    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    scores, example, download = code_cells[-3:]
    assert "dev BLEU" in text_output(scores)
    assert "I like coffee.\n→ " in text_output(example)
    assert any("image/png" in out.get("data", {}) for out in example.outputs)
    assert "model archive:" in text_output(download)
    with zipfile.ZipFile(work / "en-fr-v3.zip") as archive:
        assert "en-fr/3/saved_model.pb" in archive.namelist()


def test_outside_a_checkout_without_repo_url_says_what_to_set(tmp_path, this_interpreter_kernel):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    first = parameters_cell_index(notebook)
    install_cell = next(i for i in range(first + 1, len(notebook.cells))
                        if notebook.cells[i].cell_type == "code")
    notebook.cells = notebook.cells[: install_cell + 1]
    inject_parameters(notebook, {"work_dir": str(tmp_path / "work")})
    client = NotebookClient(notebook, kernel_name=this_interpreter_kernel, timeout=60,
                            resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(CellExecutionError, match="set repo_url"):
        client.execute()
