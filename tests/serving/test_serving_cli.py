"""`nmt serve`: its options, defaults and the configuration they make."""

import argparse

import pytest

from nmt.options import DEFAULT_MODEL_DIR
from serving.cli import add_serve_parser, config_from_args, run_serve


def _parse(*argv):
    parser = argparse.ArgumentParser(prog="nmt")
    add_serve_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["serve", *argv])


def test_defaults():
    args = _parse()

    assert args.model == DEFAULT_MODEL_DIR and DEFAULT_MODEL_DIR.parts[-2:] == ("models", "en-fr")
    assert (args.port, args.metrics_port, args.host) == (50051, 9090, "0.0.0.0")
    assert args.http_port == 8080 and args.http_host is None
    assert (args.intra_op_threads, args.inter_op_threads) == (1, 0)
    assert args.precision == "auto"
    assert (args.cache_entries, args.cache_mb, args.no_cache) == (50_000, 128, False)
    assert args.func is run_serve


def test_the_cache_is_on_by_default_and_can_be_sized_or_turned_off(tmp_path):
    assert config_from_args(_parse("--model", str(tmp_path))).cache.enabled
    sized = config_from_args(_parse("--model", str(tmp_path), "--cache-entries", "10",
                                    "--cache-mb", "0.5")).cache
    assert (sized.max_entries, sized.max_bytes) == (10, 500_000)
    assert not config_from_args(_parse("--model", str(tmp_path), "--no-cache")).cache.enabled
    with pytest.raises(ValueError, match="max_entries=-1"):
        config_from_args(_parse("--model", str(tmp_path), "--cache-entries", "-1"))


def test_options_make_the_config(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_TOKEN", "s3cret")
    args = _parse("--model", str(tmp_path), "--port", "0", "--metrics-port", "0",
                  "--http-port", "8181", "--http-host", "127.0.0.2", "--no-batching",
                  "--max-batch-size", "4", "--max-wait-ms", "1.5",
                  "--max-sentences", "10", "--max-chars", "99", "--poll-interval", "0",
                  "--auth-token-env", "MY_TOKEN", "--precision", "bfloat16")

    config = config_from_args(args)

    assert config.model_dir == tmp_path and config.port == 0 and config.metrics_port == 0
    assert (config.http_port, config.http_host) == (8181, "127.0.0.2")
    assert not config.batching.enabled and config.batching.max_batch_size == 4
    assert config.batching.max_wait_ms == 1.5
    assert (config.limits.max_sentences, config.limits.max_chars) == (10, 99)
    assert config.poll_interval_s == 0 and config.auth_token == "s3cret"
    assert config.precision == "bfloat16"


def test_auth_is_off_without_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("NMT_AUTH_TOKEN", raising=False)

    assert config_from_args(_parse("--model", str(tmp_path))).auth_token is None


def test_an_unknown_precision_fails_before_serving(tmp_path, capsys):
    with pytest.raises(SystemExit):
        _parse("--model", str(tmp_path), "--precision", "fp16")
    assert "invalid choice: 'fp16'" in capsys.readouterr().err
    from serving.server import ServerConfig

    with pytest.raises(ValueError, match="Received: precision='fp16'"):
        ServerConfig(model_dir=tmp_path, precision="fp16")


def test_bad_values_fail_before_serving(tmp_path):
    with pytest.raises(ValueError, match="max_batch_size=0"):
        config_from_args(_parse("--model", str(tmp_path), "--max-batch-size", "0"))
    with pytest.raises(FileNotFoundError, match="--model"):
        config_from_args(_parse("--model", str(tmp_path / "missing")))


def test_nmt_serve_reports_a_missing_model_directory(tmp_path, capsys):
    from nmt_cli.main import main

    assert main(["serve", "--model", str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_glossaries_directory_and_inline_limit(tmp_path):
    args = _parse("--model", str(tmp_path), "--glossaries", str(tmp_path),
                  "--max-glossary-entries", "50")

    config = config_from_args(args)

    assert config.glossaries_dir == tmp_path and config.limits.max_glossary_entries == 50
    default = config_from_args(_parse("--model", str(tmp_path)))
    assert default.glossaries_dir is None and default.limits.max_glossary_entries == 1000
    with pytest.raises(FileNotFoundError, match="glossary directory .* does not exist"):
        config_from_args(_parse("--model", str(tmp_path), "--glossaries", str(tmp_path / "no")))
    with pytest.raises(ValueError, match="max_glossary_entries must be at most 10000"):
        config_from_args(_parse("--model", str(tmp_path), "--max-glossary-entries", "20000"))


def test_connection_age_is_off_by_default_and_set_by_its_flags(tmp_path):
    default = config_from_args(_parse("--model", str(tmp_path)))
    aged = config_from_args(_parse("--model", str(tmp_path), "--max-connection-age", "60",
                                   "--max-connection-age-grace", "30"))

    assert (default.max_connection_age_s, default.max_connection_age_grace_s) == (0, None)
    assert (aged.max_connection_age_s, aged.max_connection_age_grace_s) == (60, 30)
    with pytest.raises(ValueError, match=r"--max-connection-age 60.*Received: "
                                         r"max_connection_age_s=-5"):
        config_from_args(_parse("--model", str(tmp_path), "--max-connection-age", "-5"))


def test_file_limits_have_defaults_and_flags(tmp_path):
    config = config_from_args(_parse("--model", str(tmp_path), "--max-file-bytes", "1000",
                                     "--max-file-sentences", "20"))

    assert (config.limits.max_file_bytes, config.limits.max_file_sentences) == (1000, 20)
    default = config_from_args(_parse("--model", str(tmp_path))).limits
    assert (default.max_file_bytes, default.max_file_sentences) == (10 * 1024 * 1024, 10_000)
    with pytest.raises(ValueError, match="max_file_sentences must be a positive integer. "
                                         "Received: max_file_sentences=0"):
        config_from_args(_parse("--model", str(tmp_path), "--max-file-sentences", "0"))
