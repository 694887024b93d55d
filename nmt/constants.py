"""Facts about an exported model that code on both sides of the wire relies on.

The export writes them, the translator, the server, the batch jobs and the
clients read them; each is defined here once. No TensorFlow import, so the
gRPC client and the batch job's server path can use them.
"""

from __future__ import annotations

from pathlib import Path

METADATA_FILE = "nmt_metadata.json"
# Where an export keeps its metadata, relative to its version directory
# (`assets.extra/` is TensorFlow Serving's place for files beside a SavedModel).
METADATA_PATH = Path("assets.extra") / METADATA_FILE

# Subword tokens (EOS included) the exported model reads of one sentence, source or
# target: longer sentences are truncated to MAX_SENTENCE_TOKENS - 1 pieces plus EOS.
MAX_SENTENCE_TOKENS = 256

# Characters (code points) per sentence that the server and the batch jobs accept unless
# configured otherwise; the model reads at most MAX_SENTENCE_TOKENS pieces of it anyway.
DEFAULT_MAX_CHARS = 1000

# Sentences per model call for file-sized work (batch jobs, scoring, `nmt align`).
DEFAULT_BATCH_SIZE = 64
