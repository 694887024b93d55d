"""The page at `/` in a real browser: headless Chromium (Debian's), driven by Selenium.

Skips, saying why, where no Chromium and ChromeDriver can be had (`.ci/run`
installs them). The screenshot lands in `$NMT_PAGE_SCREENSHOT` if set, else
in the test's temporary directory (its path is printed).
"""

import importlib.util
import json
import os
import time
import urllib.request
from pathlib import Path

import pytest

from serving.server import ServerConfig
from serving.testing import ServerThread, free_port

REPO = Path(__file__).resolve().parents[2]
SENTENCE = "The cat is black."
TARGET = "Le chat est noir."


def _load_screenshot_module():
    spec = importlib.util.spec_from_file_location("docs_screenshot",
                                                  REPO / "docs" / "screenshot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


page = _load_screenshot_module()


@pytest.fixture(scope="module")
def browser():
    found = page.find_browser()
    if isinstance(found, str):
        pytest.skip(found)
    driver = page.start_browser(1200, 900)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def server(tiny_model_dir):
    running = ServerThread(ServerConfig(
        model_dir=tiny_model_dir, host="127.0.0.1", port=0, metrics_port=0,
        http_port=free_port(), poll_interval_s=0))
    running.wait_until_serving()
    yield running
    running.stop()


def _url(server, path="/"):
    return f"http://127.0.0.1:{server.server.http_port}{path}"


def _api(server, path, body):
    request = urllib.request.Request(_url(server, path), data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def _css(driver, selector):
    return driver.find_elements("css selector", selector)


def _classes(element) -> set[str]:
    return set((element.get_attribute("class") or "").split())


def test_translate_shows_the_translation_heatmap_and_word_links(server, browser, tmp_path):
    expected = _api(server, "/v1/translate", {"sentences": [SENTENCE],
                                              "options": {"beamSize": 2, "nBest": 2}})
    translation = expected["translations"][0]
    best = translation["hypotheses"][0]

    page.translate_on_page(browser, _url(server), SENTENCE, beam_size=2, n_best=2)

    shown = [e.text for e in _css(browser, ".hyp .text")]
    assert shown == [h["text"] or "(empty)" for h in translation["hypotheses"]]
    assert [e.text for e in _css(browser, ".hyp .score")] == [
        f"score {h['score']:.3f}" for h in translation["hypotheses"]]
    rows, columns = len(best["targetTokens"]), len(translation["sourceTokens"])
    assert len(_css(browser, "#heatmap tbody tr")) == rows
    assert len(_css(browser, "#heatmap tbody td")) == rows * columns
    assert [e.text for e in _css(browser, "#heatmap thead th")] == translation["sourceTokens"]
    assert [e.text for e in _css(browser, "#heatmap tbody th")] == best["targetTokens"]
    weights = [float(e.get_attribute("data-weight")) for e in _css(browser, "#heatmap tbody td")]
    flat = [w for row in best["alignment"] for w in row["weights"]]
    assert weights == pytest.approx(flat, abs=1e-4)

    links = [tuple(map(int, link.split("-"))) for link in best["wordAlignment"].split()]
    assert links, "the tiny model's answer has no word link to hover"
    source_words = _css(browser, ".words.source .word")
    target_words = _css(browser, ".words.target .word")
    assert [w.text for w in source_words] == SENTENCE.split()
    assert [w.text for w in target_words] == best["text"].split()
    assert len(_css(browser, "#links svg line")) == len(links)

    s, t = links[0]
    page.hover(browser, target_words[t])
    linked = {i for i, word in enumerate(source_words) if "linked" in _classes(word)}
    assert linked == {i for i, j in links if j == t}
    assert "active" in _classes(target_words[t])
    assert source_words[s].text in browser.find_element("id", "link-status").text

    browser.execute_script("arguments[0].focus()", source_words[s])  # keyboard focus works too
    linked = {j for j, word in enumerate(target_words) if "linked" in _classes(word)}
    assert linked == {j for i, j in links if i == s}

    shot = Path(os.environ.get("NMT_PAGE_SCREENSHOT") or tmp_path / "page.png")
    page.save_full_page(browser, shot)
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")


def test_align_mode_shows_the_given_translation(server, browser):
    expected = _api(server, "/v1/align", {"sources": [SENTENCE], "targets": [TARGET]})
    pair = expected["alignments"][0]

    browser.set_window_size(1200, 900)
    browser.get(_url(server))
    page.wait_for_state(browser, ("ready",))
    browser.find_element("css selector", "input[name=mode][value=align]").click()
    assert browser.find_element("id", "submit").text == "Align"
    assert not browser.find_element("id", "beam-size").is_displayed()
    source = browser.find_element("id", "source")
    source.clear()
    source.send_keys(SENTENCE)
    browser.find_element("id", "target").send_keys(TARGET)
    browser.find_element("id", "submit").click()

    assert page.wait_for_state(browser, ("done", "error")) == "done"
    assert [e.text for e in _css(browser, ".hyp .text")] == [TARGET]
    tokens = pair["hypotheses"][0]["targetTokens"]
    assert len(_css(browser, "#heatmap tbody td")) == len(tokens) * len(pair["sourceTokens"])
    assert [w.text for w in _css(browser, ".words.target .word")] == TARGET.split()


def test_a_mismatched_align_input_is_reported_in_the_alert(server, browser):
    browser.get(_url(server))
    page.wait_for_state(browser, ("ready",))
    browser.find_element("css selector", "input[name=mode][value=align]").click()
    browser.find_element("id", "submit").click()  # an English line without its French

    error = browser.find_element("id", "error")
    assert error.get_attribute("role") == "alert"
    assert "give both the English sentence and its French translation" in error.text
    assert browser.switch_to.active_element.get_attribute("id") == "target"


DOCUMENT = "Click <b>Save</b> to keep your changes. Then close the <i>window</i>.\n\nThank you."


def _document_on_page(browser, url, text, format):
    """Opens the page in document mode, types `text` in `format` and translates it."""
    browser.set_window_size(1200, 900)
    state = page.translate_document_on_page(browser, url, text, format)
    assert not browser.find_element("id", "source").is_displayed()
    return state


def test_document_mode_shows_the_translated_markup_and_each_sentences_alignment(server,
                                                                               browser):
    expected = _api(server, "/v1/translate", {"sentences": [DOCUMENT],
                                              "format": "TEXT_FORMAT_HTML"})
    [document] = expected["documents"]
    sentences = document["sentences"]

    assert _document_on_page(browser, _url(server), DOCUMENT, "html") == "done"

    output = browser.find_element("id", "document-output")
    shown = browser.execute_script("return arguments[0].textContent", output)
    assert shown == document["text"] and shown.count("<b>") == 1  # markup shown as text
    assert "\n\n" in shown  # the paragraph break is kept
    spans = _css(browser, "#document-output .sentence")
    assert [browser.execute_script("return arguments[0].textContent", span) for span in spans
            ] == [document["text"][s["targetStart"]:s["targetEnd"]] for s in sentences]
    assert [e.text for e in _css(browser, ".source-text")] == [s["sentence"] for s in sentences]
    assert "1 document of 3 sentences" in browser.find_element("id", "status").text
    assert "chosen" in _classes(spans[0])

    spans[1].click()  # the second sentence's alignment, through the existing view
    second = sentences[1]["translation"]
    assert "chosen" in _classes(spans[1]) and "chosen" not in _classes(spans[0])
    assert [w.text for w in _css(browser, ".words.source .word")] == (
        sentences[1]["sentence"].split())
    assert [w.text for w in _css(browser, ".words.target .word")] == (
        second["hypotheses"][0]["text"].split())
    assert len(_css(browser, "#heatmap tbody tr")) == len(
        second["hypotheses"][0]["targetTokens"])

    browser.set_window_size(390, 844)  # the format choice and the markup fit a phone
    try:
        overflow = browser.execute_script(
            "return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the page is {overflow}px wider than a phone"
    finally:
        browser.set_window_size(1200, 900)


def test_the_screenshots_markup_mode_shows_the_chosen_sentences_links(server, browser,
                                                                      tmp_path):
    args = page.parse_args(["--markup", "--url", _url(server), "--sentence", "1",
                            "--focus-word", "0", "--out", str(tmp_path / "page-markup.png")])
    assert args.text == page.MARKUP and args.format == "html"
    expected = _api(server, "/v1/translate", {"sentences": [page.MARKUP],
                                              "format": "TEXT_FORMAT_HTML"})
    [document] = expected["documents"]
    browser.set_window_size(1200, 900)

    shot = page.take_screenshot(browser, args)

    assert shot.stat().st_size > 10_000
    output = browser.find_element("id", "document-output")
    assert browser.execute_script("return arguments[0].textContent", output) == document["text"]
    spans = _css(browser, "#document-output .sentence")
    assert len(spans) == len(document["sentences"]) == 2
    assert "chosen" in _classes(spans[1]) and "chosen" not in _classes(spans[0])
    second = document["sentences"][1]
    assert [w.text for w in _css(browser, ".words.source .word")] == second["sentence"].split()
    focused = browser.switch_to.active_element
    assert "word" in _classes(focused) and focused.text == (
        second["translation"]["hypotheses"][0]["text"].split()[0])


def test_document_mode_reports_malformed_markup(server, browser):
    assert _document_on_page(browser, _url(server), "Hi <b>there.", "html") == "error"

    error = browser.find_element("id", "error").text
    assert "document 0 is not valid HTML: <b> is never closed at character 3" in error
    assert not browser.find_element("id", "document-result").is_displayed()


def test_a_glossary_typed_in_its_box_is_applied_and_its_terms_marked(server, browser):
    sentence = "The black cat is here."
    expected = _api(server, "/v1/translate", {
        "sentences": [sentence], "options": {"beamSize": 1, "nBest": 1},
        "glossary": {"entries": [{"source": "black cat", "target": "chat noir"}]}})
    [term] = expected["translations"][0]["hypotheses"][0]["appliedTerms"]

    browser.get(_url(server))
    page.wait_for_state(browser, ("ready",))
    for element_id, value in (("source", sentence), ("beam-size", "1"), ("n-best", "1"),
                              ("glossary", "# mine\nblack cat = chat noir")):
        field = browser.find_element("id", element_id)
        field.clear()
        field.send_keys(value)
    assert not browser.find_element("id", "glossary-id-field").is_displayed(), (
        "this server has no named glossary")
    browser.find_element("id", "submit").click()
    assert page.wait_for_state(browser, ("done", "error")) == "done"

    [marked] = _css(browser, ".hyp .text mark.term")
    assert marked.text == term["target"] and "chat noir" in marked.get_attribute("title")
    assert [e.text for e in _css(browser, ".source-text mark.term")] == ["black cat"]
    browser.find_element("id", "glossary").send_keys("\nno separator here")
    browser.find_element("id", "submit").click()
    assert page.wait_for_state(browser, ("done", "error")) in ("done", "error")
    assert "Glossary line 3: write the English term, a tab (or =)" in (
        browser.find_element("id", "error").text)


def test_phone_width_labels_and_keyboard(server, browser, tmp_path):
    browser.set_window_size(390, 844)
    try:
        browser.get(_url(server))
        page.wait_for_state(browser, ("ready",))
        unlabelled = browser.execute_script(
            "return [...document.querySelectorAll('input, textarea, select, button')]"
            ".filter(e => !(e.labels && e.labels.length) && !e.textContent.trim()"
            " && !e.getAttribute('aria-label')).map(e => e.outerHTML)")
        assert unlabelled == []

        source = browser.find_element("id", "source")
        source.clear()
        source.send_keys(SENTENCE)
        from selenium.webdriver.common.keys import Keys

        source.send_keys(Keys.CONTROL, Keys.ENTER)  # submits without the mouse
        assert page.wait_for_state(browser, ("done", "error")) == "done"
        overflow = browser.execute_script(
            "return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the page is {overflow}px wider than a phone"
        words = _css(browser, ".words.target .word")
        assert words and all(w.tag_name == "button" for w in words)  # in the Tab order
        main = Path(os.environ.get("NMT_PAGE_SCREENSHOT") or tmp_path / "page.png")
        page.save_full_page(browser, main.with_name(f"{main.stem}-phone.png"))
    finally:
        browser.set_window_size(1200, 900)


# --- a whole file, on a server whose fake model shouts ------------------------------------------

TEMPLATE = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n' \
           'msgid "I like green tea."\nmsgstr ""\n'


@pytest.fixture(scope="module")
def file_server(tmp_path_factory):
    from tests.serving.file_fakes import fake_server

    with fake_server(tmp_path_factory.mktemp("model"), http_port=free_port()) as (running, _):
        yield running


def _upload_on_page(browser, url, path: Path) -> None:
    """Chooses `path` in the file form and sends it; waits for the download or an error."""
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(url)
    page.wait_for_state(browser, ("ready",))
    browser.find_element("id", "file").send_keys(str(path))
    browser.find_element("id", "file-submit").click()
    WebDriverWait(browser, 60).until(lambda d: d.find_element("id", "file-download").is_displayed()
                                     or d.find_element("id", "error").text)


def test_a_file_is_translated_and_offered_for_download(file_server, browser, tmp_path):
    source, downloads = tmp_path / "messages.pot", tmp_path / "downloads"
    source.write_text(TEMPLATE, encoding="utf-8")
    downloads.mkdir()
    browser.execute_cdp_cmd("Browser.setDownloadBehavior",
                            {"behavior": "allow", "downloadPath": str(downloads)})

    _upload_on_page(browser, _url(file_server), source)

    assert browser.find_element("id", "error").text == ""
    assert browser.find_element("id", "file-status").text == (
        "messages.fr.po: 1 of 1 messages translated (fuzzy), 0 translations kept, 0 obsolete "
        "entries left as they were; 1 sentences.")
    link = browser.find_element("id", "file-link")
    assert (link.text, link.get_attribute("download")) == ("Download messages.fr.po",
                                                           "messages.fr.po")
    assert browser.switch_to.active_element == link  # the keyboard is where the result is
    link.click()
    saved = downloads / "messages.fr.po"
    for _ in range(100):
        if saved.exists():
            break
        time.sleep(0.1)
    assert 'msgid "I like green tea."\nmsgstr "I LIKE GREEN TEA."\n' in saved.read_text()


def test_a_file_the_server_refuses_is_reported_in_the_alert(file_server, browser, tmp_path):
    source = tmp_path / "notes.po"
    source.write_text("# Notes\n\nBuy bread.\n", encoding="utf-8")

    _upload_on_page(browser, _url(file_server), source)

    assert browser.find_element("id", "error").text == (
        "INVALID_ARGUMENT: notes.po:3: not PO syntax (not a comment, keyword or quoted string): "
        "is it a PO or POT file?")
    assert not browser.find_element("id", "file-download").is_displayed()
    assert browser.switch_to.active_element.get_attribute("id") == "file"
