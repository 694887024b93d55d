"""Placeholders found in UI strings: each kind, what is deliberately not one, and the pieces
carried verbatim."""

import pytest

from documents.placeholders import (
    KINDS,
    MARKUP_KINDS,
    REST_KINDS,
    Placeholder,
    find_placeholders,
    verbatim_pieces,
)


def found(text: str, kinds=KINDS) -> list[tuple[str, str]]:
    return [(p.text, p.kind) for p in find_placeholders(text, kinds)]


@pytest.mark.parametrize("placeholder", [
    "%s", "%d", "%i", "%u", "%f", "%.2f", "%5.1f", "%-5d", "%05d", "%+d", "%x", "%X", "%o",
    "%e", "%g", "%c", "%p", "%ld", "%lld", "%zu", "%hhd", "%Lf", "%.*s", "%'d", "%@",
    "%1$s", "%2$d", "%10$.2f", "%(name)s", "%(count)d", "%%",
])
def test_printf_conversions(placeholder):
    text = f"Value: {placeholder} here"
    assert found(text) == [(placeholder, "printf")]
    [only] = find_placeholders(text)
    assert text[only.start:only.end] == placeholder


@pytest.mark.parametrize("placeholder", [
    "{}", "{0}", "{12}", "{name}", "{user_name}", "{user.name}", "{items[0]}", "{0:N2}",
    "{0,-10}", "{0,10:C}", "{name!r}", "{name!r:>10}", "{:>10}", "{:%Y-%m-%d}",
    "{count, number}", "{when, date, short}", "{{name}}", "{{ user.name }}", "{{{raw}}}",
])
def test_brace_arguments(placeholder):
    assert found(f"Value: {placeholder} here") == [(placeholder, "brace")]


def test_icu_plural_and_select_are_one_placeholder_with_their_nested_messages():
    plural = "{count, plural, =0 {no file} one {# file in {folder}} other {# files}}"
    assert found(f"You have {plural} here.") == [(plural, "icu")]
    select = "{gender, select, female {she} male {he} other {they}}"
    ordinal = "{n, selectordinal, one {#st} two {#nd} other {#th}}"
    assert found(f"{select} came {ordinal}") == [(select, "icu"), (ordinal, "icu")]


@pytest.mark.parametrize("entity", ["&amp;", "&lt;", "&nbsp;", "&eacute;", "&copy;", "&#39;",
                                    "&#160;", "&#x27;", "&#X1F600;"])
def test_html_character_references(entity):
    assert found(f"Tom {entity} Jerry") == [(entity, "entity")]


@pytest.mark.parametrize("text", [
    "50 % off", "100%", "20% off today", "up 5 %", "%", "% d", "a % s",  # no space flag
    "%w is no conversion", "%Y-%m at %H:%M",  # strftime (but %d, its day, is printf too)
    "Expected a '{' to begin function.", "{ and }", "{ name }", '{"key": 1}', "} {",
    "{{", "}}", "{{ }}", "{-1}", "{0 }",
    "Drag & drop", "R&D", "AT&T", "&foo;", "&amp without its semicolon", "& amp;", "&#;",
])
def test_prose_is_no_placeholder(text):
    assert found(text) == []


@pytest.mark.parametrize(("text", "url"), [
    ("Visit https://example.com/a_b?x=1&y=%20 today.", "https://example.com/a_b?x=1&y=%20"),
    ("See http://x.org.", "http://x.org"),  # the full stop ends the sentence
    ("(see https://x.org/page), then", "https://x.org/page"),
    ("Open https://x.org/{id}/edit.", "https://x.org/{id}/edit"),  # a template's brace inside
    ("Get ftp://ftp.example.org/pub/file.txt!", "ftp://ftp.example.org/pub/file.txt"),
    ("Open file:///home/me/notes.txt?", "file:///home/me/notes.txt"),
    ("Go to www.python.org; then", "www.python.org"),
    ("« https://fr.wikipedia.org/wiki/Éclair »", "https://fr.wikipedia.org/wiki/Éclair"),
    ("[https://x.org] and <https://y.org>", "https://x.org"),
])
def test_urls_are_found_without_the_punctuation_after_them(text, url):
    assert found(text)[0] == (url, "url")


@pytest.mark.parametrize("text", [
    "Write to bob@example.com.", "Mail first.last+tag@mail.example.co.uk!",
    "(docs@python.org)",
])
def test_email_addresses(text):
    [(address, kind)] = found(text)
    assert kind == "email" and "@" in address and address[-1].isalpha()


