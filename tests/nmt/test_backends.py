"""The same model on TensorFlow, JAX and PyTorch: same weights, same outputs (float32, 1e-5).

The backend is fixed when Keras is imported, so each backend runs in a subprocess
(`tests/nmt/backend_probe.py`); this process (TensorFlow) writes the weights. JAX is
in the dev extra; PyTorch (a 192 MB wheel, 761 MB installed for its CPU build) is
compared where it is installed.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

PROBE = Path(__file__).with_name("backend_probe.py")
REPO = Path(__file__).resolve().parents[2]
TOLERANCE = 1e-5

# Every kind of layer: Luong general attention without input feeding (the shipped
# architecture) with the agreement head reading a convolution; Bahdanau's decoder with
# local-p attention, input feeding's scan and a GRU; Luong concat with input feeding.
CONFIGS = {
    "shipped": dict(decoder="luong", attention="general", input_feeding=False,
                    alignment_head="general", alignment_head_keys="both",
                    alignment_head_context=4, alignment_head_context_input=6,
                    alignment_head_agreement="shared"),
    "bahdanau-local-gru": dict(decoder="bahdanau", attention="bahdanau", normalize=True,
                               local_window=2, cell="gru", alignment_head="bahdanau",
                               alignment_head_context=3, alignment_head_reader="conv"),
    "luong-concat-feed": dict(decoder="luong", attention="concat", input_feeding=True,
                              scale=True, alignment_head="concat",
                              alignment_head_agreement="separate"),
}
BASE = dict(source_vocab_size=40, target_vocab_size=40, embedding_dim=8, hidden_dim=12,
            attention_units=6, encoder_layers=2, share_embeddings=True, dropout=0.0)


OTHER_BACKENDS = [backend for backend in ("jax", "torch") if importlib.util.find_spec(backend)]

pytestmark = pytest.mark.skipif(not OTHER_BACKENDS,
                                reason="neither jax nor torch is installed (the dev extra "
                                       "installs jax)")


def _inputs(path: Path) -> dict:
    """Two sentences padded on the right; the first one is the shorter, so the
    batch pads it by two source and two target positions."""
    source = np.array([[5, 6, 7, 3, 0, 0], [8, 9, 10, 11, 12, 3]], np.int32)
    target_in = np.array([[2, 13, 14, 0, 0], [2, 15, 16, 17, 18]], np.int32)
    target_out = np.array([[13, 14, 3, 0, 0], [15, 16, 17, 18, 3]], np.int32)
    inputs = dict(source=source, target_in=target_in, target_out=target_out,
                  first_source_length=np.array(4), first_target_length=np.array(3))
    np.savez(path, **inputs)
    return inputs


def _run_probe(backend: str, cases: Path, inputs: Path, out: Path) -> None:
    out.mkdir()
    env = {**os.environ, "KERAS_BACKEND": backend, "JAX_PLATFORMS": "cpu",
           "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run([sys.executable, str(PROBE), str(cases), str(inputs), str(out)],
                            env=env, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """Each config's outputs on TensorFlow and on JAX, from weights this process made:
    `{backend: {config name: {output: array}}}`."""
    from nmt.model import ModelConfig, Seq2Seq

    directory = tmp_path_factory.mktemp("backends")
    cases = []
    for name, overrides in CONFIGS.items():
        config = {**BASE, **overrides}
        model = Seq2Seq(ModelConfig.from_dict(config))
        model.build_for()
        weights = directory / f"{name}.weights.h5"
        model.save_weights(weights)
        cases.append({"name": name, "config": config, "weights": str(weights)})
    (directory / "cases.json").write_text(json.dumps(cases))
    _inputs(directory / "inputs.npz")
    results = {}
    for backend in ("tensorflow", *OTHER_BACKENDS):
        _run_probe(backend, directory / "cases.json", directory / "inputs.npz",
                   directory / backend)
        results[backend] = {}
        for name in CONFIGS:
            with np.load(directory / backend / f"{name}.npz") as arrays:
                results[backend][name] = {key: arrays[key] for key in arrays.files}
    return results


@pytest.mark.slow
@pytest.mark.parametrize("backend", OTHER_BACKENDS)
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_backends_compute_what_tensorflow_does_with_the_same_weights(name, backend, probed):
    tensorflow, other = probed["tensorflow"][name], probed[backend][name]
    names = {"logits", "attention", "head", "step_logits", "step_attention", "loss",
             "alone_logits", "alone_head"}
    if CONFIGS[name].get("alignment_head_agreement", "none") != "none":
        names |= {"head_rows", "head_columns"}
    assert names <= set(other)
    for output in sorted(names):
        np.testing.assert_allclose(other[output], tensorflow[output], atol=TOLERANCE,
                                   rtol=TOLERANCE, err_msg=f"{name} on {backend}: {output}")


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", *OTHER_BACKENDS])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_padding_on_the_right_changes_no_output(name, backend, probed):
    outputs = probed[backend][name]
    # The first sentence alone gives the rows it gives in the padded batch.
    np.testing.assert_allclose(outputs["alone_logits"][0], outputs["logits"][0, :3],
                               atol=TOLERANCE)
    np.testing.assert_allclose(outputs["alone_head"][0], outputs["head"][0, :3, :4],
                               atol=TOLERANCE)
    # A step from BOS is the first teacher-forced row.
    np.testing.assert_allclose(outputs["step_logits"], outputs["logits"][:, 0],
                               atol=TOLERANCE)


@pytest.mark.skipif("jax" not in OTHER_BACKENDS, reason="jax is not installed")
def test_the_model_imports_without_tensorflow_under_jax():
    code = ("import sys; import nmt.model, nmt.layers.attention, nmt.layers.decoder, "
            "nmt.layers.encoder, nmt.layers.step_kernels, nmt.alignment.guided_alignment, "
            "nmt.data.shards, training.keras_trainer, training.weight_files, "
            "training.accelerator.train; print('tensorflow' in sys.modules)")
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "False"
