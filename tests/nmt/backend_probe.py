"""Runs the model on the Keras backend of its process and writes what it computes.

`python tests/nmt/backend_probe.py CASES.json INPUTS.npz OUT_DIR`, with
`KERAS_BACKEND` set: for each case (`name`, model `config`, `weights` file) it
writes `OUT_DIR/<name>.npz`; tests/nmt/test_backends.py compares two backends'.
The outputs: teacher-forced logits, attention and alignment-head rows (with
agreement, both directions), one search step's logits and attention, the
loss, and the logits of the first sentence alone (padding must change nothing).
"""

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from keras import ops  # noqa: E402

from nmt.model import ModelConfig, Seq2Seq, sequence_loss  # noqa: E402


def probe(config: dict, weights: str, inputs: dict) -> dict:
    model = Seq2Seq(ModelConfig.from_dict(config))
    model.build_for()
    model.load_weights(weights)
    source, target_in, target_out = inputs["source"], inputs["target_in"], inputs["target_out"]
    out = model.teacher_forced(source, target_in, target_out)
    memory = model.encode(source)
    step_logits, _, step_attention = model.decode_step(
        target_in[:, 0], model.initial_state(memory), memory)
    alone = model.teacher_forced(source[:1, :inputs["first_source_length"]],
                          target_in[:1, :inputs["first_target_length"]],
                          target_out[:1, :inputs["first_target_length"]])
    result = {name: ops.convert_to_numpy(value) for name, value in out.items()}
    result["step_logits"] = ops.convert_to_numpy(step_logits)
    result["step_attention"] = ops.convert_to_numpy(step_attention)
    result["loss"] = ops.convert_to_numpy(sequence_loss(target_out, out["logits"], 0.1))
    result["alone_logits"] = ops.convert_to_numpy(alone["logits"])
    result["alone_head"] = ops.convert_to_numpy(alone["head"])
    return result


if __name__ == "__main__":
    cases_path, inputs_path, out_dir = sys.argv[1:4]
    with np.load(inputs_path) as arrays:
        inputs = {name: arrays[name] for name in arrays.files}
    for case in json.loads(Path(cases_path).read_text()):
        outputs = probe(case["config"], case["weights"], inputs)
        np.savez(Path(out_dir) / f"{case['name']}.npz", **outputs)
