"""`documents.markdown`: Markdown files translated, everything but their text kept byte for
byte, the result reading back as the same Markdown."""

from xml.parsers import expat

import pytest
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

import documents.markdown as markdown
import documents.parsing as parsing
from documents.markdown import (
    MarkdownFileError,
    MarkdownOptions,
    read_markdown,
    translate_markdown,
)
from documents.markdown_inline import escaped
from documents.sentences import TextLinks
from tests.documents.helpers import Recorder, backwards, diff, shouting

GARDEN = """\
---
title: Garden guide
tags: [plants, water]
---

# Watering *green* plants

Water the plants **every morning** before the sun
is high. Use the [blue can](https://example.com/can "The blue can") and `water --cold`.

## Tools ##

- A small *spade*
  - with a [wooden handle][handle]
- [ ] Buy seeds
- [x] Clean the pots

> Plants need light.\x20\x20
> They also need water.

| Plant | Water |
|-------|------:|
| Rose | `2 l` a day |
| Fern \\| moss | often |

```sh
# Water every morning
water --cold
```

    indented code in English

<div class="note">
  <p>Kept as it is.</p>
</div>

The pot costs $5 and the soil $10; it grows $g = r t$ a day.

![A red rose](rose.png "The red rose") grows well.[^1]

[^1]: Roses like the sun.

[handle]: https://example.com/handle "Handle title"

See <https://example.com> or ask <b>the gardener</b>.
"""


def saying(*words):
    """A translator that answers each sentence with `words` (cycled), linked in order."""
    def translate(sentences):
        results = []
        for sentence in sentences:
            count = len(sentence.split())
            target = [words[i % len(words)] for i in range(count)]
            results.append(TextLinks(" ".join(target), tuple((i, i) for i in range(count))))
        return results
    return translate


def translated(text: str, translate=shouting, **options):
    result = translate_markdown(read_markdown(text.encode("utf-8"), "garden.md"), translate,
                                MarkdownOptions(**options))
    return result.data.decode("utf-8"), result.report


def structure(text: str) -> list[tuple]:
    """The blocks as markdown-it reads them (kind, markup, code), each block's inline tokens
    but text as a sorted list: what a translation must keep."""
    found = []
    for token in MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(text):
        inline = sorted((c.type, c.markup, c.content if c.type.endswith("_inline") else "",
                         str(c.attrGet("href") or c.attrGet("src")))
                        for c in token.children or [] if c.type not in ("text", "softbreak"))
        code = token.content if token.type in ("fence", "code_block", "html_block") else ""
        found.append((token.type, token.tag, token.markup, token.info, code, inline))
    return found


# ---------------------------------------------------------------------------------------------
# What is translated, what is kept.


def test_only_the_text_changes_byte_for_byte():
    out, report = translated(GARDEN)

    assert diff(GARDEN, out) == [
        "-# Watering *green* plants",
        "+# WATERING *GREEN* PLANTS",
        "-Water the plants **every morning** before the sun",
        '-is high. Use the [blue can](https://example.com/can "The blue can") and '
        "`water --cold`.",
        "+WATER THE PLANTS **EVERY MORNING** BEFORE THE SUN IS HIGH. USE THE "
        '[BLUE CAN](https://example.com/can "THE BLUE CAN") AND `water --cold`.',
        "-## Tools ##",
        "+## TOOLS ##",
        "-- A small *spade*",
        "-  - with a [wooden handle][handle]",
        "-- [ ] Buy seeds",
        "-- [x] Clean the pots",
        "+- A SMALL *SPADE*",
        "+  - WITH A [WOODEN HANDLE][handle]",
        "+- [ ] BUY SEEDS",
        "+- [x] CLEAN THE POTS",
        "-> Plants need light.  ",
        "-> They also need water.",
        "+> PLANTS NEED LIGHT.  ",
        "+> THEY ALSO NEED WATER.",
        "-| Plant | Water |",
        "+| PLANT | WATER |",
        "-| Rose | `2 l` a day |",
        "-| Fern \\| moss | often |",
        "+| ROSE | `2 l` A DAY |",
        "+| FERN \\| MOSS | OFTEN |",
        "-The pot costs $5 and the soil $10; it grows $g = r t$ a day.",
        "+THE POT COSTS $5 AND THE SOIL $10; IT GROWS $g = r t$ A DAY.",
        '-![A red rose](rose.png "The red rose") grows well.[^1]',
        '+![A RED ROSE](rose.png "THE RED ROSE") GROWS WELL.[^1]',
        "-[^1]: Roses like the sun.",
        "+[^1]: ROSES LIKE THE SUN.",
        "-See <https://example.com> or ask <b>the gardener</b>.",
        "+SEE <https://example.com> OR ASK <b>THE GARDENER</b>."]
    assert report.blocks == 18 and report.written == 18 and report.left == 0


