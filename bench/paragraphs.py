"""Paragraphs: the traffic mix joined into documents of 3-5 sentences, translated as documents.

The lines of `out-of-domain/traffic-mix.en`, in file order, are grouped into
paragraphs of 3, 4 or 5 (sizes drawn with a fixed seed) and joined with a
space. A line that does not end a sentence (captions have no final stop) gets
a full stop first, so that the paragraph's sentences can be found; the
one-by-one translation gets the same lines.

Quality: each paragraph translated as one document (`nmt translate --format
text`: split into sentences with sentencex, translated, joined), against its
lines translated one by one and joined; both scored on the same paragraph
segments against the joined French references (BLEU and chrF, sacrebleu;
references from `anki-fra-eng/test.tsv` (every translation of a sentence),
`multi30k-test2017-flickr.fr` and `newsdiscusstest2015.fr`, which the mix
was drawn from). Also printed: the share of paragraphs split back into
exactly their lines, and the BLEU of the documents' translations against the
one-by-one translations (1 would be the same text).

Speed (`--speed`): documents per second translating the paragraphs
in-process (`Translator`, `--batch-size` documents a call), and through
`nmt serve` (started here; `--clients` blocking gRPC clients, each sending
`--documents-per-request` documents per `translate_documents` request).

    python bench/paragraphs.py [--model models/en-fr] [--data ../shared/data]
        [--limit N] [--seed 7] [--speed [--clients 4] [--documents-per-request 1]]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.support.inputs import add_model_and_data_arguments, machine  # noqa: E402
from documents.sentences import translate_documents  # noqa: E402
from nmt.evaluation.metrics import corpus_scores  # noqa: E402

SIZES = (3, 4, 5)  # sentences per paragraph
_SENTENCE_END = (".", "!", "?", "…", '"', "”", "»")


def as_sentence(line: str) -> str:
    """`line` ending a sentence: a full stop added where it has no final punctuation."""
    line = " ".join(line.split())
    return line if line.endswith(_SENTENCE_END) else line + "."


def paragraphs(lines: Sequence[str], seed: int = 7, sizes: Sequence[int] = SIZES
               ) -> list[list[int]]:
    """Consecutive line indices grouped into paragraphs whose sizes are drawn from `sizes`.

    The last paragraph may be shorter (what is left); no line is dropped.
    """
    rng = random.Random(seed)
    groups, start = [], 0
    while start < len(lines):
        size = rng.choice(list(sizes))
        groups.append(list(range(start, min(start + size, len(lines)))))
        start += size
    return groups


def mix_references(data: Path) -> dict[str, list[str]]:
    """English sentence -> its French references, from the sets the traffic mix was drawn from."""
    found: dict[str, list[str]] = {}
    anki = data / "anki-fra-eng" / "test.tsv"
    for line in anki.read_text(encoding="utf-8").splitlines():
        english, _, french = line.partition("\t")
        if french:
            found.setdefault(english.strip(), []).append(french.strip())
    folder = data / "out-of-domain"
    for name in ("multi30k-test2017-flickr", "newsdiscusstest2015"):
        english = (folder / f"{name}.en").read_text(encoding="utf-8").splitlines()
        french = (folder / f"{name}.fr").read_text(encoding="utf-8").splitlines()
        for en, fr in zip(english, french, strict=True):
            found.setdefault(en.strip(), []).append(fr.strip())
    return found


def joined_references(groups: Sequence[Sequence[int]], references: Sequence[Sequence[str]]
                      ) -> list[list[str]]:
    """Per paragraph, its references: reference k joins each line's k-th (or last) one."""
    joined = []
    for group in groups:
        count = max(len(references[i]) for i in group)
        joined.append([" ".join(references[i][min(k, len(references[i]) - 1)] for i in group)
                       for k in range(count)])
    return joined


def compare(lines: Sequence[str], references: Sequence[Sequence[str]],
            translate: Callable[[list[str]], Sequence], seed: int = 7,
            batch_size: int = 64) -> dict:
    """Paragraphs translated as documents against their lines translated one by one.

    Args:
        lines: English lines, each a sentence (or a few).
        references: each line's French references (at least one).
        translate: sentences -> results with `.text` and `.word_alignment`.
        seed: draws the paragraph sizes.
        batch_size: sentences (one by one) or documents per `translate` call.

    Returns:
        `documents` and `sentences` (`nmt.evaluation.metrics.Scores` on paragraph
        segments), `agreement` (BLEU of the documents' translations against
        the one-by-one ones), `paragraphs`, `split_exactly` (paragraphs split
        back into exactly their lines).
    """
    lines = [as_sentence(line) for line in lines]
    groups = paragraphs(lines, seed)
    texts = [" ".join(lines[i] for i in group) for group in groups]
    one_by_one = []
    for start in range(0, len(lines), batch_size):
        one_by_one += [t.text for t in translate(lines[start:start + batch_size])]
    documents = []
    for start in range(0, len(texts), batch_size):
        documents += translate_documents(texts[start:start + batch_size], translate)
    joined = [" ".join(one_by_one[i] for i in group) for group in groups]
    references = joined_references(groups, references)
    found = [[" ".join(d.source[slice(*s.source_span)].split()) for s in d.sentences]
             for d in documents]
    return {
        "paragraphs": len(groups),
        "documents": corpus_scores([d.text for d in documents], references),
        "sentences": corpus_scores(joined, references),
        "agreement": corpus_scores([d.text for d in documents], [[j] for j in joined]),
        "split_exactly": sum(sentences == [lines[i] for i in group]
                             for sentences, group in zip(found, groups, strict=True)),
    }


