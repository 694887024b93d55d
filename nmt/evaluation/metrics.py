"""Metrics and gold-data readers: BLEU and chrF, AER, and the gold alignment formats.

Everything here works on strings and link sets that are already there; no
model runs here (`nmt.evaluation.scoring` runs a `Translator` over a test set and
measures its output with these functions). Pure Python plus sacrebleu:
nothing here imports TensorFlow, so the metrics and readers are cheap to
import from any tool.

Alignment links are `(source_index, target_index)` pairs, 0-based. For this
English→French project the source is English, so every reader returns links
as `(english_index, french_index)` whatever order its file format uses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path

import sacrebleu

from nmt.data.corpus import read_lines
from nmt.types import Link, parse_pharaoh_links

LinkSet = frozenset[Link]


# --------------------------------------------------------------------------- BLEU, chrF


@dataclasses.dataclass(frozen=True)
class Scores:
    """Corpus-level translation scores.

    Attributes:
        bleu: sacrebleu BLEU (0-100), default 13a tokenisation.
        chrf: sacrebleu chrF2 (0-100).
        bleu_signature: sacrebleu's signature of the BLEU settings, to report
            beside the number so that others can reproduce it.
        chrf_signature: the same for chrF.
    """

    bleu: float
    chrf: float
    bleu_signature: str
    chrf_signature: str


def group_references(pairs: Iterable[tuple[str, str]]) -> tuple[list[str], list[list[str]]]:
    """Groups pairs that share a source, for multi-reference scoring.

    Args:
        pairs: `(source, reference)` pairs; a source may occur many times.

    Returns:
        `(sources, references)`: the distinct sources in first-seen order, and
        for each of them its references in the order they appeared.
    """
    grouped: dict[str, list[str]] = {}
    for source, reference in pairs:
        grouped.setdefault(source, []).append(reference)
    return list(grouped), list(grouped.values())


# More distinct values than this in a third column are not domains (the raw Anki file
# has an attribution there, one per line).
MAX_DOMAINS = 50


def domains_of(pairs: Iterable[tuple[str, ...]], sources: Sequence[str]) -> list[str]:
    """The domain of each grouped source (`group_references`' order): the third item of
    the first pair with that source; all "" where pairs have none, or where the third
    items take more than `MAX_DOMAINS` values."""
    domain_of: dict[str, str] = {}
    for source, _, *domain in pairs:
        domain_of.setdefault(source, domain[0] if domain else "")
    if len(set(domain_of.values())) > MAX_DOMAINS:
        return [""] * len(sources)
    return [domain_of[source] for source in sources]


def scores_by_domain(hypotheses: Sequence[str], references: Sequence[Sequence[str]],
                     domains: Sequence[str]) -> dict[str, Scores]:
    """`corpus_scores` of each domain of a mixed test set, domains in sorted order."""
    result = {}
    for domain in sorted(set(domains)):
        rows = [i for i, d in enumerate(domains) if d == domain]
        result[domain] = corpus_scores([hypotheses[i] for i in rows],
                                       [references[i] for i in rows])
    return result


def corpus_scores(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> Scores:
    """Corpus BLEU and chrF of hypotheses against one or more references each.

    Args:
        hypotheses: one detokenized translation per sentence.
        references: for each sentence, its references (at least one; the
            number may differ between sentences).

    Returns:
        A `Scores`. With a variable number of references the signatures say
        `nrefs:var`.
    """
    if len(hypotheses) != len(references):
        raise ValueError(
            "hypotheses and references must have the same length. Received: "
            f"len(hypotheses)={len(hypotheses)}, len(references)={len(references)}"
        )
    if not hypotheses:
        raise ValueError("Cannot score an empty corpus. Received: hypotheses=[]")
    streams = _reference_streams(references)
    bleu_metric = sacrebleu.BLEU()
    chrf_metric = sacrebleu.CHRF()
    bleu = bleu_metric.corpus_score(list(hypotheses), streams)
    chrf = chrf_metric.corpus_score(list(hypotheses), streams)
    return Scores(
        bleu=float(bleu.score),
        chrf=float(chrf.score),
        bleu_signature=str(bleu_metric.get_signature()),
        chrf_signature=str(chrf_metric.get_signature()),
    )


def _reference_streams(references: Sequence[Sequence[str]]) -> list[list[str | None]]:
    """Turns per-sentence reference lists into sacrebleu's reference streams.

    sacrebleu wants stream k to hold the k-th reference of every sentence. A
    sentence with fewer references gets `None` in the later streams, which
    sacrebleu drops for that sentence (an empty string would instead count as
    a zero-length reference).
    """
    for index, refs in enumerate(references):
        if isinstance(refs, str) or len(refs) == 0:
            raise ValueError(
                "Each sentence needs a non-empty list of references. "
                f"Received: references[{index}]={refs!r}"
            )
    count = max(len(refs) for refs in references)
    return [[refs[k] if k < len(refs) else None for refs in references] for k in range(count)]


# --------------------------------------------------------------------------- AER


@dataclasses.dataclass(frozen=True)
class AlignmentScores:
    """Corpus-level alignment quality (Och & Ney 2003, Sec. 5).

    Attributes:
        precision: |A ∩ P| / |A|.
        recall: |A ∩ S| / |S|.
        aer: 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|); lower is better.
    """

    precision: float
    recall: float
    aer: float


def alignment_scores(
    predicted: Sequence[Iterable[Link]],
    sure: Sequence[Iterable[Link]],
    possible: Sequence[Iterable[Link]],
) -> AlignmentScores:
    """Precision, recall and AER summed over a corpus.

    Counts are summed over all sentences before dividing (corpus level), as
    in Och & Ney 2003. Sure links are added to the possible ones, so callers
    may pass possible-only sets.

    Args:
        predicted: for each sentence, the predicted links A.
        sure: for each sentence, the sure gold links S.
        possible: for each sentence, the possible gold links P (P ⊇ S).

    Returns:
        An `AlignmentScores`.
    """
    if not len(predicted) == len(sure) == len(possible):
        raise ValueError(
            "predicted, sure and possible must have one entry per sentence. Received: "
            f"lengths {len(predicted)}, {len(sure)}, {len(possible)}"
        )
    a_total = s_total = a_and_s = a_and_p = 0
    for a_links, s_links, p_links in zip(predicted, sure, possible, strict=True):
        a, s = set(a_links), set(s_links)
        p = set(p_links) | s
        a_total += len(a)
        s_total += len(s)
        a_and_s += len(a & s)
        a_and_p += len(a & p)
    if a_total + s_total == 0:
        raise ValueError(
            "AER is undefined without any predicted or sure link. Received: "
            f"{len(predicted)} sentences with no links"
        )
    return AlignmentScores(
        precision=a_and_p / a_total if a_total else 0.0,
        recall=a_and_s / s_total if s_total else 0.0,
        aer=1.0 - (a_and_s + a_and_p) / (a_total + s_total),
    )


def alignment_error_rate(
    predicted: Sequence[Iterable[Link]],
    sure: Sequence[Iterable[Link]],
    possible: Sequence[Iterable[Link]],
) -> float:
    """Corpus AER, 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|) (Och & Ney 2003).

    See `alignment_scores` for the arguments; sure links count as possible.
    """
    return alignment_scores(predicted, sure, possible).aer


# --------------------------------------------------------------------------- gold alignments


@dataclasses.dataclass(frozen=True)
class AlignedPair:
    """A tokenized sentence pair with gold word alignments.

    Attributes:
        source_words: English words.
        target_words: French words.
        sure: sure links `(english_index, french_index)`, 0-based.
        possible: possible links, a superset of `sure`.
    """

    source_words: tuple[str, ...]
    target_words: tuple[str, ...]
    sure: LinkSet
    possible: LinkSet


def parse_links(text: str) -> tuple[LinkSet, LinkSet]:
    """Parses one line of (extended) Pharaoh links, first index first.

    Args:
        text: whitespace-separated links: `i-j` (sure), `ipj` or `i?j`
            (possible).

    Returns:
        `(sure, possible)` with `possible ⊇ sure`; each link is `(i, j)` as
        written.
    """
    links = parse_pharaoh_links(text)
    sure = frozenset((i, j) for i, j, is_sure in links if is_sure)
    possible = frozenset((i, j) for i, j, _ in links)
    return sure, possible


def read_pharaoh(path: str | Path) -> list[LinkSet]:
    """Reads plain Pharaoh alignments: one sentence a line, `i-j` links.

    Links are 0-based, source index first, as this project's models write
    them (`word_alignments` of the exported model). An empty line is a
    sentence without links, so line k is always sentence k.

    Args:
        path: the alignment file (UTF-8).

    Returns:
        One frozenset of `(source_index, target_index)` links per line.
    """
    alignments = []
    for number, line in enumerate(read_lines(path), start=1):
        sure, possible = _parse_line(line, path, number)
        if possible != sure:
            raise ValueError(
                f"{path}:{number}: plain Pharaoh has only i-j links; use read_pharaoh_gold for "
                f"possible links. Received: {line!r}"
            )
        alignments.append(sure)
    return alignments


def read_pharaoh_gold(path: str | Path) -> list[tuple[LinkSet, LinkSet]]:
    """Reads extended Pharaoh gold alignments: `i-j` sure, `ipj`/`i?j` possible.

    Args:
        path: the alignment file (UTF-8), one sentence a line, 0-based,
            source index first.

    Returns:
        One `(sure, possible)` tuple per line, `possible ⊇ sure`.
    """
    return [
        _parse_line(line, path, number) for number, line in enumerate(read_lines(path), start=1)
    ]


def read_naacl(path: str | Path) -> dict[int, tuple[LinkSet, LinkSet]]:
    """Reads gold alignments in the HLT-NAACL 2003 shared-task format.

    Format (Mihalcea & Pedersen 2003): one link a line,
    `sentence_no position_L1 position_L2 [S|P] [confidence]`. Positions are
    1-based; position 0 stands for the NULL word. `S` is sure and `P`
    probable (possible); a missing tag means `S`. The confidence is ignored.
    For the English–French task L1 is English and L2 French, so the links
    come out as `(english_index, french_index)`.

    Args:
        path: the alignment file.

    Returns:
        A dict from sentence number to `(sure, possible)`, 0-based links,
        `possible ⊇ sure`. Links to NULL are dropped, and a sentence without
        any other link is absent.
    """
    sure: dict[int, set[Link]] = {}
    possible: dict[int, set[Link]] = {}
    for number, line in enumerate(read_lines(path), start=1):
        fields = line.split()
        if not fields:
            continue
        sentence, link, tag = _parse_naacl_fields(fields, path, number)
        if link is None:
            continue
        possible.setdefault(sentence, set()).add(link)
        sure.setdefault(sentence, set())
        if tag == "S":
            sure[sentence].add(link)
    return {key: (frozenset(sure[key]), frozenset(possible[key])) for key in possible}


def _parse_naacl_fields(
    fields: list[str], path: str | Path, number: int
) -> tuple[int, Link | None, str]:
    """Returns `(sentence, 0-based link or None for NULL, "S" or "P")`."""
    tag = fields[3].upper() if len(fields) > 3 else "S"
    if (
        not 3 <= len(fields) <= 5
        or not all(f.isdigit() for f in fields[:3])
        or tag not in ("S", "P")
    ):
        raise ValueError(
            f"{path}:{number}: expected 'sentence_no position_L1 position_L2 [S|P] "
            f"[confidence]'. Received: {' '.join(fields)!r}"
        )
    sentence, first, second = (int(f) for f in fields[:3])
    link = None if first == 0 or second == 0 else (first - 1, second - 1)
    return sentence, link, tag


def read_alibi(root: str | Path) -> list[AlignedPair]:
    """Reads the Alibi English–French gold alignments (Xu & Yvon 2016).

    Layout: `root/ali/<story>/` holds `<French>_sents.txt`,
    `<English>_sents.txt` (lines `<index><TAB><tokens>`) and
    `ali_w2w_<French>_<English>.txt` (lines `<index><TAB><links>`, links
    `i-j` sure and `ipj` possible, 0-based, French index first). The file
    name of the alignments tells which sentence file is French. Links are
    returned English index first.

    Args:
        root: the `alibi-enfr-alignments` directory.

    Returns:
        The pairs of all stories, stories in name order, sentences in file
        order.
    """
    story_dirs = sorted(p for p in (Path(root) / "ali").iterdir() if p.is_dir())
    if not story_dirs:
        raise ValueError(
            f"No story directories under {Path(root) / 'ali'}. Received: root={root!r}"
        )
    pairs: list[AlignedPair] = []
    for story_dir in story_dirs:
        pairs.extend(_read_alibi_story(story_dir))
    return pairs


def _read_alibi_story(story_dir: Path) -> list[AlignedPair]:
    french_file, english_file, links_file = _alibi_files(story_dir)
    french = _read_indexed(french_file)
    english = _read_indexed(english_file)
    links = _read_indexed(links_file)
    if not french.keys() == english.keys() == links.keys():
        raise ValueError(
            f"{story_dir}: the sentence and alignment files index different sentences. "
            f"Received: {len(french)} French, {len(english)} English, {len(links)} alignments"
        )
    pairs = []
    for index, (number, link_text) in links.items():
        fr_words = tuple(french[index][1].split())
        en_words = tuple(english[index][1].split())
        sure, possible = _parse_line(link_text, links_file, number)
        for fr, en in possible:
            if fr >= len(fr_words) or en >= len(en_words):
                raise ValueError(
                    f"{links_file}:{number}: link {fr}-{en} is outside the sentence pair of "
                    f"{len(fr_words)} French and {len(en_words)} English words"
                )
        pairs.append(AlignedPair(en_words, fr_words, _swap(sure), _swap(possible)))
    return pairs


def _alibi_files(story_dir: Path) -> tuple[Path, Path, Path]:
    """Returns `(french_sents, english_sents, alignments)` of one story."""
    links_files = sorted(story_dir.glob("ali_w2w_*.txt"))
    sents = sorted(story_dir.glob("*_sents.txt"))
    if len(links_files) == 1 and len(sents) == 2:
        names = [p.name[: -len("_sents.txt")] for p in sents]
        for fr, en in (names, names[::-1]):
            if links_files[0].name == f"ali_w2w_{fr}_{en}.txt":
                return story_dir / f"{fr}_sents.txt", story_dir / f"{en}_sents.txt", links_files[0]
    raise ValueError(
        f"{story_dir}: expected ali_w2w_<French>_<English>.txt with <French>_sents.txt and "
        f"<English>_sents.txt. Received: {sorted(p.name for p in story_dir.iterdir())}"
    )


def _read_indexed(path: Path) -> dict[int, tuple[int, str]]:
    """Reads `<index><TAB><text>` lines into {index: (line_number, text)}."""
    rows: dict[int, tuple[int, str]] = {}
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        index, _, text = line.partition("\t")
        if not index.strip().isdigit() or int(index) in rows:
            raise ValueError(
                f"{path}:{number}: expected a new '<index><TAB><text>' line. Received: {line!r}"
            )
        rows[int(index)] = (number, text)
    return rows


def _parse_line(line: str, path: str | Path, number: int) -> tuple[LinkSet, LinkSet]:
    try:
        return parse_links(line)
    except ValueError as error:
        raise ValueError(f"{path}:{number}: {error}") from None


def _swap(links: LinkSet) -> LinkSet:
    return frozenset((j, i) for i, j in links)
