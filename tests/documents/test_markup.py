"""Inline markup carried across translations, with hand-made word links (exact and fast)."""

import random

import pytest

from documents import markup
from documents.markup import MarkupError, plan_markup, project_markup, split_markup
from documents.sentences import TextLinks, join_documents, sentences_of


def diagonal(sentence: str, target: str) -> TextLinks:
    """Word i linked to word i (a translation that keeps the word order)."""
    count = min(len(sentence.split()), len(target.split()))
    return TextLinks(target, tuple((i, i) for i in range(count)))


def tags(text: str, format: str) -> list[str]:
    """Every tag and verbatim piece of a document, in order (through our own parser)."""
    return sorted(text[item.start:item.end] for item in markup._parse(text, format)
                  if item.kind != "text")


def test_inline_tag_goes_around_the_aligned_word():
    out = project_markup("Click <b>Save</b> to keep your changes.",
                         "Cliquez sur Enregistrer pour garder vos modifications.",
                         [(0, 0), (0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6)], "html")
    assert out == "Cliquez sur <b>Enregistrer</b> pour garder vos modifications."


def test_siblings_follow_the_target_word_order_and_punctuation_stays_outside():
    out = project_markup("The <b>red</b> <i>car</i>.", "La voiture rouge.",
                         [(0, 0), (1, 2), (2, 1)], "html")
    assert out == "La <i>voiture</i> <b>rouge.</b>"
    out = project_markup("A <b>car</b>.", "Une voiture.", [(0, 0), (1, 1)], "html")
    assert out == "Une <b>voiture</b>."


def test_nested_tags_stay_nested_with_attributes_verbatim():
    source = 'See <a href="/x?a=1&amp;b=2" title=\'é\'><b>the</b> big map</a> now.'
    out = project_markup(source, "Voyez la grande carte maintenant.",
                         [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)], "html")
    assert out == ('Voyez <a href="/x?a=1&amp;b=2" title=\'é\'><b>la</b> grande carte</a> '
                   "maintenant.")


def test_tag_around_unaligned_words_is_kept_empty_next_to_its_neighbours():
    out = project_markup("I <i>really</i> like it.", "J'aime ça.", [(0, 0), (2, 0), (3, 1)],
                         "html")
    assert out == "J'aime <i></i>ça."


def test_standalone_tags_go_to_the_aligned_position():
    out = project_markup("Hello<br>world, see <img src=a.png> here.",
                         "Bonjour le monde, voyez ici.",
                         [(0, 0), (1, 1), (1, 2), (2, 3), (3, 4)], "html")
    assert out == "Bonjour<br> le monde, voyez <img src=a.png> ici."


def test_xliff_placeholders_and_pairs():
    out = project_markup('The <g id="1">European Parliament</g> adopted <x id="2"/>the text.',
                         "Le Parlement européen a adopté le texte.",
                         [(0, 0), (1, 2), (2, 1), (3, 3), (3, 4), (4, 5), (5, 6)], "xml")
    assert out == 'Le <g id="1">Parlement européen</g> a adopté <x id="2"/>le texte.'


def test_untranslated_elements_and_comments_are_kept_verbatim():
    source = ('Run <code>ls -l</code> or <span translate="no">Foo Bar</span> and '
              '<em class="x notranslate">Baz</em><!-- c --> now.')
    plan = plan_markup(source, "html")
    assert plan.sentences == ["Run or and now."]
    out = plan.join([TextLinks("Lancez ou et maintenant.",
                               ((0, 0), (1, 1), (2, 2), (3, 3)))]).text
    assert out == ('Lancez <code>ls -l</code> ou <span translate="no">Foo Bar</span> et '
                   '<em class="x notranslate">Baz</em><!-- c --> maintenant.')


def test_script_and_style_are_not_translated():
    source = "<style>p {color: red}</style><p>Hi <script>if (a < b) x();</script>there.</p>"
    plan = plan_markup(source, "html")
    assert plan.sentences == ["Hi there."]
    out = plan.join([TextLinks("Salut toi.", ((0, 0), (1, 1)))]).text
    assert out == ("<style>p {color: red}</style><p>Salut <script>if (a < b) x();</script>"
                   "toi.</p>")


def test_entities_round_trip_and_translated_text_is_escaped():
    source = "<p>Tom &amp; Jerry&nbsp;&#233;t&eacute; &lt;3</p>"
    plan = plan_markup(source, "html")
    assert plan.sentences == ["Tom & Jerry été <3"]
    out = plan.join([diagonal(plan.sentences[0], "Tom & Jerry été <3")]).text
    assert out == "<p>Tom &amp; Jerry été &lt;3</p>"