def test_code_front_matter_html_math_and_definitions_are_kept():
    out, _ = translated(GARDEN)

    for kept in ("---\ntitle: Garden guide\ntags: [plants, water]\n---\n",
                 "```sh\n# Water every morning\nwater --cold\n```\n",
                 "    indented code in English\n",
                 '<div class="note">\n  <p>Kept as it is.</p>\n</div>\n',
                 '[handle]: https://example.com/handle "Handle title"\n'):
        assert kept in out


def test_code_and_urls_are_not_read_by_the_model():
    recorder = Recorder()
    translated(GARDEN, recorder)

    read = " ".join(recorder.read)
    for hidden in ("water --cold", "example.com", "2 l", "g = r t", "rose.png", "[^1]",
                   "Garden guide", "indented code", "Kept as it is", "handle]"):
        assert hidden not in read, hidden
    assert "Use the blue can and ." in recorder.read  # `water --cold` is not read
    assert "The blue can" in recorder.read and "A red rose" in recorder.read


@pytest.mark.parametrize("translate", [shouting, backwards])
def test_the_result_reads_back_as_the_same_markdown(translate):
    out, report = translated(GARDEN, translate)

    assert structure(out) == structure(GARDEN)
    assert report.left == 0


def test_markup_follows_the_aligned_words_and_comes_back_once():
    out, _ = translated("Water the **green** plants and use `the can` [here](a.md) now.\n",
                        backwards)

    assert out == "NOW. `the can` [HERE](a.md) USE AND PLANTS **GREEN** THE WATER\n"


def test_a_wrapped_paragraph_is_written_on_one_line_and_hard_breaks_stay():
    text = "> Water the plants\n> every morning.\\\n>   Then rest  \n> a little.\n"

    out, _ = translated(text)

    assert out == "> WATER THE PLANTS EVERY MORNING.\\\n>   THEN REST  \n> A LITTLE.\n"


def test_a_hard_break_inside_emphasis_goes_with_its_words():
    out, _ = translated("Read **this first  \nand then that** please.\n", backwards)

    assert out == "PLEASE. **THAT THEN AND FIRST  \nTHIS** READ\n"


def test_raw_html_pairs_follow_their_words_and_code_elements_are_kept_whole():
    recorder = Recorder()
    out, _ = translated("Press <kbd>Ctrl *C*</kbd> to copy <em>this</em> now.\n", recorder)

    assert out == "PRESS <kbd>Ctrl *C*</kbd> TO COPY <em>THIS</em> NOW.\n"
    assert recorder.read == ["Press to copy this now."]


def test_links_keep_their_destination_and_translate_their_title():
    text = ("Read [the *whole* guide](<docs/a b.md> 'The guide') and "
            "![a rose](r.png (A rose)).\n")

    out, _ = translated(text)

    assert out == ("READ [THE *WHOLE* GUIDE](<docs/a b.md> 'THE GUIDE') AND "
                   "![A ROSE](r.png (A ROSE)).\n")


def test_headings_setext_and_closing_hashes():
    text = "Grow\nroses\n=====\n\n### Prune ###\n"

    out, _ = translated(text)

    assert out == "GROW ROSES\n=====\n\n### PRUNE ###\n"


def test_crlf_line_ends_and_the_byte_order_mark_are_kept():
    text = "\ufeffWater the plants\r\nevery day.\r\n\r\n| a | b |\r\n|---|---|\r\n| one | two |\r\n"

    out, _ = translated(text)

    assert out == "\ufeffWATER THE PLANTS EVERY DAY.\r\n\r\n| A | B |\r\n|---|---|\r\n" \
                  "| ONE | TWO |\r\n"


def test_a_file_with_nothing_to_translate_comes_back_identical():
    text = "---\ntitle: x\n---\n\n```\ncode\n```\n\n    more code\n\n***\n\n`only code`\n"

    result = translate_markdown(read_markdown(text.encode(), "code.md"), shouting)

    assert result.data == text.encode()
    assert result.report.written == 0 and result.report.sentences == 0


def test_text_that_looks_like_markdown_is_escaped_and_reads_as_text():
    translate = saying("1.", "*x*", "<b>", "[a]", "&amp;", "`c`", "snake_case", "$a", "b$")
    text = "Water the plants now, every single morning of the year, please.\n"

    out, _ = translated(text, translate)

    assert out == "1\\. \\*x\\* \\<b> \\[a] \\&amp; \\`c\\` snake_case \\$a b$ 1. \\*x\\*\n"
    html = MarkdownIt("commonmark").use(dollarmath_plugin).render(out)
    assert html == "<p>1. *x* &lt;b&gt; [a] &amp;amp; `c` snake_case $a b$ 1. *x*</p>\n"