@pytest.mark.parametrize("text", [
    "http://", "https:// x", "see example.com", "swww.x.org", "std::vector",
    "a.b@c", "@user", "me@home", "x@y.z", "user@-bad.org",
])
def test_what_is_no_url_or_address(text):
    assert [kind for _, kind in found(text) if kind in ("url", "email")] == []


def test_a_printf_conversion_before_an_at_sign_stays_printf():
    assert found("Send %s@%s now") == [("%s", "printf"), ("%s", "printf")]
    assert found("Send %@ to bob@example.com") == [("%@", "printf"),
                                                   ("bob@example.com", "email")]


def test_a_url_or_address_is_one_piece_with_the_punctuation_of_its_word():
    pieces = [p.text for p in verbatim_pieces("Write to bob@example.com, or see "
                                              "https://x.org/a_b).")]
    assert pieces == ["bob@example.com,", "https://x.org/a_b)."]
    # A URL's own braces take no argument: the `{}` after it is the first in order.
    assert [p.ordered for p in verbatim_pieces("See https://x.org/{} and {}")] == [False, True]


def test_several_kinds_in_order_with_offsets():
    text = "Hello %s, you have {0} new messages &amp; %1$s."
    assert find_placeholders(text) == [
        Placeholder(6, 8, "%s", "printf", ordered=True),
        Placeholder(19, 22, "{0}", "brace"),
        Placeholder(36, 41, "&amp;", "entity"),
        Placeholder(42, 46, "%1$s", "printf"),
    ]


def test_only_arguments_taken_in_order_are_ordered():
    ordered = {p.text: p.ordered for p in find_placeholders(
        "%s %d %.2f {} {:>5} %1$s %(n)s %% {0} {name} {{x}} &amp; {n, plural, one {#} other {#}}")}
    assert [text for text, flag in ordered.items() if flag] == ["%s", "%d", "%.2f", "{}", "{:>5}"]


def test_a_brace_holding_percent_signs_is_one_placeholder():
    assert found("Date: {0:%d.%m.%Y}") == [("{0:%d.%m.%Y}", "brace")]
    assert found("Done: %d%%") == [("%d", "printf"), ("%%", "printf")]
    assert found("%%d is literal") == [("%%", "printf")]


def test_kinds_choose_what_is_found():
    text = "Save %s &amp; {0}"
    assert found(text, MARKUP_KINDS) == [("%s", "printf"), ("{0}", "brace")]
    # Addresses are text in HTML and XML too (an href is markup, not text).
    assert found("Mail bob@example.com &amp; see https://x.org", MARKUP_KINDS) == [
        ("bob@example.com", "email"), ("https://x.org", "url")]
    assert found("Mail bob@example.com", ("printf",)) == []
    assert found(text, ("entity",)) == [("&amp;", "entity")]
    with pytest.raises(ValueError, match="kinds must be a collection of"):
        find_placeholders(text, ("printf", "bbcode"))
    with pytest.raises(ValueError, match="Received: kinds='printf'"):
        find_placeholders(text, "printf")


def test_non_ascii_text_around_placeholders():
    assert found("« %s » — café {nom} naïve") == [("%s", "printf"), ("{nom}", "brace")]
    assert found("{café}") == [("{café}", "brace")]


def pieces(text: str, **kwargs) -> list[str]:
    return [p.text for p in verbatim_pieces(text, **kwargs)]


def test_a_word_of_placeholders_and_punctuation_is_one_piece():
    assert pieces("Delete node '%s'?") == ["'%s'?"]
    assert pieces("Mouse at (%s) with velocity (%s)") == ["(%s)", "(%s)"]
    assert pieces("Importing items {n}/{n}") == ["{n}/{n}"]
    assert pieces("Denoising %d%%") == ["%d%%"]
    assert pieces("Hello %s, you have {0} new messages.") == ["%s,", "{0}"]


def test_a_placeholder_inside_a_word_with_letters_is_a_piece_alone():
    assert pieces("Shortcut=%s") == ["%s"]
    assert pieces("Length: %0.1fs and %ss") == ["%0.1f", "%s"]
    assert pieces("10&nbsp;km") == ["&nbsp;"]


def test_a_placeholder_over_several_words_is_a_piece_alone():
    assert pieces("Hi {{ user.name }}!") == ["{{ user.name }}"]
    assert pieces("Got {n, plural, one {# file} other {# files}}.") == [
        "{n, plural, one {# file} other {# files}}"]


def test_pieces_keep_the_order_flag_and_their_offsets():
    text = "From '%s' to %1$s."
    first, second = verbatim_pieces(text)
    assert (first.text, first.ordered, text[first.start:first.end]) == ("'%s'", True, "'%s'")
    assert (second.text, second.ordered) == ("%1$s.", False)