def test_blocks_split_sentences_and_the_layout_between_stays_exactly():
    source = ("<h1>Title</h1>\r\n\r\n<p>First <b>one</b>. Second.</p>\n\n"
              "<ul><li>« Third »</li><li></li></ul>")
    plan = plan_markup(source, "html")
    assert plan.sentences == ["Title", "First one.", "Second.", "« Third »"]
    translated = ["Titre", "Premier un.", "Deuxième.", "« Troisième »"]
    out = plan.join([diagonal(s, t) for s, t in zip(plan.sentences, translated, strict=True)]).text
    assert out == ("<h1>Titre</h1>\r\n\r\n<p>Premier <b>un</b>. Deuxième.</p>\n\n"
                   "<ul><li>« Troisième »</li><li></li></ul>")


def test_element_around_whole_sentences_stays_and_one_crossing_joins_them():
    plan = plan_markup("<g>One. Two.</g> Three.", "xml")
    assert plan.sentences == ["One.", "Two.", "Three."]
    assert plan.join([diagonal(s, s.upper()) for s in plan.sentences]).text == (
        "<g>ONE. TWO.</g> THREE.")
    plan = plan_markup("One <g>two. Three</g> four.", "xml")
    assert plan.sentences == ["One two. Three four."]


def test_every_tag_appears_once_and_nested_whatever_the_links():
    source = ('<p>The <a href="#"><b>big</b> <i>red</i></a> car<br/> and <span>the '
              '<em>small</em> one</span> <img src="x"/><!-- c --> go.</p>')
    plan = plan_markup(source, "html")
    rng = random.Random(0)
    for _ in range(200):
        target = " ".join(f"w{k}" for k in range(rng.randint(0, 12)))
        n, m = len(plan.sentences[0].split()), len(target.split())
        links = tuple((rng.randrange(n), rng.randrange(m)) for _ in range(rng.randint(0, 15))
                      if m)
        out = plan.join([TextLinks(target, links)]).text
        assert tags(out, "html") == tags(source, "html"), (target, links)


def test_links_beyond_the_words_are_ignored():
    out = project_markup("A <b>car</b>.", "Une voiture.", [(0, 0), (1, 1), (7, 9)], "html")
    assert out == "Une <b>voiture</b>."


def test_batch_of_documents_is_one_list_of_sentences():
    plans = split_markup(["<p>Hi.</p><p>Bye.</p>", "", "Yes <b>sir</b>."], "html")
    assert sentences_of(plans) == ["Hi.", "Bye.", "Yes sir."]
    fake = {"Hi.": "Salut.", "Bye.": "Au revoir.", "Yes sir.": "Oui monsieur."}
    results = [diagonal(s, fake[s]) for s in sentences_of(plans)]
    documents = join_documents(plans, results)
    assert [d.text for d in documents] == [
        "<p>Salut.</p><p>Au revoir.</p>", "", "Oui <b>monsieur</b>."]
    [sentence] = documents[2].sentences
    assert documents[2].text[slice(*sentence.target_span)] == "Oui <b>monsieur</b>."


def test_link_spans_are_on_the_markup_and_on_its_translation():
    plan = plan_markup("Click <b>Save</b> &amp; go.", "html")
    document = plan.join([TextLinks("Cliquez Enregistrer & allez.",
                                    ((0, 0), (1, 1), (2, 2), (3, 3)))])
    pairs = [(plan.text[a:b], document.text[c:d]) for (a, b), (c, d) in document.link_spans]
    assert pairs == [("Click", "Cliquez"), ("Save", "Enregistrer"), ("&amp;", "&amp;"),
                     ("go.", "allez.")]


def test_empty_and_wordless_documents_come_back_as_given():
    for source in ["", "\r\n", "<p></p>\n<br/>", "<!-- only -->"]:
        plan = plan_markup(source, "html")
        assert plan.sentences == []
        assert plan.join([]).text == source


@pytest.mark.parametrize("format", ["html", "xml"])
@pytest.mark.parametrize(("source", "position", "words"), [
    ("An <b>unclosed tag.", 3, "never closed"),
    ("Crossed <b>tags <i>here</b></i>.", 23, "close <i> first"),
    ("A stray </b> end tag.", 8, "closes nothing"),
    ("An <!-- unterminated comment", 3, "at character 3"),
])
def test_malformed_markup_names_the_position(source, position, words, format):
    with pytest.raises(MarkupError, match=words) as error:
        plan_markup(source, format)
    assert error.value.position == position
    assert isinstance(error.value, ValueError)


