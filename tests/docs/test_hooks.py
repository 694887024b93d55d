"""The MkDocs hooks: the API reference goes in once, included files become pages."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocs", reason="the docs hooks need MkDocs (the dev extra has it)")
# The docs tools are scripts: imported as MkDocs does, with docs/ on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs"))

import hooks  # noqa: E402  (after the skip: it imports mkdocs)
from mkdocs.exceptions import PluginError  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def test_the_api_page_holds_the_marker_once():
    text = (REPO / "docs" / hooks.API_PAGE).read_text(encoding="utf-8")
    assert text.count(hooks.API_MARKER) == 1


def test_the_reference_replaces_the_marker():
    page = f"# API\n\nIntro.\n\n{hooks.API_MARKER}\n\nAfter.\n"
    assert hooks.insert_api_reference(page, "## gRPC\n") == (
        "# API\n\nIntro.\n\n## gRPC\n\n\nAfter.\n")


@pytest.mark.parametrize("count", [0, 2])
def test_a_missing_or_repeated_marker_fails_the_build(count):
    with pytest.raises(PluginError, match=f"exactly once.*Received: {count} times"):
        hooks.insert_api_reference("# API\n" + hooks.API_MARKER * count, "reference")


def test_every_included_file_exists_and_no_page_shadows_it():
    for page, source in hooks.INCLUDED.items():
        assert (REPO / source).is_file(), source
        assert not (REPO / "docs" / page).exists(), page


def test_links_to_included_files_go_to_their_pages():
    page = ("See the [model card](../models/en-fr/MODEL_CARD.md), its "
            "[scores](../models/en-fr/MODEL_CARD.md#scores), the "
            "[images](../docker/README.md) and [serving](serving.md).")
    assert hooks.link_included(page, "model.md", REPO, REPO / "docs") == (
        "See the [model card](model-card.md), its [scores](model-card.md#scores), the "
        "[images](docker.md) and [serving](serving.md).")
    # From a page one directory down, both sides are one level further.
    nested = hooks.link_included("[card](../../models/en-fr/MODEL_CARD.md)", "guide/x.md", REPO,
                                 REPO / "docs")
    assert nested == "[card](../model-card.md)"


def test_indented_fences_move_to_the_margin():
    text = ("- Model: mount it:\n\n  ```sh\n  docker run \\\n      -v x:y img\n  ```\n\n"
            "- Health: next item\n")
    assert hooks.for_mkdocs(text) == (
        "- Model: mount it:\n\n```sh\ndocker run \\\n    -v x:y img\n```\n\n- Health: next item\n")


def test_escaped_pipes_in_table_code_spans_are_unescaped():
    row = "| BLEU | 47.22 | beam 5; `nrefs:var\\|case:mixed` and a\\|b |"
    assert hooks.for_mkdocs(row) == "| BLEU | 47.22 | beam 5; `nrefs:var|case:mixed` and a\\|b |"


def test_code_inside_a_fence_is_left_alone():
    text = "```sh\n| `a\\|b` |\n```\n| `c\\|d` |"
    assert hooks.for_mkdocs(text) == "```sh\n| `a\\|b` |\n```\n| `c|d` |"
