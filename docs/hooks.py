"""MkDocs hooks (`mkdocs.yml`, `hooks:`): the pages that are made from the sources.

- `api.md`: the line `<!-- api-reference -->` is replaced by the reference
  that `gen_api.render()` generates from the `.proto` file and the server's
  OpenAPI description, at every build.
- Files that live beside what they describe are pages of the site too
  (`INCLUDED`): the model card, which `python -m training.model_card` writes
  next to the model, and the Docker images' README. A docs page links to the
  file itself (`../models/en-fr/MODEL_CARD.md`), which works when reading the
  Markdown in the repository; on the site that link goes to the included page.
  Those files are written for a forge's Markdown (GitHub's); `for_mkdocs`
  turns the two constructs that MkDocs' Python-Markdown reads otherwise.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

import gen_api  # docs/gen_api.py: MkDocs puts a hook's directory on sys.path while loading it
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

API_PAGE = "api.md"
API_MARKER = "<!-- api-reference -->"
# Page of the site -> file of the repository it is made from.
INCLUDED = {
    "model-card.md": "models/en-fr/MODEL_CARD.md",
    "docker.md": "docker/README.md",
}


def _repo(config) -> Path:
    return Path(config.config_file_path).resolve().parent


def on_files(files, config):
    """Adds the `INCLUDED` files as pages."""
    for page, source in INCLUDED.items():
        if files.get_file_from_path(page) is not None:
            raise PluginError(f"docs/{page} exists, but the site makes that page from {source}; "
                              f"edit {source}, or remove {page} from INCLUDED in docs/hooks.py")
        path = _repo(config) / source
        if not path.is_file():
            raise PluginError(f"{source} is missing; the page {page} is made from it "
                              "(INCLUDED in docs/hooks.py)")
        text = for_mkdocs(path.read_text(encoding="utf-8"))
        files.append(File.generated(config, page, content=text))
    return files


_FENCE = re.compile(r"^( *)(```|~~~)")
_CODE_SPAN = re.compile(r"`[^`]*`")


def for_mkdocs(markdown: str) -> str:
    """GitHub-flavoured Markdown as Python-Markdown reads it the same way.

    - A fenced code block indented under a list item is moved to the left
      margin (Python-Markdown reads fences only there; the list is cut there).
    - In a table row, `\\|` inside a code span becomes `|` (Python-Markdown
      already keeps a code span's pipes in the cell, and would show the
      backslash).

    Args:
        markdown: the text of a file written for GitHub.

    Returns:
        The same text with those two constructs rewritten; nothing else changes.
    """
    out, indent, fence = [], "", ""
    for line in markdown.split("\n"):
        if fence:  # inside a fence: drop the fence's indentation, change nothing else
            out.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            if line.strip() == fence:
                fence = ""
            continue
        match = _FENCE.match(line)
        if match:
            indent, fence = match.group(1), match.group(2)
            out.append(line[len(indent):])
            continue
        if line.lstrip().startswith("|"):
            line = _CODE_SPAN.sub(lambda m: m.group(0).replace("\\|", "|"), line)
        out.append(line)
    return "\n".join(out)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Puts the API reference into `api.md`; points links to `INCLUDED` files at their pages."""
    if page.file.src_uri == API_PAGE:
        markdown = insert_api_reference(markdown, gen_api.render())
    return link_included(markdown, page.file.src_uri, _repo(config), Path(config.docs_dir))


def insert_api_reference(markdown: str, reference: str) -> str:
    """`markdown` with its one `API_MARKER` line replaced by `reference`.

    Raises:
        PluginError: the marker is missing or there more than once.
    """
    count = markdown.count(API_MARKER)
    if count != 1:
        raise PluginError(f"docs/{API_PAGE} must hold the line {API_MARKER} exactly once, where "
                          f"the generated reference goes. Received: {count} times")
    return markdown.replace(API_MARKER, reference)


def link_included(markdown: str, page_uri: str, repo: Path, docs_dir: Path) -> str:
    """Rewrites Markdown links `](path/to/FILE)` to an `INCLUDED` file into links to its page.

    Args:
        markdown: a page's Markdown.
        page_uri: the page's path in the docs directory, e.g. `model.md`.
        repo: the repository root.
        docs_dir: the docs directory.
    """
    page_dir = posixpath.dirname(page_uri)
    docs = docs_dir.resolve().relative_to(repo.resolve()).as_posix()
    for target, source in INCLUDED.items():
        from_page = posixpath.relpath(source, posixpath.join(docs, page_dir))
        to_page = posixpath.relpath(target, page_dir or ".")
        for end in (")", "#"):
            markdown = markdown.replace(f"]({from_page}{end}", f"]({to_page}{end}")
    return markdown