def test_html_needs_a_bare_less_than_escaped():
    with pytest.raises(MarkupError, match="&lt;"):
        plan_markup("1 < 2 is true", "html")


def test_xml_unknown_entity_says_which_ones_exist():
    with pytest.raises(MarkupError, match="&#160;"):
        plan_markup("a&nbsp;b", "xml")


@pytest.mark.parametrize("format", ["html", "xml"])
def test_100000_nested_elements_give_a_clear_error_at_the_limit(format):
    # Where the error is raised shows the reading stopped at the limit (no timing: shared CPUs).
    source = "<b>" * 100_000 + "deep" + "</b>" * 100_000
    with pytest.raises(MarkupError, match=f"MAX_DEPTH={markup.MAX_DEPTH}") as error:
        plan_markup(source, format)
    assert error.value.position == 3 * markup.MAX_DEPTH


def test_nesting_up_to_the_limit_works():
    depth = markup.MAX_DEPTH
    source = "<i>" * depth + "deep" + "</i>" * depth + " word."
    plan = plan_markup(source, "xml")
    out = plan.join([TextLinks("profond mot.", ((0, 0), (1, 1)))]).text
    assert out == "<i>" * depth + "profond" + "</i>" * depth + " mot."


@pytest.mark.parametrize("format", ["html", "xml"])
@pytest.mark.parametrize("tag", ['<a title="{}">x</a>', '<img alt="{}"/>'])
def test_huge_attribute_is_refused(format, tag):
    source = "Some " + tag.format("x" * markup.MAX_TAG_CHARS) + " text."
    with pytest.raises(MarkupError, match="MAX_TAG_CHARS") as error:
        plan_markup(source, format)
    assert error.value.position == 5


def test_huge_document_is_refused_before_parsing():
    source = "<b>" * (markup.MAX_MARKUP_CHARS // 3 + 1)
    with pytest.raises(MarkupError, match="MAX_MARKUP_CHARS"):
        plan_markup(source, "html")


def test_unknown_format_is_refused():
    with pytest.raises(ValueError, match="format"):
        plan_markup("x", "markdown")


def test_standalone_tag_inside_a_word_keeps_its_place_in_the_target_word():
    out = project_markup('(11)<x id="1"/>The pillar.', "(11)Le socle.", [(0, 0), (1, 1)], "xml")
    assert out == '(11)<x id="1"/>Le socle.'
    out = project_markup('(11)<x id="1"/>The pillar.', "Le socle.", [(0, 0), (1, 1)], "xml")
    assert out == '<x id="1"/>Le socle.'


def test_the_longest_run_of_linked_words_wins_over_a_stray_link():
    out = project_markup("<b>New file</b> saved", "Nouveau fichier enregistré nouveau",
                         [(0, 0), (1, 1), (0, 3), (2, 2)], "xml")
    assert out == "<b>Nouveau fichier</b> enregistré nouveau"


def test_unaligned_words_between_two_linked_words_stay_inside_the_tag():
    # yy is linked to nothing: the tag covers xx..zz; linked to aa, it breaks the run
    links = [(0, 0), (1, 1), (2, 3), (3, 4)]
    out = project_markup("aa <b>bb cc</b> dd", "ww xx yy zz vv", links, "xml")
    assert out == "ww <b>xx yy zz</b> vv"
    out = project_markup("aa <b>bb cc</b> dd", "ww xx yy zz vv", [*links, (0, 2)], "xml")
    assert out == "ww <b>xx</b> yy zz vv"


def test_words_without_a_link_take_the_word_that_attends_most_to_them_in_the_matrix():
    matrix = [[0.9, 0.1, 0.0], [0.2, 0.5, 0.3], [0.0, 0.2, 0.8], [0.0, 0.7, 0.3]]
    links = [(0, 0), (2, 2)]  # bb (1) has no link; column 1's largest weight is at zz (3)
    out = project_markup("aa <b>bb</b> cc", "ww xx yy zz", links, "xml", word_matrix=matrix)
    assert out == "ww xx yy <b>zz</b>"
    assert project_markup("aa <b>bb</b> cc", "ww xx yy zz", links, "xml") == (
        "ww <b></b>xx yy zz")  # no matrix: kept empty next to its neighbours
    wrong_shape = [[1.0, 0.0], [0.0, 1.0]]
    assert project_markup("aa <b>bb</b> cc", "ww xx yy zz", links, "xml",
                          word_matrix=wrong_shape) == "ww <b></b>xx yy zz"


def test_a_cognate_met_once_on_each_side_takes_the_tag_whatever_the_links():
    # `deficit` linked to `public` by the model; `déficit` is its only cognate
    out = project_markup("the <g>deficit</g> of the government",
                         "le déficit public du gouvernement",
                         [(0, 0), (1, 2), (4, 4)], "xml")
    assert out == "le <g>déficit</g> public du gouvernement"
    out = project_markup("the <g>education</g> of adults", "l'éducation, des adultes",
                         [(0, 1), (1, 1), (3, 2)], "xml")
    assert out == "<g>l'éducation,</g> des adultes"  # elision and comma aside


def test_no_cognate_where_the_prefix_is_ambiguous_or_the_word_short():
    links = [(0, 0), (1, 2), (2, 1)]
    # two target words begin with `defi`: the model's link stands
    assert project_markup("the <g>deficit</g> here", "le déficit défini", links, "xml") == (
        "le déficit <g>défini</g>")
    assert project_markup("the <g>red</g> rose", "la redé rose", links, "xml") == (
        "la redé <g>rose</g>")  # `red` is shorter than COGNATE_PREFIX


def test_every_tag_appears_once_and_nested_whatever_the_links_cognates_and_matrix():
    source = ('<p>The <a href="#"><b>deficit</b> <i>reforms</i></a> strategy<br/> and '
              '<span>the <em>education</em> system</span> <img src="x"/> go.</p>')
    plan = plan_markup(source, "html")
    vocabulary = ["déficit", "réformes", "stratégie", "l'éducation", "système", "w", "x"]
    rng = random.Random(1)
    for _ in range(200):
        target = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 12)))
        n, m = len(plan.sentences[0].split()), len(target.split())
        links = tuple((rng.randrange(n), rng.randrange(m)) for _ in range(rng.randint(0, 8))
                      if m)
        matrix = [[rng.random() for _ in range(n)] for _ in range(m)]
        out = plan.join([TextLinks(target, links, matrix)]).text
        assert tags(out, "html") == tags(source, "html"), (target, links)


