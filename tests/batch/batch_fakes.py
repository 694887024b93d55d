"""Fakes for the batch tests: translations that read as words, no TensorFlow needed.

A plain module, not a conftest: `conftest` is the shared root module that
other tests import by that name.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nmt.types import Hypothesis, Translation


def fake_translation(sentence: str, score: float | None = None) -> Translation:
    """`sentence` upper-cased word by word, each target word linked to its source word."""
    words = sentence.split()
    source_tokens = tuple(words) + ("</s>",)
    target_tokens = tuple(w.upper() for w in words)
    weights = np.full((len(target_tokens), len(source_tokens)), 1 / len(source_tokens))
    hypothesis = Hypothesis(
        text=" ".join(target_tokens), target_tokens=target_tokens,
        score=-len(sentence) / 7 if score is None else score, alignment=weights,
        word_alignment=tuple((i, i) for i in range(len(words))),
    )
    return Translation(source=sentence, source_tokens=source_tokens, nbest=(hypothesis,))


class FakeEngine:
    """An engine that upper-cases, records its calls, and can reject or fail.

    Args:
        reject: sentences containing this text make a call raise BadInputError.
        fail_on_call: the call (1-based) that raises RuntimeError, as a crash would.
    """

    max_source_tokens = None

    def __init__(self, reject: str | None = None, fail_on_call: int | None = None):
        self.reject, self.fail_on_call = reject, fail_on_call
        self.calls: list[list[str]] = []

    def translate(self, sentences: Sequence[str]) -> list[Translation]:
        from batch.engines import BadInputError

        self.calls.append(list(sentences))
        if self.fail_on_call is not None and len(self.calls) == self.fail_on_call:
            raise RuntimeError("engine crashed")
        if self.reject is not None and any(self.reject in s for s in sentences):
            raise BadInputError(f"contains {self.reject}")
        return [fake_translation(s) for s in sentences]

    def settings(self) -> dict:
        return {"engine": "fake"}
