import pytest
from batch_fakes import FakeEngine, fake_translation

from batch.engines import (
    BadInputError,
    LocalEngine,
    ServerEngine,
    batches,
    translate_or_explain,
)
from nmt.constants import MAX_SENTENCE_TOKENS
from nmt.types import DecodeOptions


def test_batches_cover_everything_in_order():
    assert [list(b) for b in batches(list(range(7)), 3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(batches([], 3)) == []


def test_translate_or_explain_isolates_rejected_sentences():
    engine = FakeEngine(reject="BAD")
    sentences = [f"s{i}" for i in range(16)]
    sentences[5], sentences[11] = "BAD one", "BAD two"
    results = translate_or_explain(engine, sentences)
    assert [r for r in results if isinstance(r, str)] == [
        "rejected by the model: contains BAD", "rejected by the model: contains BAD"]
    assert isinstance(results[5], str) and isinstance(results[11], str)
    assert [r.text for i, r in enumerate(results) if i not in (5, 11)] == [
        s.upper() for i, s in enumerate(sentences) if i not in (5, 11)]
    # Bisection: far fewer calls than one per sentence.
    assert len(engine.calls) < 16


def test_translate_or_explain_passes_other_failures_on():
    with pytest.raises(RuntimeError, match="engine crashed"):
        translate_or_explain(FakeEngine(fail_on_call=1), ["a", "b"])
    assert translate_or_explain(FakeEngine(), []) == []


class FakeRpcError(Exception):
    """Looks like grpc.RpcError: `code()` returns a status with a `name`."""

    def __init__(self, name: str, details: str):
        super().__init__(details)
        self._name, self._details = name, details

    def code(self):
        return type("Status", (), {"name": self._name})()

    def details(self):
        return self._details


class FakeClient:
    """The `nmt_api.client.TranslationClient` streaming API, with canned translations."""

    def __init__(self, *errors: Exception, drop_last=False):
        self.drop_last = drop_last
        self.errors = list(errors)
        self.streams, self.closed = [], False

    def translate_stream(self, batches, options=None, keep_placeholders=True):
        batches = [list(b) for b in batches]
        self.streams.append((batches, options))
        self.keep_placeholders = keep_placeholders
        if self.errors:
            raise self.errors.pop(0)
        for batch in batches:
            reply = [fake_translation(s) for s in batch]
            yield reply[:-1] if self.drop_last else reply

    def close(self):
        self.closed = True


def test_server_engine_streams_batches_in_order():
    client = FakeClient()
    options = DecodeOptions(beam_size=2)
    engine = ServerEngine(client, options, batch_size=2, target="localhost:1")
    results = engine.translate(["a b", "c", "d e f", "g", "h"])
    assert [r.text for r in results] == ["A B", "C", "D E F", "G", "H"]
    assert client.keep_placeholders is False, "the job keeps them; the server reads as given"
    assert client.streams == [([["a b", "c"], ["d e f", "g"], ["h"]], options)]
    assert engine.settings()["server"] == "localhost:1"
    assert engine.max_source_tokens == MAX_SENTENCE_TOKENS
    engine.close()
    assert client.closed


def test_server_engine_maps_invalid_argument_to_bad_input():
    error = FakeRpcError("INVALID_ARGUMENT", "too long")
    engine = ServerEngine(FakeClient(error), DecodeOptions())
    with pytest.raises(BadInputError, match="too long"):
        engine.translate(["a"])


def test_server_engine_retries_a_busy_server():
    client = FakeClient(FakeRpcError("UNAVAILABLE", "no model loaded"),
                        FakeRpcError("RESOURCE_EXHAUSTED", "queue full"))
    engine = ServerEngine(client, DecodeOptions(), retries=2, backoff_s=0.0)
    assert [r.text for r in engine.translate(["a"])] == ["A"]
    assert len(client.streams) == 3


def test_server_engine_stops_when_the_server_stays_down():
    client = FakeClient(*[FakeRpcError("UNAVAILABLE", "down")] * 3)
    engine = ServerEngine(client, DecodeOptions(), retries=2, backoff_s=0.0)
    with pytest.raises(FakeRpcError, match="down"):
        engine.translate(["a"])
    client = FakeClient(FakeRpcError("INTERNAL", "bug"))
    with pytest.raises(FakeRpcError, match="bug"):
        ServerEngine(client, DecodeOptions(), backoff_s=0.0).translate(["a"])
    assert len(client.streams) == 1  # not retried


def test_server_engine_checks_the_reply_count():
    engine = ServerEngine(FakeClient(drop_last=True), DecodeOptions())
    with pytest.raises(RuntimeError, match="returned 1 translations for 2 sentences"):
        engine.translate(["a", "b"])


def test_engines_validate_batch_size():
    with pytest.raises(ValueError, match="batch_size=0"):
        ServerEngine(FakeClient(), DecodeOptions(), batch_size=0)


class FakeTranslator:
    """Fails like the exported graph does on a batch of blank sentences."""

    def __init__(self):
        self.calls = []

    def translate(self, sentences, options=None):
        import tensorflow as tf

        self.calls.append(list(sentences))
        if not any(s.strip() for s in sentences):
            raise tf.errors.InvalidArgumentError(None, None, "indices[0,0] = 0 is not in [0, 0)")
        return [fake_translation(s) for s in sentences]


def test_local_engine_batches_and_maps_graph_errors():
    translator = FakeTranslator()
    engine = LocalEngine(translator, DecodeOptions(beam_size=1), batch_size=2)
    assert [r.text for r in engine.translate(["a", "b", "c"])] == ["A", "B", "C"]
    assert translator.calls == [["a", "b"], ["c"]]
    with pytest.raises(BadInputError, match=r"indices\[0,0\]"):
        engine.translate(["  "])
    assert engine.max_source_tokens == MAX_SENTENCE_TOKENS


def test_local_engine_matches_the_translator(tiny_model_dir, tiny_pairs):
    from nmt.inference.translator import Translator

    sentences = [english for english, _ in tiny_pairs[:7]]
    options = DecodeOptions(beam_size=2)
    engine = LocalEngine.load(tiny_model_dir, options, batch_size=3)
    expected = Translator.load(tiny_model_dir).translate(sentences, options)
    results = engine.translate(sentences)
    assert [r.text for r in results] == [r.text for r in expected]
    assert [r.score for r in results] == pytest.approx([r.score for r in expected], abs=1e-5)
    assert engine.settings()["model"].endswith("/1")
    assert "precision" not in engine.settings()  # one path: the model says it, as before


def test_the_path_of_a_two_path_export_is_part_of_the_settings(tiny_model_dir, tmp_path):
    from nmt.inference.export import export_saved_model, module_from_export

    both = export_saved_model(module_from_export(tiny_model_dir / "1", "both"), tmp_path, 1)
    engine = LocalEngine.load(both, DecodeOptions(beam_size=1), precision="bfloat16")
    # A job resumed on another path would mix two paths' outputs: its fingerprint changes.
    assert engine.settings()["precision"] == "bfloat16"
    assert engine.translator.info.precision == "bfloat16"


def test_engines_complete_the_options_a_user_set_with_the_models_default():
    from types import SimpleNamespace

    from batch.engines import complete_options

    greedy = DecodeOptions(beam_size=1)

    class Client(FakeClient):
        def default_options(self):
            return greedy

    assert complete_options(DecodeOptions(), lambda: greedy) == DecodeOptions()
    assert complete_options(None, lambda: greedy) == greedy
    assert complete_options({"n_best": 2}, lambda: greedy) == DecodeOptions(beam_size=2,
                                                                            n_best=2)
    engine = ServerEngine(Client(), {"length_penalty": 1.0}, target="localhost:1")
    assert engine.options == DecodeOptions(beam_size=1, length_penalty=1.0)
    assert engine.settings()["options"]["beam_size"] == 1  # the job's fingerprint says it
    translator = FakeTranslator()
    translator.info = SimpleNamespace(default_options=greedy)
    assert LocalEngine(translator, {}).options == greedy
