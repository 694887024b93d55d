"""The docs tools (`docs/gen_api.py`, `docs/hooks.py`) are scripts, not a package: import them
as MkDocs does, with `docs/` on the path."""

import sys
from pathlib import Path

DOCS_DIR = Path(__file__).resolve().parents[2] / "docs"
if str(DOCS_DIR) not in sys.path:
    sys.path.insert(0, str(DOCS_DIR))