# --- a given translation (plan_projection) ---------------------------------------------------


def test_projection_plan_aligns_the_whole_source_to_the_stripped_target():
    plan = markup.plan_projection("Click <b>Save</b>. Then <i>quit</i>.", " Cliquez. Quittez. ",
                                  "html")

    assert plan.sentences == ["Click Save. Then quit."]  # one segment, never split
    assert plan.targets == ["Cliquez. Quittez."]
    document = plan.join([TextLinks("Cliquez. Quittez.", ((0, 0), (1, 0), (3, 1)))])
    assert document.text == "<b>Cliquez</b>. <i>Quittez</i>."  # punctuation stays outside
    [sentence] = document.sentences
    assert sentence.source_span == (0, 36) and sentence.target_span == (0, len(document.text))


def test_projection_plan_of_plain_text_keeps_the_source_whitespace_and_gives_char_links():
    plan = markup.plan_projection("  The cat.\n", "Le chat.", "text")

    assert plan.sentences == ["The cat."] and plan.targets == ["Le chat."]
    document = plan.join([TextLinks("Le chat.", ((0, 0), (1, 1)))])
    assert document.text == "  Le chat.\n"
    assert document.link_spans == (((2, 5), (2, 4)), ((6, 10), (5, 10)))
    assert [s.source_span for s in document.sentences] == [(2, 10)]


@pytest.mark.parametrize("source, target, format, expected", [
    ("<br/>", "Bonjour & <adieu>", "html", "<br/>Bonjour &amp; &lt;adieu&gt;"),
    ('<x id="1"/>', "", "xml", '<x id="1"/>'),
    ("  ", "Tiens", "text", "  Tiens"),
])
def test_a_source_without_a_word_is_not_aligned(source, target, format, expected):
    plan = markup.plan_projection(source, target, format)

    assert plan.sentences == [] and plan.targets == []
    document = plan.join([])
    assert document.text == expected and document.sentences == () and document.link_spans == ()


def test_projection_plans_join_like_documents():
    plans = [markup.plan_projection("A <b>car</b>.", "Une voiture.", "html"),
             markup.plan_projection("<br>", "Rien.", "html")]

    [first, second] = join_documents(plans, [TextLinks("Une voiture.", ((0, 0), (1, 1)))])

    assert (first.text, second.text) == ("Une <b>voiture</b>.", "<br>Rien.")