def documents_per_second(texts: Sequence[str], translate_batch: Callable[[list[str]], object],
                         batch: int, clients: int = 1) -> float:
    """Documents per second, `clients` threads each sending batches of `batch` documents."""
    batches = [list(texts[i:i + batch]) for i in range(0, len(texts), batch)]
    lock = threading.Lock()
    failures: list[BaseException] = []

    def work():
        while True:
            with lock:
                if not batches or failures:
                    return
                chunk = batches.pop()
            try:
                translate_batch(chunk)
            except Exception as error:  # a failed call makes the rate meaningless
                with lock:
                    failures.append(error)

    started = time.perf_counter()
    threads = [threading.Thread(target=work) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise RuntimeError(f"a call failed, so no rate: {failures[0]}") from failures[0]
    return len(texts) / (time.perf_counter() - started)


def speed(args, translator, texts: Sequence[str]) -> None:
    """Prints documents per second in-process and through `nmt serve`."""
    from bench.load_test import start_server
    from nmt_api.client import TranslationClient

    translate_documents(texts[:4], translator.translate)  # warm-up
    rate = documents_per_second(
        texts, lambda chunk: translate_documents(chunk, translator.translate), args.batch_size)
    print(f"in-process: {rate:.1f} documents/s ({len(texts)} paragraphs, "
          f"{args.batch_size} documents a call)")
    with tempfile.TemporaryDirectory() as tmp:
        # The server's per-sentence character limit applies to a whole document.
        longest = max(len(text) for text in texts)
        process, target, _ = start_server(args.model, True, Path(tmp) / "server.log",
                                          ["--max-chars", str(max(1000, longest))])
        try:
            with TranslationClient(target, timeout=600) as client:
                client.translate_documents(texts[:4])  # warm-up
                rate = documents_per_second(texts, client.translate_documents,
                                            args.documents_per_request, args.clients)
        finally:
            process.terminate()
            process.wait(30)
    print(f"through the server: {rate:.1f} documents/s ({args.clients} gRPC clients, "
          f"{args.documents_per_request} document(s) a request, server batching on)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_and_data_arguments(parser)
    parser.add_argument("--limit", type=int, default=0, help="first N lines of the mix")
    parser.add_argument("--seed", type=int, default=7, help="draws the paragraph sizes")
    parser.add_argument("--batch-size", type=int, default=64,
                        help="sentences (one by one) or documents per in-process call")
    parser.add_argument("--no-bleu", action="store_true", help="skip the quality comparison")
    parser.add_argument("--speed", action="store_true",
                        help="also time documents/s in-process and through the server")
    parser.add_argument("--clients", type=int, default=4, help="gRPC clients (--speed)")
    parser.add_argument("--documents-per-request", type=int, default=1,
                        help="documents per server request (--speed)")
    args = parser.parse_args(argv)

    from nmt.inference.translator import Translator

    mix = args.data / "out-of-domain" / "traffic-mix.en"
    if not mix.is_file():
        raise SystemExit(f"No traffic mix at {mix}; pass --data DIR")
    lines = [line for line in mix.read_text(encoding="utf-8").splitlines() if line.strip()]
    lines = lines[:args.limit] if args.limit else lines
    translator = Translator.load(args.model)
    print(f"model {translator.info.path}; {machine()}")
    if not args.no_bleu:
        known = mix_references(args.data)
        kept = [line for line in lines if line.strip() in known]
        started = time.perf_counter()
        found = compare(kept, [known[line.strip()] for line in kept], translator.translate,
                        args.seed, args.batch_size)
        documents, sentences = found["documents"], found["sentences"]
        print(f"{len(kept)} lines with references (of {len(lines)}) in {found['paragraphs']} "
              f"paragraphs of {'-'.join(map(str, (SIZES[0], SIZES[-1])))}, seed {args.seed}, "
              f"{time.perf_counter() - started:.0f} s")
        print(f"  BLEU as documents {documents.bleu:6.2f}   one by one {sentences.bleu:6.2f}   "
              f"difference {documents.bleu - sentences.bleu:+.2f}   (chrF {documents.chrf:.2f}"
              f" / {sentences.chrf:.2f})")
        print(f"  paragraphs split back into their lines: {found['split_exactly']} of "
              f"{found['paragraphs']}; BLEU of the documents against the one-by-one "
              f"translations {found['agreement'].bleu:.2f}")
        print(f"BLEU signature: {documents.bleu_signature}")
    if args.speed:
        texts = [" ".join(as_sentence(lines[i]) for i in group)
                 for group in paragraphs(lines, args.seed)]
        speed(args, translator, texts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
