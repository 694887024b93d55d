"""`nmt_cli.extras`: a command short of a role names the extra to install."""

import re
import sys

import pytest
from test_packaging import pyproject_requirements

from nmt_cli import extras
from nmt_cli import main as cli

REQUIREMENTS = pyproject_requirements()


def test_extras_include_the_extras_they_name():
    installs = extras.extra_distributions(REQUIREMENTS)

    assert {"tensorflow", "grpcio-reflection"} <= installs["serve"]
    assert {"tensorflow", "apache-beam"} <= installs["batch"]
    assert {"tensorflow", "matplotlib", "pyyaml"} <= installs["train"]
    assert installs["align"] == {"eflomal"}
    assert installs["serve"] | installs["batch"] | installs["train"] | installs["align"] \
        <= installs["dev"]
    # The bare install (the client) belongs to no extra.
    assert "grpcio" not in installs["serve"] and "apache-beam" not in installs["serve"]


def test_extra_distributions_reads_markers_and_self_references():
    installs = extras.extra_distributions([
        "numpy>=2",
        'Tensorflow_Text==2.21.1 ; extra == "serve"',
        "nmt-attention[serve] ; extra == 'batch'",
        'apache-beam[gcp]==2.77.0; python_version >= "3.11" and extra == "batch"',
    ])

    assert installs == {"serve": {"tensorflow-text"}, "batch": {"tensorflow-text", "apache-beam"}}


def test_a_line_that_is_no_requirement_is_refused():
    with pytest.raises(ValueError, match="Received: '; extra'"):
        extras.extra_distributions(["; extra"])


@pytest.mark.parametrize("module, distribution", [
    ("tensorflow", "tensorflow"), ("tensorflow_text.ops", "tensorflow-text"),
    ("yaml", "pyyaml"), ("grpc_reflection.v1alpha", "grpcio-reflection"),
    ("google.protobuf", "protobuf"), ("apache_beam", "apache-beam"),
])
def test_distribution_of_an_import_name(module, distribution):
    assert extras.distribution_of(module) == distribution


@pytest.mark.parametrize("command, module, expected", [
    ("serve", "tensorflow", ("serve",)),
    ("serve", "grpc_reflection", ("serve",)),
    ("translate", "tensorflow_text", ("serve",)),
    ("train", "tensorflow", ("train",)),  # train installs serve's TensorFlow: name train
    ("train", "eflomal", ("align",)),  # guided alignment without an alignment file
    ("align-corpus", "tensorflow", ("train", "align")),
    ("align-corpus", "eflomal", ("train", "align")),
    ("batch", "apache_beam", ("batch",)),
    ("translate", "matplotlib", ("train",)),  # --plot: not serve's, the smallest extra with it
    ("evaluate", "sacrebleu", ("train",)),
])
def test_extras_to_install(command, module, expected):
    assert extras.extras_to_install(command, module, REQUIREMENTS) == expected


def test_a_module_of_no_extra_is_a_real_error():
    assert extras.extras_to_install("serve", "not_a_dependency", REQUIREMENTS) is None
    assert extras.extras_to_install("serve", "nmt_api.v1", REQUIREMENTS) is None


def test_without_metadata_the_commands_own_extras_are_named():
    assert extras.extras_to_install("train", "yaml", None) == ("train",)
    assert extras.extras_to_install("no-such-command", "yaml", None) is None


def test_message_names_the_pip_line_and_the_server_alternative():
    message = extras.missing_extra_message("translate", "tensorflow.python", None, REQUIREMENTS)

    assert message == ("nmt translate needs the serve extra (tensorflow is not installed): "
                       "pip install 'nmt-attention[serve]'; or use a running server with "
                       "--server HOST:PORT")
    with_server = extras.missing_extra_message("translate", "matplotlib", "h:1", REQUIREMENTS)
    assert with_server.endswith("pip install 'nmt-attention[train]'")
    assert "--server" not in with_server
    assert extras.missing_extra_message("align-corpus", "eflomal", None, REQUIREMENTS) == (
        "nmt align-corpus needs the train and align extras (eflomal is not installed): "
        "pip install 'nmt-attention[train,align]'")


def test_every_command_has_extras_that_exist(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    commands = re.search(r"\{([a-z,-]+)\}", capsys.readouterr().out).group(1).split(",")
    installs = extras.extra_distributions(REQUIREMENTS)

    assert set(extras.COMMAND_EXTRAS) == set(commands)
    for command, named in extras.COMMAND_EXTRAS.items():
        assert set(named) <= set(installs), f"{command}: {named} are not all extras"


def test_the_command_prints_the_extra_instead_of_a_traceback(monkeypatch, capsys):
    """`nmt translate` where TensorFlow cannot be imported (as in the client install)."""
    monkeypatch.setitem(sys.modules, "tensorflow", None)  # `import tensorflow` now fails
    monkeypatch.delitem(sys.modules, "nmt.inference.translator", raising=False)
    monkeypatch.setattr(extras, "installed_requirements", lambda: REQUIREMENTS)

    code = cli.main(["translate", "Hello."])

    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == ("nmt translate: error: nmt translate needs the serve extra "
                           "(tensorflow is not installed): pip install 'nmt-attention[serve]'; "
                           "or use a running server with --server HOST:PORT")


def test_a_command_whose_options_need_a_missing_role_still_fails_cleanly(monkeypatch, capsys):
    """A client install cannot build `nmt serve`'s options: the stand-in names the extra."""
    def without_server(sub):
        raise ModuleNotFoundError("No module named 'prometheus_client'", name="prometheus_client")

    monkeypatch.setattr(cli, "add_serve_parser", without_server)
    monkeypatch.setattr(extras, "installed_requirements", lambda: REQUIREMENTS)

    code = cli.main(["serve", "--port", "1", "--help"])

    assert code == 2
    assert capsys.readouterr().err.strip() == (
        "nmt serve: error: nmt serve needs the serve extra (prometheus_client is not "
        "installed): pip install 'nmt-attention[serve]'")
