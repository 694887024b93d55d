"""The exported SavedModel: self-contained, its three signatures, stock ops only."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from conftest import REPO_ROOT, make_tiny_module
from tensorflow.core.protobuf import saved_model_pb2

from nmt.constants import MAX_SENTENCE_TOKENS
from nmt.data.tokenizer import BOS_ID, EOS_ID, PAD_ID
from nmt.inference.confidence import total_log_prob
from nmt.inference.export import (
    DEFAULT_OPTIONS,
    TranslationModule,
    export_saved_model,
    module_from_export,
    read_metadata,
)
from nmt.inference.shortlist import Shortlist, batch_vocabulary, sentence_vocabularies

LONG = (
    "The children want to read a new book about the old city, and they like coffee, "
    "chocolate and soup; she is tired but happy today."
)
BATCHES = {
    "mixed": ["I love you.", "", LONG, "Où est la gare ? « Le café » coûte 12 € — naïve 漢字 🙂"],
    "one": ["I eat bread."],
    "empty_string": [""],
}
OPTIONS = {
    "beam_size": 3, "max_length_ratio": 1.5, "max_length_offset": 4, "length_penalty": 1.0,
    "coverage_penalty": 0.2, "n_best": 2, "replace_unknown": False,
}
OPTION_DTYPES = {
    "beam_size": tf.int32, "max_length_ratio": tf.float32, "max_length_offset": tf.int32,
    "length_penalty": tf.float32, "coverage_penalty": tf.float32, "n_best": tf.int32,
    "replace_unknown": tf.bool,
}
ALIGN_SOURCES = ["I love you.", "Hello\u200bthere!", ""]
ALIGN_TARGETS = ["Je t'aime!", "Salut toi", "Oui."]
# The tensorflow-text ops of the graph: normalisation and SentencePiece (with offsets: the
# characters under each unknown source piece).
TF_TEXT_OPS = {"NormalizeUTF8", "SentencepieceOp", "SentencepieceTokenizeOp",
               "SentencepieceTokenizeWithOffsetsOp", "SentencepieceIdToStringOp"}
# Ops that run Python: registered in core TensorFlow, absent from TF Serving.
PYTHON_OPS = {"PyFunc", "PyFuncStateless", "EagerPyFunc"}

# Runs in a fresh interpreter that can import TensorFlow and TF Text but not
# this project (a meta-path blocker keeps that true even after `pip install -e .`).
_CLEAN_PROCESS = r'''
import importlib.abc, json, sys

PROJECT = {"nmt", "training", "serving", "batch", "bench", "tests"}

class _BlockProject(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in PROJECT:
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, _BlockProject())
request = json.load(open(sys.argv[1], encoding="utf-8"))
try:
    import nmt  # noqa: F401
    project_importable = True
except ImportError:
    project_importable = False

import tensorflow as tf
from tensorflow.python.framework import op_def_registry

core_ops = [op for op in request["ops"] if op_def_registry.get(op) is not None]
import tensorflow_text  # noqa: E402,F401
text_ops = [op for op in request["ops"] if op not in core_ops and op_def_registry.get(op)]

def decode(value):
    if isinstance(value, list):
        return [decode(item) for item in value]
    return value.decode("utf-8") if isinstance(value, bytes) else value

def plain(outputs):
    return {key: decode(value.numpy().tolist()) for key, value in outputs.items()}

results = {}
for path in request["models"]:
    loaded = tf.saved_model.load(path)
    serve = loaded.signatures["serving_default"]
    results[path] = {
        "serving_default": {
            name: plain(serve(sentences=tf.constant(batch, tf.string)))
            for name, batch in request["batches"].items()
        },
        "translate_with_options": plain(loaded.signatures["translate_with_options"](
            sentences=tf.constant(request["batches"]["mixed"]),
            **{k: tf.constant(v, request["option_dtypes"][k])
               for k, v in request["options"].items()},
        )),
        "align": plain(loaded.signatures["align"](
            sources=tf.constant(request["sources"]), targets=tf.constant(request["targets"]))),
    }
repo = request["repo"]
project_modules = sorted(
    name for name, module in list(sys.modules.items())
    if str(getattr(module, "__file__", "") or "").startswith(repo)
    and "/.venv/" not in str(module.__file__)
)
json.dump({"project_importable": project_importable, "project_modules": project_modules,
           "core_ops": core_ops, "text_ops": text_ops, "results": results},
          open(sys.argv[2], "w", encoding="utf-8"))
'''


# ------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def module(tiny_tokenizers) -> TranslationModule:
    """The tiny model with the shipped model's kind of alignment head and link rule."""
    module = make_tiny_module(tiny_tokenizers, alignment_head="general",
                              alignment_head_keys="both")
    module.metadata["word_links"] = "intersect"
    return module