def test_projection_plan_refuses_bad_input():
    with pytest.raises(ValueError, match=r"format must be one of .* Received: 'md'"):
        markup.plan_projection("x", "y", "md")
    with pytest.raises(MarkupError, match="never closed"):
        markup.plan_projection("<b>x", "y", "html")
    plan = markup.plan_projection("A car.", "Une voiture.", "text")
    with pytest.raises(ValueError, match=r"Expected one result per sentence \(1\)\. Received: 0"):
        plan.join([])


# Placeholders: standalone pieces of the text (documents.placeholders), in documents.


def test_a_text_documents_placeholders_come_back_and_its_lines_and_spacing_too():
    text = "Saved %d files.\r\n\n  Delete '%s'?  Thank you.\n"
    plan = markup.plan_document(text, "text", placeholders=True)

    assert plan.sentences == ["Saved files.", "Delete", "Thank you."]
    document = plan.join([diagonal("Saved files.", "Enregistré fichiers."),
                          diagonal("Delete", "Supprimer"), diagonal("Thank you.", "Merci.")])
    assert document.text == "Enregistré %d fichiers.\r\n\n  Supprimer '%s'?  Merci.\n"
    assert [document.text[a:b] for _, (a, b) in document.link_spans] == [
        "Enregistré", "fichiers.", "Supprimer", "Merci."]


def test_plain_text_is_not_escaped_but_markup_is():
    plan = markup.plan_document("Tom & Jerry %s <3", "text", placeholders=True)
    assert plan.join([diagonal(plan.sentences[0], "Tom & Jerry <3")]).text == "Tom & Jerry %s <3"
    plan = markup.plan_document("Tom &amp; Jerry %s &lt;3", "html", placeholders=True)
    assert plan.sentences == ["Tom & Jerry <3"]
    document = plan.join([diagonal(plan.sentences[0], "Tom & Jerry <3")])
    assert document.text == "Tom &amp; Jerry %s &lt;3"


@pytest.mark.parametrize("text, format", [
    ("I went home. It was late.\n\nThank you %", "text"),
    ("The <b>cat</b> is black. &amp; {not one}", "html"),
    ('The <g id="1">cat</g> is <x id="2"/>black, 50 % off.', "xml"),
])
def test_a_document_without_placeholders_is_planned_exactly_as_without_them(text, format):
    kept = markup.plan_document(text, format, placeholders=True)
    plain = markup.plan_document(text, format)

    assert type(kept) is type(plain) and kept.sentences == plain.sentences
    if format != "text":
        results = [diagonal(s, s.upper()) for s in plain.sentences]
        assert kept.join(results).text == plain.join(results).text


def test_placeholders_in_markup_are_standalone_pieces_but_entities_stay_the_markups():
    source = 'Delete <b>node</b> "%s" &amp; {0}?'
    plan = markup.plan_document(source, "html", placeholders=True)

    assert plan.sentences == ["Delete node &"]
    document = plan.join([TextLinks("Supprimer & nœud", ((0, 0), (1, 2), (2, 1)))])
    # "%s" follows a space: it goes before the target of the word after it, "&".
    assert document.text == 'Supprimer "%s" &amp; <b>nœud</b> {0}?'


def test_placeholders_split_across_parser_events_are_found():
    plan = markup.plan_document("<p>Line one %s\nline two {0}</p>", "xml", placeholders=True)
    assert plan.sentences == ["Line one line two"]


def test_placeholders_off_plans_markup_as_before():
    plan = markup.plan_document('Delete "%s"?', "html")
    assert plan.sentences == ['Delete "%s"?']


def test_an_element_around_a_placeholder_only_is_one_piece_that_keeps_the_order():
    plan = markup.plan_document("Set <b>%s</b> on <i>%d</i> objects", "html", placeholders=True)

    assert plan.sentences == ["Set on objects"]
    crossing = TextLinks("objets sur Définir", ((0, 2), (1, 1), (2, 0)))
    assert plan.join([crossing]).text == "<b>%s</b> objets <i>%d</i> sur Définir"


@pytest.mark.parametrize("format", ["xml", "html"])
def test_a_tag_never_closes_inside_an_escaped_character(format):
    # The source's ";" after </b> must not be matched against the ";" of "&gt;".
    plan = plan_markup("See <b>the links</b>; now.", format)
    text = plan.join([TextLinks("voir les >", ((0, 0), (1, 1), (2, 2)))]).text
    assert text == "voir <b>les &gt;</b>"
