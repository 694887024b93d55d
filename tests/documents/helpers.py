"""What the whole-file format tests share: fake translators whose output reads as words (so a
failure is readable), a recorder of what the model was asked, and a line diff.

    from tests.documents.helpers import Recorder, backwards, diff, shouting

A fake stands for `Translator.translate` (`documents.sentences.Translate`): sentences ->
one `TextLinks` per sentence, its word links as `(source word, target word)`.
"""

from __future__ import annotations

import difflib

from documents.sentences import TextLinks


def shouting(sentences):
    """A translator whose output reads as its input: every word upper-cased."""
    return [TextLinks(s.upper(), tuple((i, i) for i in range(len(s.split()))))
            for s in sentences]


def backwards(sentences):
    """Every sentence's words upper-cased in reverse order, linked to where they came from."""
    results = []
    for sentence in sentences:
        words = sentence.upper().split()
        results.append(TextLinks(" ".join(reversed(words)),
                                 tuple((i, len(words) - 1 - i) for i in range(len(words)))))
    return results


class Recorder:
    """`shouting` (or the translations given: `{sentence: (text, links)}`), keeping the
    sentences of each call."""

    def __init__(self, known: dict | None = None):
        self.calls = []
        self.known = known or {}

    def __call__(self, sentences):
        self.calls.append(list(sentences))
        return [TextLinks(*self.known[s]) if s in self.known else shouting([s])[0]
                for s in sentences]

    @property
    def read(self) -> list[str]:
        """Every sentence of every call, in order."""
        return [s for call in self.calls for s in call]


def diff(before: str, after: str) -> list[str]:
    """The lines removed (`-`) and added (`+`), in order (a unified diff without context)."""
    return [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(),
                                                  lineterm="", n=0)
            if line[:1] in "+-" and line[:3] not in ("---", "+++")]