@pytest.fixture(scope="module")
def exports(module, tmp_path_factory) -> dict[str, Path]:
    """Version 1 exported from `module`; version 2 re-exported from version 1."""
    base = tmp_path_factory.mktemp("export") / "tiny"
    first = export_saved_model(module, base, 1)
    second = export_saved_model(module_from_export(first), base, 2)
    return {"first": first, "reexported": second}


def saved_model_proto(version_dir: Path) -> saved_model_pb2.SavedModel:
    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((version_dir / "saved_model.pb").read_bytes())
    return proto


def graph_ops(version_dir: Path) -> set[str]:
    """Every op type in the graph and in every function of its library."""
    ops = set()
    for meta_graph in saved_model_proto(version_dir).meta_graphs:
        library = meta_graph.graph_def.library
        functions = {function.signature.name for function in library.function}
        ops |= {node.op for node in meta_graph.graph_def.node}
        for function in library.function:
            ops |= {node.op for node in function.node_def}
        ops -= functions  # a node may call a library function by its name
    return ops


@pytest.fixture(scope="module")
def clean_run(exports, tmp_path_factory) -> dict:
    """Outputs of both exports, and op registrations, from a process without the project."""
    workdir = tmp_path_factory.mktemp("clean")
    request = {
        "ops": sorted(graph_ops(exports["first"]) | graph_ops(exports["reexported"])),
        "models": [str(exports["first"]), str(exports["reexported"])],
        "batches": BATCHES, "options": OPTIONS,
        "option_dtypes": {key: dtype.name for key, dtype in OPTION_DTYPES.items()},
        "sources": ALIGN_SOURCES, "targets": ALIGN_TARGETS,
        "repo": str(REPO_ROOT.resolve()),
    }
    (workdir / "request.json").write_text(json.dumps(request), encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-c", _CLEAN_PROCESS, "request.json", "result.json"],
        cwd=workdir, env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"},
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads((workdir / "result.json").read_text(encoding="utf-8"))


def in_process(module) -> dict:
    """The same calls as `_CLEAN_PROCESS`, on the in-process module."""
    options = {k: tf.constant(v, OPTION_DTYPES[k]) for k, v in OPTIONS.items()}
    return {
        "serving_default": {
            name: module.translate(tf.constant(batch, tf.string))
            for name, batch in BATCHES.items()
        },
        "translate_with_options": module.translate_with_options(
            tf.constant(BATCHES["mixed"]), **options
        ),
        "align": module.align(tf.constant(ALIGN_SOURCES), tf.constant(ALIGN_TARGETS)),
    }


def assert_outputs_equal(actual: dict, expected: dict, where: str) -> None:
    """`actual` from JSON (strings decoded), `expected` tensors; floats to 1e-5."""
    assert sorted(actual) == sorted(expected), where
    for key, tensor in expected.items():
        value = tensor.numpy()
        if value.dtype == object:
            decoded = np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(value)
            assert np.array(actual[key], dtype=object).tolist() == decoded.tolist(), (where, key)
        else:
            np.testing.assert_allclose(
                np.asarray(actual[key], value.dtype), value, atol=1e-5, err_msg=f"{where} {key}"
            )


# Outputs read off the search's running sums of log-probabilities.
LOG_PROB_KEYS = ("scores", "piece_scores", "word_scores")


def running_sum_tolerance(piece_scores) -> float:
    """How far log-probabilities (`LOG_PROB_KEYS`) of one search may move when its logits
    come from other float32 kernels (other shapes, other instruction sets).

    1e-5 for the logits themselves (a product summed in another order moves by about
    1e-7 of its size), plus one unit in the last place of the largest running sum: a
    piece's score is the difference of two float32 prefix sums (`nmt.inference.search`),
    so a logit that moves by 1e-7 may round a sum the other way, 1.5e-5 once a sum
    passes -128. An id counted twice in the normalisation moves every piece by about 1/V
    (5e-3 for the tiny model), far outside it.

    Args:
        piece_scores: `(..., T)` the searched pieces' scores.
    """
    largest = np.abs(np.asarray(piece_scores, np.float32)).sum(axis=-1).max(initial=0.0)
    return 1e-5 + float(np.spacing(np.float32(largest)))


# ------------------------------------------------------------------------------ tests


def test_export_loads_without_the_project(clean_run):
    assert not clean_run["project_importable"]
    assert clean_run["project_modules"] == []


def test_clean_process_outputs_equal_the_in_process_module(module, exports, clean_run):
    expected = in_process(module)
    actual = clean_run["results"][str(exports["first"])]
    for name in BATCHES:
        assert_outputs_equal(
            actual["serving_default"][name], expected["serving_default"][name], name
        )
    assert_outputs_equal(
        actual["translate_with_options"], expected["translate_with_options"], "options"
    )
    assert_outputs_equal(actual["align"], expected["align"], "align")


def test_reexport_gives_identical_outputs(exports, clean_run):
    first = clean_run["results"][str(exports["first"])]
    second = clean_run["results"][str(exports["reexported"])]
    assert second == first
    assert read_metadata(exports["reexported"]) == read_metadata(exports["first"])


def test_signatures_match_the_design_contract(exports):
    signatures = saved_model_proto(exports["first"]).meta_graphs[0].signature_def

    def spec(tensors):
        return {
            name: (tf.as_dtype(info.dtype).name, [dim.size for dim in info.tensor_shape.dim])
            for name, info in tensors.items()
        }

    outputs = {
        "translations": ("string", [-1]), "source_tokens": ("string", [-1, -1]),
        "target_tokens": ("string", [-1, -1]), "alignments": ("float32", [-1, -1, -1]),
        "attention": ("float32", [-1, -1, -1]), "word_attention": ("float32", [-1, -1, -1]),
        "scores": ("float32", [-1]), "word_alignments": ("string", [-1]),
        "source_lengths": ("int32", [-1]), "target_lengths": ("int32", [-1]),
        # Each piece's log-probability and each target word's mean, searched or forced.
        "piece_scores": ("float32", [-1, -1]), "word_scores": ("float32", [-1, -1]),
    }
    with_n_best = {name: (dtype, [-1, *shape]) for name, (dtype, shape) in outputs.items()}
    options = {name: (dtype.name, []) for name, dtype in OPTION_DTYPES.items()}
    assert {"serving_default", "translate_with_options", "align"} <= set(signatures)
    assert spec(signatures["serving_default"].inputs) == {"sentences": ("string", [-1])}
    assert spec(signatures["serving_default"].outputs) == outputs
    assert spec(signatures["translate_with_options"].inputs) == {
        "sentences": ("string", [-1]), **options
    }
    assert spec(signatures["translate_with_options"].outputs) == with_n_best
    assert spec(signatures["align"].inputs) == {
        "sources": ("string", [-1]), "targets": ("string", [-1])
    }
    assert spec(signatures["align"].outputs) == outputs


def test_graph_uses_only_core_and_tf_text_ops(exports, clean_run):
    ops = graph_ops(exports["first"]) | graph_ops(exports["reexported"])
    core, text = set(clean_run["core_ops"]), set(clean_run["text_ops"])
    assert ops & PYTHON_OPS == set()
    assert ops - core - text == set(), "ops in neither core TensorFlow nor tensorflow-text"
    # docker/README.md names these for TF Serving users; keep it in step.
    assert ops & text == TF_TEXT_OPS


def test_metadata_is_where_tf_serving_keeps_extra_files(exports):
    # Read by the server, the model card and outside tools: the path is part of the format.
    metadata = exports["first"] / "assets.extra" / "nmt_metadata.json"
    assert json.loads(metadata.read_text()) == read_metadata(exports["first"])


def test_sources_and_targets_are_cut_at_max_sentence_tokens(module):
    long = tf.constant([" ".join(["cat"] * 2 * MAX_SENTENCE_TOKENS)])

    out = module.align(long, long)

    # MAX_SENTENCE_TOKENS - 1 pieces and </s>, on both sides.
    assert out["source_lengths"].numpy().tolist() == [MAX_SENTENCE_TOKENS]
    assert out["target_lengths"].numpy().tolist() == [MAX_SENTENCE_TOKENS]


def test_sentencepiece_models_are_assets(module, exports):
    for version_dir in exports.values():
        assets = version_dir / "assets"
        assert (assets / "en.spm.model").read_bytes() == module.source_tokenizer.model_proto
        assert (assets / "fr.spm.model").read_bytes() == module.target_tokenizer.model_proto
        # Nothing points at the private copies the tokenizers were built from.
        assert b"nmt-spm-" not in (version_dir / "saved_model.pb").read_bytes()


def test_odd_inputs_give_well_formed_outputs(clean_run, exports):
    outputs = clean_run["results"][str(exports["first"])]["serving_default"]
    for name, batch in BATCHES.items():
        out = outputs[name]
        assert len(out["translations"]) == len(batch) == len(out["word_alignments"])
        for i in range(len(batch)):
            source_length, target_length = out["source_lengths"][i], out["target_lengths"][i]
            source_tokens, target_tokens = out["source_tokens"][i], out["target_tokens"][i]
            assert source_tokens[source_length - 1] == "</s>"
            assert set(source_tokens[source_length:]) <= {""}
            assert "" not in target_tokens[:target_length]
            assert set(target_tokens[target_length:]) <= {""}
            weights = np.asarray(out["alignments"][i])  # (T, S)
            np.testing.assert_allclose(weights[:target_length].sum(axis=1), 1.0, atol=1e-5)
            assert not weights[target_length:].any() and not weights[:, source_length:].any()
    empty = outputs["empty_string"]
    assert empty["source_tokens"] == [["</s>"]]
    assert empty["word_alignments"] == [""]  # no source words, so no links


def test_empty_batch(module):
    out = module.translate(tf.constant([], tf.string))
    assert out["translations"].shape == (0,)
    assert out["alignments"].shape[0] == 0
    forced = module.align(tf.constant([], tf.string), tf.constant([], tf.string))
    assert forced["word_alignments"].shape == (0,)


def test_export_refuses_an_existing_version(module, exports):
    with pytest.raises(ValueError, match="already exists"):
        export_saved_model(module, exports["first"].parent, 1)
    with pytest.raises(ValueError, match="version=0"):
        export_saved_model(module, exports["first"].parent, 0)


def test_overwrite_replaces_a_version_without_partial_directories(module, tmp_path):
    base = tmp_path / "models"
    first = export_saved_model(module, base, 1)
    stamp = (first / "saved_model.pb").stat().st_mtime_ns
    again = export_saved_model(module, base, 1, overwrite=True)
    assert again == first
    assert (again / "saved_model.pb").stat().st_mtime_ns >= stamp
    assert sorted(p.name for p in base.iterdir()) == ["1"], "staging directories are cleaned up"


def test_cli_reexports_the_highest_version_of_a_base_directory(exports, tmp_path):
    from nmt_cli.main import main

    base = exports["reexported"].parent  # versions 1 and 2
    assert main(["export", "--from-export", str(base), "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["2"]
    assert (tmp_path / "2" / "saved_model.pb").exists()


def test_cli_export_from_a_run_needs_a_version(tmp_path, capsys):
    from nmt_cli.main import main

    assert main(["export", "--run", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "--version is required" in capsys.readouterr().err


def matmul_dtypes(version_dir: Path) -> set[int]:
    """The `T` attribute of every matrix product in the export's functions."""
    found = set()
    for meta_graph in saved_model_proto(version_dir).meta_graphs:
        for function in meta_graph.graph_def.library.function:
            for node in function.node_def:
                if node.op in ("MatMul", "BatchMatMulV2", "BatchMatMulV3"):
                    found.add(node.attr["T"].type if "T" in node.attr else node.attr["Ta"].type)
    return found


@pytest.fixture(scope="module")
def bfloat16_export(exports, tmp_path_factory) -> Path:
    """The first export re-exported with its bfloat16 path only."""
    from nmt_cli.main import main

    out = tmp_path_factory.mktemp("bfloat16")
    assert main(["export", "--from-export", str(exports["first"]), "--out", str(out),
                 "--precision", "bfloat16"]) == 0
    return out / exports["first"].name


def test_bfloat16_reexport_multiplies_in_bfloat16_with_the_same_ops(exports, bfloat16_export):
    version = bfloat16_export
    assert read_metadata(version)["precision"] == "bfloat16"
    assert read_metadata(exports["first"])["precision"] == "float32"
    assert tf.bfloat16.as_datatype_enum in matmul_dtypes(version)
    assert tf.bfloat16.as_datatype_enum not in matmul_dtypes(exports["first"])
    assert graph_ops(version) <= graph_ops(exports["first"])  # the checked op list holds
    loaded = tf.saved_model.load(str(version))
    out = loaded.signatures["serving_default"](sentences=tf.constant(BATCHES["mixed"]))
    assert out["alignments"].dtype == tf.float32
    rows = out["alignments"].numpy().sum(-1)  # (batch, T): attention rows sum to one
    for i, length in enumerate(out["target_lengths"].numpy()):
        np.testing.assert_allclose(rows[i, :length], 1.0, atol=2e-2)
    assert read_metadata(version)["precisions"] == ["bfloat16"]
    assert set(loaded.signatures) == {"serving_default", "translate_with_options", "align"}
    assert module_from_export(version).precisions == ("bfloat16",)  # the API keeps its paths


def signature_spec(signature) -> tuple:
    """A signature's inputs and outputs: `(name, dtype, shape)` sorted."""
    return tuple(sorted((name, tf.as_dtype(info.dtype).name,
                         tuple(dim.size for dim in info.tensor_shape.dim))
                        for tensors in (signature.inputs, signature.outputs)
                        for name, info in tensors.items()))


@pytest.mark.slow
def test_an_export_carries_both_paths_by_default(exports, bfloat16_export, tmp_path):
    from nmt_cli.main import main

    single = {"float32": exports["first"], "bfloat16": bfloat16_export}
    assert main(["export", "--from-export", str(single["bfloat16"]),
                 "--out", str(tmp_path / "both")]) == 0  # a one-path export gains the other
    both = tmp_path / "both" / exports["first"].name

    metadata = read_metadata(both)
    assert (metadata["precision"], metadata["precisions"]) == ("float32", ["float32", "bfloat16"])
    assert module_from_export(both).precisions == ("float32", "bfloat16")
    signatures = saved_model_proto(both).meta_graphs[0].signature_def
    assert set(signatures) - {"__saved_model_init_op"} == {
        "serving_default", "translate_with_options", "align", "serving_bfloat16",
        "translate_with_options_bfloat16"}
    assert signature_spec(signatures["serving_bfloat16"]) == signature_spec(
        signatures["serving_default"])
    assert signature_spec(signatures["translate_with_options_bfloat16"]) == signature_spec(
        signatures["translate_with_options"])
    assert graph_ops(both) <= graph_ops(exports["first"])  # the checked op list holds
    # Each path computes exactly what the one-path export of that precision does.
    loaded = {name: tf.saved_model.load(str(path))
              for name, path in (("both", both), *single.items())}
    sentences = tf.constant(BATCHES["mixed"])
    options = {k: tf.constant(v, OPTION_DTYPES[k]) for k, v in OPTIONS.items()}
    for precision, name, single_name, kwargs in (
            ("float32", "serving_default", "serving_default", {}),
            ("float32", "translate_with_options", "translate_with_options", options),
            ("bfloat16", "serving_bfloat16", "serving_default", {}),
            ("bfloat16", "translate_with_options_bfloat16", "translate_with_options", options)):
        got = loaded["both"].signatures[name](sentences=sentences, **kwargs)
        want = loaded[precision].signatures[single_name](sentences=sentences, **kwargs)
        for key, value in want.items():
            np.testing.assert_array_equal(got[key].numpy(), value.numpy(), err_msg=f"{name} {key}")
    bf16, f32 = (loaded["both"].signatures[name](sentences=sentences)["scores"].numpy()
                 for name in ("serving_bfloat16", "serving_default"))
    assert not np.array_equal(bf16, f32)  # two paths, not one twice


# ------------------------------------------------------------------------------ piece scores


@pytest.fixture(scope="module")
def massless_specials(tiny_tokenizers, tmp_path_factory) -> tuple[TranslationModule, Path]:
    """The tiny model with PAD and BOS given no probability, as a trained model gives them
    (they are never a label), and its export. The search never picks them and normalises
    without them; forced decoding normalises over the whole vocabulary: only then do an
    untrained model's two piece scores agree."""
    module = make_tiny_module(tiny_tokenizers, alignment_head="general",
                              alignment_head_keys="both")
    bias = module.model.decoder.projection.bias
    bias.assign(tf.tensor_scatter_nd_update(bias, [[PAD_ID], [BOS_ID]], [-40.0, -40.0]))
    return module, export_saved_model(module, tmp_path_factory.mktemp("massless") / "tiny", 1)


def forced_piece_log_probs(module, sentence: str, pieces: list[bytes]) -> np.ndarray:
    """Each piece's log-probability by forced decoding of the pieces themselves (the
    computation of `align`, on ids rather than on a text)."""
    target = module.target_tokenizer
    vocab = target.id_to_piece(tf.range(target.vocab_size)).numpy().tolist()
    ids = [EOS_ID if piece == b"</s>" else vocab.index(piece) for piece in pieces]
    source = module._encode_sources(tf.constant([sentence]))
    out = module.model.teacher_forced(source, tf.constant([[BOS_ID, *ids[:-1]]]),
                                      tf.constant([ids]))
    log_probs = tf.nn.log_softmax(out["logits"][0]).numpy()  # (T, V)
    return log_probs[np.arange(len(ids)), ids]


def test_translations_score_their_pieces_as_forced_decoding_does(massless_specials):
    # Every hypothesis of an n-best 3 search: its piece scores are those the align
    # signature gives its text (when the text tokenizes back into the searched pieces;
    # an untrained model's often does not) or forced decoding gives its pieces, and they
    # sum to its log-probability, recovered from its normalised score.
    module, version = massless_specials
    loaded = tf.saved_model.load(str(version))
    sentences = ["I love you.", "hello", "the cat is black .", "Où est la gare ?"]
    n_best = 3
    options = {**{k: tf.constant(v, OPTION_DTYPES[k]) for k, v in OPTIONS.items()},
               "n_best": tf.constant(n_best)}
    out = {key: value.numpy() for key, value in loaded.signatures["translate_with_options"](
        sentences=tf.constant(sentences), **options).items()}
    texts = out["translations"].reshape(-1)
    forced = {key: value.numpy() for key, value in loaded.signatures["align"](
        sources=tf.constant(np.repeat(sentences, n_best)), targets=tf.constant(texts)).items()}
    round_trips = 0
    for k, (i, n) in enumerate(np.ndindex(len(sentences), n_best)):
        length, source_length = out["target_lengths"][i, n], out["source_lengths"][i, n]
        pieces, tokens = out["piece_scores"][i, n], out["target_tokens"][i, n, :length].tolist()
        where = f"sentence {i} rank {n}: {texts[k]!r}"
        assert length > 0 and not pieces[length:].any(), where
        atol = running_sum_tolerance(pieces)  # searched step by step, forced at once
        if forced["target_tokens"][k, :length].tolist() == tokens:  # EOS forced if cut
            round_trips += 1
            np.testing.assert_allclose(pieces[:length], forced["piece_scores"][k, :length],
                                       atol=atol, err_msg=where)
            words = len(texts[k].split())
            np.testing.assert_allclose(out["word_scores"][i, n, :words],
                                       forced["word_scores"][k, :words], atol=atol,
                                       err_msg=where)
        else:
            np.testing.assert_allclose(
                pieces[:length], forced_piece_log_probs(module, sentences[i], tokens),
                atol=atol, err_msg=where)
        total = total_log_prob(out["scores"][i, n], length, OPTIONS["length_penalty"],
                               OPTIONS["coverage_penalty"],
                               out["attention"][i, n, :length, :source_length])
        assert pieces.sum() == pytest.approx(total, rel=1e-4), where
    assert round_trips >= 2, "too few texts tokenize back into their pieces: other sentences"


# ------------------------------------------------------------------------------ shortlists


def whole_vocabulary(module) -> Shortlist:
    config = module.model.config
    return Shortlist(frequent=np.arange(config.target_vocab_size, dtype=np.int32),
                     translations=np.full((config.source_vocab_size, 1), EOS_ID, np.int32))


def test_a_shortlist_of_the_whole_vocabulary_changes_nothing(module):
    # The same words and numbers; the listed logits come from another kernel (the
    # vocabulary's 200 columns padded to 256, normalised per sentence).
    listed = module.with_shortlist(whole_vocabulary(module))
    options = {k: tf.constant(v, OPTION_DTYPES[k]) for k, v in OPTIONS.items()}
    for name, batch in BATCHES.items():
        want = module.translate_with_options(tf.constant(batch), **options)
        got = listed.translate_with_options(tf.constant(batch), **options)
        log_prob_atol = running_sum_tolerance(want["piece_scores"])
        for key, value in want.items():
            if value.dtype == tf.string:
                assert got[key].numpy().tolist() == value.numpy().tolist(), (name, key)
                continue
            # Attention weights (at most 1) and lengths (integers) to 1e-5.
            atol = log_prob_atol if key in LOG_PROB_KEYS else 1e-5
            np.testing.assert_allclose(got[key], value, atol=atol, err_msg=f"{name} {key}")


def small_shortlist(module) -> Shortlist:
    config = module.model.config
    rng = np.random.default_rng(3)
    return Shortlist(
        frequent=np.array([10, 11, 12], np.int32),
        translations=rng.integers(4, config.target_vocab_size, (config.source_vocab_size, 2),
                                  dtype=np.int32))


def test_each_sentence_searches_only_its_own_shortlist(module):
    shortlist = small_shortlist(module)
    listed = module.with_shortlist(shortlist)
    source = listed._encode_sources(tf.constant(BATCHES["mixed"]))
    options = {**DEFAULT_OPTIONS, "beam_size": 3, "n_best": 3}
    result, _ = listed._search(source, options)
    for sentence, tokens in zip(source.numpy(), result.tokens.numpy(), strict=True):
        words = sentence[sentence != PAD_ID]
        own = {*shortlist.frequent, *shortlist.translations[words].ravel(), EOS_ID}
        produced = set(tokens.ravel()) - {PAD_ID}
        assert produced and produced <= own
    # Without the list the untrained model uses other words.
    full, _ = module._search(source, options)
    allowed = set(batch_vocabulary(sentence_vocabularies(
        tf.constant(shortlist.frequent), tf.constant(shortlist.translations), source,
        module.model.config.target_vocab_size)).numpy())
    assert set(full.tokens.numpy().ravel()) - allowed


def test_with_a_shortlist_a_sentence_translates_the_same_alone_and_in_a_batch(module):
    listed = module.with_shortlist(small_shortlist(module))
    together = listed.translate(tf.constant(BATCHES["mixed"]))
    for i, sentence in enumerate(BATCHES["mixed"]):
        alone = listed.translate(tf.constant([sentence]))
        assert alone["translations"][0].numpy() == together["translations"][i].numpy()
        np.testing.assert_allclose(alone["scores"][0], together["scores"][i],
                                   atol=running_sum_tolerance(together["piece_scores"][i]))


@pytest.mark.slow
def test_cli_builds_a_shortlist_that_reexports_keep(exports, tiny_pairs_path, tmp_path):
    from nmt_cli.main import main

    listed_dir = tmp_path / "listed"
    assert main(["export", "--from-export", str(exports["first"]), "--out", str(listed_dir),
                 "--shortlist-corpus", str(tiny_pairs_path), "--shortlist-size", "20", "5"]) == 0
    version = listed_dir / exports["first"].name
    assert read_metadata(version)["shortlist"] == {
        "frequent": 20, "per_source_token": 5, "corpus": tiny_pairs_path.name}
    loaded = tf.saved_model.load(str(version))
    assert loaded.shortlist_translations.shape[1] == 5
    out = loaded.signatures["serving_default"](sentences=tf.constant(BATCHES["mixed"]))
    assert out["translations"].shape == (len(BATCHES["mixed"]),)
    # Two more core ops: the union of ids, and the lists read from their variable.
    assert graph_ops(version) - graph_ops(exports["first"]) <= {"Unique", "ResourceGather"}

    kept = module_from_export(version)
    np.testing.assert_array_equal(kept.shortlist.translations,
                                  loaded.shortlist_translations.numpy())
    assert kept.metadata["shortlist"]["corpus"] == tiny_pairs_path.name
    full_dir = tmp_path / "full"
    assert main(["export", "--from-export", str(version), "--out", str(full_dir),
                 "--no-shortlist"]) == 0
    assert "shortlist" not in read_metadata(full_dir / version.name)
    assert module_from_export(full_dir / version.name).shortlist is None


# ------------------------------------------------------------------------------ alignment head


@pytest.fixture(scope="module")
def context_module(tiny_tokenizers) -> TranslationModule:
    """The tiny model with a head that reads the whole target (`alignment_head_context`),
    projected down first (`alignment_head_context_input`; the shipped model's reader
    reads the queries whole, and its tests cover that)."""
    return make_tiny_module(tiny_tokenizers, alignment_head="general",
                            alignment_head_keys="both", alignment_head_context=6,
                            alignment_head_context_input=5)


@pytest.fixture(scope="module")
def agreement_module(tiny_tokenizers) -> TranslationModule:
    """The tiny model whose head also scores the reverse direction with its own
    attention (`alignment_head_agreement: separate`): both directions' keys travel
    in the search's memory."""
    return make_tiny_module(tiny_tokenizers, alignment_head="general",
                            alignment_head_keys="both", alignment_head_context=6,
                            alignment_head_agreement="separate")


@pytest.mark.parametrize("which, n_best", [("module", 1), ("context_module", 3),
                                           ("agreement_module", 2)])
def test_search_rows_of_the_head_equal_forced_alignment_of_the_translation(which, n_best,
                                                                           request):
    # The head's row of each piece, carried through beam search, is the row that forced
    # decoding of the chosen pieces computes (the same states read the same pieces;
    # with a target context, each hypothesis is read as its own sequence). Pieces, not
    # text: an untrained model's output need not tokenize back into the same pieces.
    from nmt.data.tokenizer import BOS_ID

    module = request.getfixturevalue(which)
    sentences = tf.constant(["the cat is black .", "where is the station ?", "hello"])
    options = {**{k: tf.constant(v, OPTION_DTYPES[k]) for k, v in OPTIONS.items()},
               "n_best": tf.constant(n_best), "replace_unknown": tf.constant(False)}
    source = module._encode_sources(sentences)
    result, head = module._search(source, options)
    for n in range(n_best):
        target_out = result.tokens[:, n].numpy()  # (B, T)
        shifted = np.concatenate([np.full_like(target_out[:, :1], BOS_ID),
                                  target_out[:, :-1]], axis=1)
        target_in = np.where(target_out > 0, shifted, 0)
        forced = module.model.teacher_forced(source, tf.constant(target_in),
                                             tf.constant(target_out))
        for i in range(3):
            length = int(result.lengths[i, n])
            assert length > 0
            np.testing.assert_allclose(head[i, n, :length], forced["head"][i, :length],
                                       atol=1e-5)
            np.testing.assert_allclose(result.attention[i, n, :length],
                                       forced["attention"][i, :length], atol=1e-5)
            assert not np.allclose(head[i, n, :length], result.attention[i, n, :length])


def test_exported_links_follow_the_metadata_rule(module):
    from nmt.alignment.word_links import word_links

    out = module.align(tf.constant(ALIGN_SOURCES), tf.constant(ALIGN_TARGETS))
    for n, (source, target) in enumerate(zip(ALIGN_SOURCES, ALIGN_TARGETS, strict=True)):
        matrix = out["word_attention"][n].numpy()[:len(target.split()), :len(source.split())]
        got = sorted(tuple(int(x) for x in link.split("-"))
                     for link in out["word_alignments"][n].numpy().decode().split())
        assert got == word_links(matrix, "intersect")
