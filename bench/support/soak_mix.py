"""What the soak test's clients send (bench/soak.py), and how each answer is judged.

A client draws each request's kind from `MIX` (weights renormalised over the
kinds its protocol has), builds it from `Texts`, sends it over gRPC
(`nmt_api.client.AsyncTranslationClient`) or HTTP/JSON (aiohttp), and
`classify` says whether the answer is the one wanted: OK for the valid kinds,
the documented error for the kinds that must fail (`EXPECTED_ERRORS`).
Anything else (another code, an error where OK was due, OK where an error was
due, a client-side failure) is unintended.
"""

from __future__ import annotations

import dataclasses
import html
import json
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench.support.inputs import read_sentences

# Relative weights of the request kinds. `repeat` draws from a few UI strings, so the
# translation cache answers it after the first time; `stream` exists over gRPC only
# (`TranslateStream`), `malformed_json` over HTTP only.
MIX = {
    "sentence": 30, "repeat": 20, "batch": 10, "document": 10, "align": 8, "nbest": 8,
    "stream": 6, "oversized": 3, "bad_beam": 3, "malformed_json": 2,
}
PROTOCOLS = ("grpc", "http")
ONLY_OVER = {"stream": "grpc", "malformed_json": "http"}
BATCH_SENTENCES = 8  # sentences of a `batch` request
STREAM_SENTENCES, STREAM_BATCH = 6, 2  # a `stream` call: 3 requests of 2 sentences
NBEST = {"beam_size": 5, "n_best": 3}
BAD_BEAM = {"beam_size": 0}  # the proto allows it; the server must refuse it

OK, INTENDED, UNINTENDED = "ok", "intended", "unintended"
MAX_EXAMPLES = 20  # unintended answers kept whole for the report

# Short UI strings and headings: the `repeat` requests and the documents' headings.
UI_STRINGS = (
    "Save", "Cancel", "Settings", "Sign in", "Log out", "Search", "Next page",
    "Previous page", "Your account", "Delete this file?", "Are you sure?",
    "Changes saved.", "Something went wrong.", "Try again later.", "Contact us",
    "Privacy policy", "Terms of use", "Frequently asked questions", "Download", "Share",
)
# The sentences when no sentences file is there (--sentences, default the traffic mix).
SENTENCES = (
    "The train to Lyon leaves at eight o'clock.", "My brother lives in a small village.",
    "Could you send me the report before Friday?", "We stayed at home because of the rain.",
    "The museum is closed on Mondays.", "She bought three apples and a loaf of bread.",
    "I forgot my umbrella at the office.", "The children are playing in the park.",
    "He has been learning French for two years.", "Please turn off the lights when you leave.",
    "The meeting was moved to next week.", "This restaurant serves excellent fish.",
    "Our neighbours have a big black dog.", "The doctor told me to rest for a few days.",
    "I would like a cup of coffee, please.", "They are building a new bridge over the river.",
    "The book I am reading is very long.", "We need to buy a new washing machine.",
    "The weather will be sunny tomorrow.", "Where did you put the keys?",
    "A man in a red jacket is riding a bicycle.", "Two women are talking in a busy street.",
    "The price of petrol went up again this month.", "Nobody answered the phone.",
    "The film starts in ten minutes.", "I cannot find my glasses anywhere.",
    "Tom and Mary got married last summer.", "The shop on the corner sells fresh bread.",
    "My computer is too slow for this game.", "The garden looks beautiful in spring.",
)
# The Align pairs when no parallel file is there (--pairs, default Multi30k test 2017).
PAIRS = (
    ("The cat is sleeping on the sofa.", "Le chat dort sur le canapé."),
    ("I am going to the market.", "Je vais au marché."),
    ("Where is the station?", "Où est la gare ?"),
    ("The children are playing in the garden.", "Les enfants jouent dans le jardin."),
    ("We arrived late last night.", "Nous sommes arrivés tard hier soir."),
    ("This book is very interesting.", "Ce livre est très intéressant."),
    ("Can you help me, please?", "Pouvez-vous m'aider, s'il vous plaît ?"),
    ("She works in a hospital.", "Elle travaille dans un hôpital."),
)