def test_a_table_cell_never_gets_a_bar_of_its_own():
    out, _ = translated("| a | b |\n|---|---|\n| one | two |\n", saying("x|y"))

    assert out == "| x\\|y | x\\|y |\n|---|---|\n| x\\|y | x\\|y |\n"
    assert structure(out) == structure("| a | b |\n|---|---|\n| one | two |\n")


def test_code_spans_put_side_by_side_do_not_merge():
    out, report = translated("Use `a` and `b` here.\n", saying("x", "y"))

    assert structure(out) == structure("Use `a` and `b` here.\n")
    assert out.count("`a`") == 1 and out.count("`b`") == 1 and report.left == 0


def test_text_whose_markdown_would_read_otherwise_stays_english():
    text = "**one  \ntwo** and\n\nA second paragraph.\n"

    out, report = translated(text, backwards)

    assert out == "**one  \ntwo** and\n\nPARAGRAPH. SECOND A\n"  # the break would come last
    assert report.left == 1 and report.written == 1


def test_markup_the_projection_could_not_write_leaves_the_text_english(monkeypatch):
    def broken(*args):
        raise expat.ExpatError("not well-formed")

    monkeypatch.setattr(markdown, "_rendered", broken)

    out, report = translated("Water the plants.\n")

    assert out == "Water the plants.\n" and report.left == 1 and report.written == 0


# ---------------------------------------------------------------------------------------------
# Options and the calls.


def test_placeholders_are_carried_across_unless_turned_off():
    recorder = Recorder()
    out, _ = translated("You have {count} plants.\n", recorder)

    assert out == "YOU HAVE {count} PLANTS.\n"
    assert recorder.read == ["You have plants."]

    recorder = Recorder()
    translated("You have {count} plants.\n", recorder, placeholders=False)
    assert recorder.read == ["You have {count} plants."]


def test_sentences_of_the_whole_file_go_together_sorted_by_length():
    recorder = Recorder()
    text = "Rest.\n\n- Water the plants.\n- Rest.\n\n| Water them well |\n|---|\n"
    done = []

    result = translate_markdown(read_markdown(text.encode(), "a.md"), recorder,
                                MarkdownOptions(batch_size=2),
                                progress=lambda n, total: done.append((n, total)))

    assert recorder.calls == [["Rest.", "Water them well"], ["Water the plants."]]
    assert done == [(2, 3), (3, 3)]
    assert result.report.sentences == 3 and result.report.texts == 3


def test_batch_size_is_checked():
    with pytest.raises(ValueError, match="batch_size must be at least 1. Received: 0"):
        MarkdownOptions(batch_size=0)


# ---------------------------------------------------------------------------------------------
# Errors.


@pytest.mark.parametrize("data, message", [
    (b"# Title\n\nCaf\xe9 au lait\n", r"a\.md:3: not UTF-8 text \(byte 12\)"),
    (b"# Title\n\nA\x00B\n", r"a\.md:3: a NUL character"),
    (b"> " * 60 + b"deep\n", r"a\.md:1: more than 49 block quotes.*MAX_NESTING=50"),
])
def test_what_cannot_be_read_is_refused_with_its_line(data, message):
    with pytest.raises(MarkdownFileError, match=message):
        read_markdown(data, "a.md")


def test_a_file_over_the_size_limit_is_refused_with_its_line(monkeypatch):
    monkeypatch.setattr(markdown, "MAX_MARKDOWN_BYTES", 20)

    with pytest.raises(MarkdownFileError, match=r"a\.md:3: the file has 27 bytes, more than "
                                                r"MAX_MARKDOWN_BYTES=20"):
        read_markdown(b"# Title\n\nA long paragraph.\n", "a.md")


def test_a_text_over_a_markup_limit_is_refused_with_its_line(monkeypatch):
    monkeypatch.setattr(parsing, "MAX_MARKUP_CHARS", 30)
    document = read_markdown(b"# Title\n\nA paragraph that is far too long for the limit.\n",
                             "a.md")

    with pytest.raises(MarkdownFileError, match=r"a\.md:3: this paragraph cannot be "
                                                r"translated: A document of \d+ characters"):
        translate_markdown(document, shouting)


def test_a_result_that_would_not_read_back_is_never_given(monkeypatch):
    monkeypatch.setattr(markdown, "_rendered", lambda *args: "- list")
    document = read_markdown(b"# Title\n\nA paragraph.\n", "a.md")

    with pytest.raises(MarkdownFileError, match=r"a\.md: the Markdown from line \d+ on would "
                                                "not read back as it was"):
        translate_markdown(document, shouting)


def test_escaped_text():
    assert escaped("- 3 * 4 = 12 <ok> a_b _c_ AT&T &copy;", line_start=True) == (
        "\\- 3 \\* 4 = 12 \\<ok> a_b \\_c\\_ AT&T \\&copy;")
    assert escaped("2024. A year", line_start=True) == "2024\\. A year"
    assert escaped("a|b ] c", table=True, in_link=True) == "a\\|b \\] c"