def test_placeholders_alone_when_words_are_not_widened():
    assert pieces("Delete node '%s'?", words=False) == ["%s"]


def test_a_text_without_placeholders_has_no_piece():
    assert verbatim_pieces("I like cats. 50 % off!") == []
    assert verbatim_pieces("") == []


# --- reStructuredText (kind `rest`, only when asked for) -------------------------------------


def rest(text: str) -> list[str]:
    return [p.text for p in find_placeholders(text, REST_KINDS) if p.kind == "rest"]


@pytest.mark.parametrize("markup", [
    ":func:`len`", ":py:meth:`str.split`", ":c:func:`PyObject_New`", ":class:`~os.PathLike`",
    ":keyword:`!if`", ":pep:`8`", ":ref:`tutorial <tut-intro>`", ":term:`f-string`",
    ":attr:`__doc__`", "`default role`", "`len`:func:",  # roles and interpreted text
    "``x = 1``", "``len()``", "``a `b` c``", "``%s``", "``{0}``",  # inline literals
    "`the docs <https://docs.python.org/3/>`_", "`label`_", "`anonymous`__", "`here`__",
    "|version|", "|today|_",  # substitutions
    "[1]_", "[#]_", "[#note]_", "[*]_", "[CIT2002]_",  # footnotes and citations
])
def test_rest_inline_markup_is_found_whole(markup):
    text = f"See {markup} here."
    assert rest(text) == [markup]
    [only] = find_placeholders(text, REST_KINDS)
    assert (only.kind, text[only.start:only.end], only.ordered) == ("rest", markup, False)


@pytest.mark.parametrize("text", [
    "it's `quoted' in TeX", "a lone ` backtick", "a | b | c", "x|y|z", "||", "| x |",
    "` x`", "`x `", "`` x``", "``x ``", "````", "``", "a``b``c", "x`y`", "`x`s", r"\`x`",
    "word_ and snake_case and __init__", "std::vector", "a[::2]", "::1 is localhost",
    "see [1] and list[int]_", "*emphasis* and **strong** words", "2 * 3 * 4",
    "`a\nb`", "``a\nb``", ":func:`len",
])
def test_prose_is_no_rest_markup(text):
    assert rest(text) == []


def test_the_double_colon_of_a_literal_block_is_found_at_a_line_end_only():
    assert rest("For example::") == ["::"]
    assert rest("Strings are concatenated. ::") == ["::"]
    assert rest("Some examples::  \nmore text::\nend") == ["::", "::"]
    assert rest("Use :func:`len`::") == [":func:`len`", "::"]
    assert rest("a::b and c :: d") == []


def test_rest_is_only_found_when_asked_for():
    text = "Call :func:`len` on ``%s`` with {0}."
    assert found(text) == [("%s", "printf"), ("{0}", "brace")]
    assert found(text, REST_KINDS) == [(":func:`len`", "rest"), ("``%s``", "rest"),
                                       ("{0}", "brace")]
    assert found(text, ("rest",)) == [(":func:`len`", "rest"), ("``%s``", "rest")]
    assert "rest" not in KINDS and "rest" not in MARKUP_KINDS


def test_several_rest_constructs_in_order_with_offsets_and_accents():
    text = "Voir :ref:`le tutoriel <tut>`, ``café`` et |version| [#]_."
    assert rest(text) == [":ref:`le tutoriel <tut>`", "``café``", "|version|", "[#]_"]
    for placeholder in find_placeholders(text, REST_KINDS):
        assert text[placeholder.start:placeholder.end] == placeholder.text


def test_rest_pieces_take_their_punctuation_and_span_words():
    assert pieces("Use (:func:`len`).", kinds=REST_KINDS) == ["(:func:`len`)."]
    assert pieces("See :ref:`the tutorial <tut-intro>` now", kinds=REST_KINDS) == [
        ":ref:`the tutorial <tut-intro>`"]
    assert pieces("For example::", kinds=REST_KINDS) == ["::"]
    # Over several words too, so that the translation cannot glue it to a word.
    assert pieces("(here: ``a < 10``) or `the page <https://x.org>`_.", kinds=REST_KINDS) == [
        "``a < 10``)", "`the page <https://x.org>`_."]
    assert pieces('Say "``Got it.``", then :ref:`a b`,``c d``.', kinds=REST_KINDS) == [
        '"``Got it.``",', ":ref:`a b`,``c d``."]
    assert pieces("Got {n, plural, one {# file} other {# files}}.", kinds=REST_KINDS) == [
        "{n, plural, one {# file} other {# files}}"]  # other kinds: alone, as before