@dataclasses.dataclass(frozen=True)
class Texts:
    """What requests are made of.

    Attributes:
        sentences: English sentences (single, batches, streams, documents),
            each at most the server's character limit.
        repeats: a few short strings sent again and again (`repeat`, headings).
        pairs: `(English, French)` pairs for Align.
    """

    sentences: tuple[str, ...]
    repeats: tuple[str, ...] = UI_STRINGS
    pairs: tuple[tuple[str, str], ...] = PAIRS


def load_texts(sentences_path: Path, pairs_path: Path, max_chars: int) -> tuple[Texts, str]:
    """`(texts, where they come from)`: the files where they exist, else the lists above.

    Lines over `max_chars` characters are left out: sent, they would be refused.
    """
    if sentences_path.is_file():
        sentences = tuple(s for s in read_sentences(sentences_path) if len(s) <= max_chars)
        where = f"{len(sentences)} sentences of {sentences_path}"
    else:
        sentences, where = SENTENCES, f"the {len(SENTENCES)} sentences of bench/support/soak_mix.py"
    french = pairs_path.with_suffix(".fr")
    if pairs_path.is_file() and french.is_file():
        pairs = tuple((en, fr) for en, fr in zip(read_sentences(pairs_path),
                                                 read_sentences(french), strict=False)
                      if len(en) <= max_chars and len(fr) <= max_chars)
        where += f"; Align: {len(pairs)} pairs of {pairs_path} and {french.name}"
    else:
        pairs = PAIRS
        where += f"; Align: the {len(PAIRS)} pairs of bench/support/soak_mix.py"
    if not sentences or not pairs:
        raise SystemExit(f"no sentence of at most {max_chars} characters in {where}")
    return Texts(sentences, UI_STRINGS, pairs), where


