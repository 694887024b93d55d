"""What the whole-file formats share: the options every one takes, and the step that
sends a file's sentences to the model.

Each format (`documents.po`, `.xliff`, `.subtitles`, `.docx`, `.markdown`) reads
its file into texts and plans them (`documents.markup`); then the distinct
sentences of the whole file go to `translate` together, sorted by length (then
text), so that a call holds sentences of like length, `batch_size` a call, with
`progress(done, total)` after each call. A sentence the file repeats is read once.

    joined, sentences = translate_plans(plans, translate, options.batch_size, progress)

Nothing here imports TensorFlow: `translate` is any `documents.sentences.Translate`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from documents.sentences import SentenceResult, Translate, join_documents, sentences_of
from nmt.constants import DEFAULT_BATCH_SIZE

# Called with `(sentences done, sentences)` after each call of `translate`.
Progress = Callable[[int, int], None]
Key = TypeVar("Key")


@dataclasses.dataclass(frozen=True, kw_only=True)
class FileOptions:
    """The options every whole-file format takes (keyword-only, after the format's own).

    Attributes:
        placeholders: give placeholders back exactly (`documents.placeholders`).
        batch_size: sentences per `translate` call.
    """

    placeholders: bool = True
    batch_size: int = DEFAULT_BATCH_SIZE

    def __post_init__(self):
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be at least 1. Received: {self.batch_size}")


def translate_distinct(sentences: Iterable[str], translate: Translate, batch_size: int,
                       progress: Progress | None = None) -> dict[str, SentenceResult]:
    """Each distinct sentence's result; the sentences sorted by length, `batch_size` a call.

    Args:
        sentences: a file's sentences, repeats included.
        translate: sentences -> one result per sentence.
        batch_size: sentences per call of `translate`.
        progress: called with `(sentences done, distinct sentences)` after each call.

    Returns:
        `{sentence: result}`, one entry per distinct sentence (so as many as the model read).
    """
    distinct = sorted(set(sentences), key=lambda s: (len(s), s))
    results = {}
    for start in range(0, len(distinct), batch_size):
        chunk = distinct[start:start + batch_size]
        results.update(zip(chunk, translate(chunk), strict=True))
        if progress is not None:
            progress(len(results), len(distinct))
    return results


def translate_plans(plans: Mapping[Key, object], translate: Translate, batch_size: int,
                    progress: Progress | None = None) -> tuple[dict[Key, object], int]:
    """Each plan's translation, the sentences of all plans read by `translate_distinct`.

    Args:
        plans: `{key: plan}`: `DocumentPlan`s or `documents.markup` plans (anything
            `join_documents` takes).
        translate, batch_size, progress: as for `translate_distinct`.

    Returns:
        `({key: the plan's translation, from join_documents}, distinct sentences read)`.
    """
    ordered = list(plans.values())
    results = translate_distinct(sentences_of(ordered), translate, batch_size, progress)
    joined = join_documents(ordered, [results[s] for s in sentences_of(ordered)])
    return dict(zip(plans, joined, strict=True)), len(results)
