"""What `bench/cache.py` sends: UI strings with Zipf-like popularity, PO files run again.

Each workload is a fixed sequence of `Request`s (sentences, or text
documents); `keyed_sentences` gives a request's sentences as the server looks
them up in its translation cache (the same functions as
`serving/servicer.py`), and `repeat_stats` the share of a sequence's
sentences seen before in it, which bounds the cache's hit rate.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np
import polib

from bench.load_test import SENTENCES as SHORT_SENTENCES
from bench.support.inputs import TRAFFIC_MIX, read_sentences
from bench.support.soak_mix import SENTENCES as MIX_SENTENCES
from documents.markup import plan_document
from documents.protection import protect
from documents.sentences import sentences_of
from nmt.constants import DEFAULT_MAX_CHARS

T = TypeVar("T")

SENTENCES, DOCUMENTS = "sentences", "documents"  # what a request's texts are


@dataclasses.dataclass(frozen=True)
class Request:
    """One Translate call.

    Attributes:
        kind: `SENTENCES` (each text one sentence) or `DOCUMENTS` (text
            documents, split into sentences by the server).
        texts: what is sent.
    """

    kind: str
    texts: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.kind not in (SENTENCES, DOCUMENTS):
            raise ValueError(f"kind must be {SENTENCES!r} or {DOCUMENTS!r}. "
                             f"Received: kind={self.kind!r}")


def read_messages(path: Path, max_chars: int = DEFAULT_MAX_CHARS) -> list[str]:
    """What a PO or POT file asks to translate: each live message's msgid and
    msgid_plural, in file order (the header and obsolete `#~` entries left out, and
    texts over `max_chars`, which the server would refuse)."""
    catalog = polib.pofile(str(path))
    return [text for entry in catalog if not entry.obsolete
            for text in (entry.msgid, entry.msgid_plural) if text and len(text) <= max_chars]


def zipf_probabilities(n: int, s: float) -> np.ndarray:
    """`p[r - 1] = r**-s / sum(k**-s for k in 1..n)`: a Zipf law over ranks 1..n, shape `(n,)`."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer. Received: n={n!r}")
    if not 0 <= s <= 10:
        raise ValueError(f"s must be in [0, 10] (0: uniform). Received: s={s!r}")
    weights = np.arange(1, n + 1, dtype=np.float64) ** -s  # (n,)
    return weights / weights.sum()


def zipf_draws(items: Sequence[T], draws: int, s: float, rng: np.random.Generator) -> list[T]:
    """`draws` independent draws of `items`, the item of rank r with probability
    `zipf_probabilities(len(items), s)[r - 1]`; ranks are a random order of `items`."""
    by_rank = rng.permutation(len(items))  # (n,): item index of each rank
    ranks = rng.choice(len(items), size=draws, p=zipf_probabilities(len(items), s))  # (draws,)
    return [items[i] for i in by_rank[ranks]]


def ui_requests(strings: Sequence[str], requests: int, s: float, per_request: int,
                seed: int) -> list[Request]:
    """`requests` Translate calls of 1 to `per_request` strings each (sizes uniform),
    the strings drawn by `zipf_draws` from the distinct `strings`."""
    if requests < 1 or per_request < 1:
        raise ValueError("requests and per_request must be >= 1. Received: "
                         f"requests={requests!r}, per_request={per_request!r}")
    distinct = list(dict.fromkeys(strings))
    if not distinct:
        raise ValueError("strings is empty: no UI string to request")
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, per_request + 1, size=requests)  # (requests,)
    drawn = zipf_draws(distinct, int(sizes.sum()), s, rng)
    ends = np.cumsum(sizes)  # (requests,)
    return [Request(SENTENCES, tuple(drawn[start:end]))
            for start, end in zip(ends - sizes, ends, strict=True)]


def chunked(texts: Sequence[str], size: int, kind: str) -> list[Request]:
    """`texts` in order, `size` a request."""
    return [Request(kind, tuple(texts[i:i + size])) for i in range(0, len(texts), size)]


def rerun_requests(files: Sequence[Sequence[str]], passes: int, per_request: int
                   ) -> list[Request]:
    """Each file's messages in order, `per_request` text documents a request (a request
    never spans two files), all files once per pass."""
    if passes < 1 or per_request < 1:
        raise ValueError("passes and per_request must be >= 1. Received: "
                         f"passes={passes!r}, per_request={per_request!r}")
    one_pass = [r for texts in files for r in chunked(texts, per_request, DOCUMENTS)]
    return one_pass * passes


def keyed_sentences(request: Request) -> list[str]:
    """The request's sentences as the server looks them up in its cache: placeholders
    taken out, documents split (`serving/servicer.py`, client default
    `keep_placeholders=True`); blank ones, answered without the cache, left out."""
    if request.kind == SENTENCES:
        sentences = protect(list(request.texts), True).sentences
    else:
        sentences = sentences_of([plan_document(t, "text", True) for t in request.texts])
    return [s for s in sentences if s.strip()]


@dataclasses.dataclass(frozen=True)
class Repeats:
    """How much a sequence of sentences repeats.

    Attributes:
        sentences: sentences in the sequence.
        repeated: of them, those equal to an earlier one.
        distinct: different sentences.
    """

    sentences: int
    repeated: int
    distinct: int

    @property
    def rate(self) -> float:
        """The share of sentences seen before (NaN for none)."""
        return self.repeated / self.sentences if self.sentences else math.nan


def repeat_stats(sentences: Iterable[str]) -> Repeats:
    seen: set[str] = set()
    total = repeated = 0
    for sentence in sentences:
        total += 1
        repeated += sentence in seen
        seen.add(sentence)
    return Repeats(total, repeated, len(seen))


def workload_repeats(requests: Sequence[Request]) -> Repeats:
    return repeat_stats(s for request in requests for s in keyed_sentences(request))


def warmup_requests(pool: Sequence[str], count: int, per_request: int, kind: str,
                    avoid: set[str]) -> list[Request]:
    """Up to `count` requests of `per_request` texts of `pool`, none holding a sentence
    of `avoid` (the workload's) nor one seen before in the warm-up (texts over the
    server's default character limit left out): each setting's model does the same
    work, and the cache learns nothing of the workload."""
    taken: list[str] = []
    seen = set(avoid)
    for text in pool:
        if len(taken) == count * per_request:
            break
        sentences = keyed_sentences(Request(kind, (text,)))
        fresh = sentences and len(set(sentences)) == len(sentences) and not seen.intersection(
            sentences)
        if fresh and len(text) <= DEFAULT_MAX_CHARS:
            taken.append(text)
            seen.update(sentences)
    return chunked(taken, per_request, kind)


@dataclasses.dataclass(frozen=True)
class Workload:
    """A request sequence, what it repeats, and the requests that warm the server first."""

    name: str
    description: str
    requests: list[Request]
    repeats: Repeats
    warmup: list[Request]


def warmup_pool() -> list[str]:
    """Sentences to warm the server with: the traffic mix, else the built-in lists."""
    built_in = [*MIX_SENTENCES, *SHORT_SENTENCES]
    return [*read_sentences(TRAFFIC_MIX), *built_in] if TRAFFIC_MIX.is_file() else built_in


