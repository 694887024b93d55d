"""The README stays a front page: the two commands first, short, and its links lead somewhere.

The pages under docs/ are checked by the strict MkDocs build (`make docs`); the README is
not part of that site, so its links are checked here.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
MAX_LINES = 200  # the rest belongs on a page under docs/


def test_the_two_commands_come_first():
    head = README.read_text(encoding="utf-8").splitlines()[:8]
    commands = [line.split("#")[0].strip() for line in head if line.startswith("make ")]
    assert commands == ["make serve", "make test"], head


def test_the_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, (f"README.md has {lines} lines; move sections to a page under "
                                f"docs/ and link it (at most {MAX_LINES} lines)")


def test_relative_links_lead_to_files_and_headings_that_exist():
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    relative = [t for t in targets if not re.match(r"[a-z]+:", t)]
    assert relative
    for target in relative:
        path, _, anchor = target.partition("#")
        assert (REPO / path).exists(), f"README.md links to {target}, which does not exist"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", (REPO / path).read_text(encoding="utf-8"),
                                  flags=re.MULTILINE)
            slugs = {re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", h).strip().lower())
                     for h in headings}
            assert anchor in slugs, f"README.md links to {target}: no such heading in {path}"