def mix_weights(protocol: str, mix: Mapping[str, float] = MIX) -> dict[str, float]:
    """The kinds `protocol` sends and the share of each (they sum to 1)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}. Received: protocol={protocol!r}")
    kinds = {kind: weight for kind, weight in mix.items()
             if ONLY_OVER.get(kind, protocol) == protocol}
    total = sum(kinds.values())
    return {kind: weight / total for kind, weight in kinds.items()}


@dataclasses.dataclass(frozen=True)
class Request:
    """One request of the mix, the same for both protocols.

    Attributes:
        kind: a key of `MIX`.
        sentences: the sentences, documents (`document`: HTML) or Align sources.
        targets: the Align targets, one per source.
        options: `DecodeOptions` fields it sets; None for the model's defaults.
    """

    kind: str
    sentences: tuple[str, ...]
    targets: tuple[str, ...] = ()
    options: Mapping[str, int] | None = None


def build_request(kind: str, rng: random.Random, texts: Texts, max_chars: int) -> Request:
    """A request of `kind` from `texts`, drawn with `rng`."""
    if kind not in MIX:
        raise ValueError(f"kind must be one of {tuple(MIX)}. Received: kind={kind!r}")
    if kind == "align":
        source, target = rng.choice(texts.pairs)
        return Request(kind, (source,), (target,))
    if kind == "document":
        return Request(kind, (html_document(rng, texts, max_chars),))
    if kind == "oversized":
        return Request(kind, (oversized_text(rng, texts, max_chars),))
    if kind in ("batch", "stream"):
        count = BATCH_SENTENCES if kind == "batch" else STREAM_SENTENCES
        return Request(kind, tuple(rng.choices(texts.sentences, k=count)))
    pool = texts.repeats if kind == "repeat" else texts.sentences
    options = {"nbest": NBEST, "bad_beam": BAD_BEAM}.get(kind)
    return Request(kind, (rng.choice(pool),), options=options)


def html_document(rng: random.Random, texts: Texts, max_chars: int) -> str:
    """A heading (a repeated UI string) and up to three sentences in paragraphs and a
    list, one word in bold; blocks are left off the end to stay within `max_chars`."""
    first, second, third = (html.escape(s, quote=False)
                            for s in rng.choices(texts.sentences, k=3))
    words = second.split()
    bold = rng.randrange(len(words))
    words[bold] = f"<b>{words[bold]}</b>"
    blocks = [f"<h2>{html.escape(rng.choice(texts.repeats), quote=False)}</h2>",
              f"<p>{first} {' '.join(words)}</p>", f"<ul><li>{third}</li></ul>"]
    while len(blocks) > 1 and len("".join(blocks)) > max_chars:
        blocks.pop()
    return "".join(blocks)


def oversized_text(rng: random.Random, texts: Texts, max_chars: int) -> str:
    """Sentences joined until the text is over `max_chars` characters."""
    text = rng.choice(texts.sentences)
    while len(text) <= max_chars:
        text += " " + rng.choice(texts.sentences)
    return text


def http_body(request: Request) -> tuple[str, bytes]:
    """`(path, JSON body)` of `request` for the HTTP API; `malformed_json` is cut mid-way."""
    if request.kind == "align":
        body = {"sources": list(request.sentences), "targets": list(request.targets)}
        return "/v1/align", json.dumps(body, ensure_ascii=False).encode()
    body: dict = {"sentences": list(request.sentences)}
    if request.options:
        body["options"] = {_camel(name): value for name, value in request.options.items()}
    if request.kind == "document":
        body["format"] = "TEXT_FORMAT_HTML"
    text = json.dumps(body, ensure_ascii=False)
    if request.kind == "malformed_json":  # cut between characters: UTF-8, but not JSON
        text = text[:len(text) // 2]
    return "/v1/translate", text.encode()


def _camel(name: str) -> str:
    """A proto field's JSON name: `beam_size` -> `beamSize`."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How a request was answered.

    Attributes:
        code: the gRPC status name (`OK`, `INVALID_ARGUMENT`, ...; over HTTP
            the body's `code`), or `CLIENT_<exception>` when no answer came.
        http_status: the HTTP status; None over gRPC.
        details: the server's message (or the client's exception).
    """

    code: str
    http_status: int | None = None
    details: str = ""


@dataclasses.dataclass(frozen=True)
class Expected:
    """The error a kind of request must get.

    Attributes:
        code: gRPC status name.
        http_status: the HTTP status of that error.
        marker: words the server's message must contain; they tell this error
            from others with the same code (a full queue is RESOURCE_EXHAUSTED
            too, HTTP 429).
    """

    code: str
    http_status: int
    marker: str

    def matches(self, outcome: Outcome) -> bool:
        return (outcome.code == self.code and self.marker in outcome.details
                and outcome.http_status in (None, self.http_status))


# A sentence over --max-chars is over a limit (serving.validation: RESOURCE_EXHAUSTED, 413).
EXPECTED_ERRORS = {
    "oversized": Expected("RESOURCE_EXHAUSTED", 413, "too long"),
    "bad_beam": Expected("INVALID_ARGUMENT", 400, "beam_size"),
    "malformed_json": Expected("INVALID_ARGUMENT", 400, "not JSON"),
}


def classify(kind: str, outcome: Outcome) -> str:
    """`OK`, `INTENDED` (the error `kind` must get) or `UNINTENDED` (anything else)."""
    expected = EXPECTED_ERRORS.get(kind)
    if expected is None:
        return OK if outcome.code == "OK" else UNINTENDED
    return INTENDED if expected.matches(outcome) else UNINTENDED


def client_failure(error: BaseException) -> Outcome:
    """The outcome of a request that got no answer (connection refused, timeout, ...)."""
    return Outcome(f"CLIENT_{type(error).__name__}", None, str(error)[:200])


class Tally:
    """Requests answered so far, by kind, protocol and verdict, and the first unintended ones."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str, str]] = Counter()
        self.examples: list[tuple[str, str, Outcome]] = []

    def add(self, kind: str, protocol: str, outcome: Outcome) -> str:
        verdict = classify(kind, outcome)
        self.counts[kind, protocol, verdict] += 1
        if verdict == UNINTENDED and len(self.examples) < MAX_EXAMPLES:
            self.examples.append((kind, protocol, outcome))
        return verdict

    def total(self, verdict: str | None = None) -> int:
        return sum(n for (_, _, v), n in self.counts.items() if verdict in (None, v))

    def by_kind(self, kinds: Sequence[str] = tuple(MIX)) -> list[dict]:
        """Per kind: requests over each protocol and per verdict."""
        rows = []
        for kind in kinds:
            row = {"kind": kind, **{p: 0 for p in PROTOCOLS}, OK: 0, INTENDED: 0, UNINTENDED: 0}
            for (k, protocol, verdict), n in self.counts.items():
                if k == kind:
                    row[protocol] += n
                    row[verdict] += n
            rows.append(row)
        return rows


class GrpcSender:
    """Sends requests over gRPC: `AsyncTranslationClient`, and a bare stub for `bad_beam`
    (the client checks `DecodeOptions` before sending, so it cannot send a beam of 0)."""

    def __init__(self, target: str, timeout: float):
        self._target, self._timeout = target, timeout

    async def __aenter__(self) -> GrpcSender:
        import grpc

        from nmt_api import protos
        from nmt_api.client import AsyncTranslationClient

        self._pb2, pb2_grpc = protos.load()
        self.client = AsyncTranslationClient(self._target, timeout=self._timeout)
        self._channel = grpc.aio.insecure_channel(self._target)
        self._stub = pb2_grpc.TranslationServiceStub(self._channel)
        return self

    async def __aexit__(self, *exc) -> None:
        await self.client.close()
        await self._channel.close()

    async def send(self, request: Request) -> Outcome:
        import grpc

        try:
            await self._call(request)
        except grpc.RpcError as error:
            return Outcome(error.code().name, None, error.details() or "")
        except Exception as error:  # no answer: counted as unintended, the load goes on
            return client_failure(error)
        return Outcome("OK")

    async def _call(self, request: Request) -> None:
        from nmt.types import DecodeOptions

        client, sentences = self.client, request.sentences
        if request.kind == "align":
            await client.align(sentences, request.targets)
        elif request.kind == "document":
            await client.translate_documents(sentences, "html")
        elif request.kind == "stream":
            batches = [sentences[i:i + STREAM_BATCH]
                       for i in range(0, len(sentences), STREAM_BATCH)]
            async for _ in client.translate_stream(batches):
                pass
        elif request.kind == "bad_beam":
            message = self._pb2.TranslateRequest(
                sentences=sentences, options=self._pb2.DecodeOptions(**request.options))
            await self._stub.Translate(message, timeout=self._timeout)
        else:
            options = DecodeOptions(**request.options) if request.options else None
            await client.translate(sentences, options)


class HttpSender:
    """Sends requests as JSON bodies to the HTTP API (one aiohttp session, pooled)."""

    def __init__(self, url: str, timeout: float, connections: int):
        self._url, self._timeout, self._connections = url, timeout, connections

    async def __aenter__(self) -> HttpSender:
        import aiohttp

        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self._connections),
            timeout=aiohttp.ClientTimeout(total=self._timeout))
        return self

    async def __aexit__(self, *exc) -> None:
        await self._session.close()

    async def send(self, request: Request) -> Outcome:
        path, body = http_body(request)
        try:
            async with self._session.post(self._url + path, data=body,
                                          headers={"Content-Type": "application/json"}) as r:
                status, data = r.status, await r.read()
        except Exception as error:  # no answer: counted as unintended, the load goes on
            return client_failure(error)
        if status == 200:
            return Outcome("OK", status)
        try:
            answer = json.loads(data)
            return Outcome(str(answer["code"]), status, str(answer["message"]))
        except (ValueError, KeyError, TypeError):
            return Outcome("UNKNOWN", status, data[:200].decode("utf-8", "replace"))
