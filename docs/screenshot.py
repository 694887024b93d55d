"""Screenshots of the translation page (`docs/page.png`, `docs/page-markup.png`) from `nmt serve`.

Drives the system's headless Chromium (Debian's `chromium` and
`chromium-driver`; nothing is downloaded) with Selenium: opens the page,
types a sentence, translates, focuses a French word so its links show, and
saves a PNG of the whole page. With `--markup`, the page is in document mode
instead: it translates a short HTML paragraph and shows one sentence's links.

    .venv/bin/nmt serve --http-port 8080 &
    .venv/bin/python docs/screenshot.py --url http://127.0.0.1:8080/ --out docs/page.png
    .venv/bin/python docs/screenshot.py --markup --out docs/page-markup.png

The browser test (`tests/serving/test_page.py`) drives the page with the
same functions.
"""

from __future__ import annotations

import argparse
import base64
import shutil
import sys
import tempfile
from pathlib import Path

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--force-device-scale-factor=1",
)
SENTENCE = "The little cat is sleeping on the sofa."
MARKUP = "<p>My <b>brother</b> lives in <i>Paris</i>. He is a <b>doctor</b>.</p>"


def find_browser() -> tuple[str, str] | str:
    """`(chromium, chromedriver)` paths, or why they cannot be used."""
    chromium = next(filter(None, (shutil.which(name) for name in
                                  ("chromium", "chromium-browser", "google-chrome"))), None)
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        missing = " and ".join(name for name, path in (("chromium", chromium),
                                                       ("chromedriver", driver)) if not path)
        return (f"{missing} not found; install Debian's packages: "
                "apt-get install -y chromium chromium-driver")
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed; pip install -e '.[dev]'"
    return chromium, driver


def start_browser(width: int = 1200, height: int = 900):
    """A headless Chromium (Selenium `webdriver.Chrome`) with a fresh profile.

    Raises:
        RuntimeError: no usable browser (the message says what to install).
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    found = find_browser()
    if isinstance(found, str):
        raise RuntimeError(found)
    chromium, driver = found
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='nmt-chromium-')}")
    options.add_argument(f"--window-size={width},{height}")
    # With the driver's path given, Selenium Manager (which would download one) is skipped.
    return webdriver.Chrome(options=options, service=Service(executable_path=driver))


def wait_for_state(driver, states: tuple[str, ...], timeout: float = 60) -> str:
    """Waits until the page's `body[data-state]` is one of `states`; returns it."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(
        lambda d: d.find_element("css selector", "body").get_attribute("data-state") in states)
    return driver.find_element("css selector", "body").get_attribute("data-state")


def translate_on_page(driver, url: str, text: str, beam_size: int = 5, n_best: int = 1,
                      timeout: float = 120) -> None:
    """Opens the page, types `text`, sets the options and translates (waits for the answer).

    Raises:
        RuntimeError: the page showed an error (its text is the message).
    """
    from selenium.webdriver.common.by import By

    driver.get(url)
    wait_for_state(driver, ("ready",), timeout)
    for element_id, value in (("source", text), ("beam-size", str(beam_size)),
                              ("n-best", str(n_best))):
        field = driver.find_element(By.ID, element_id)
        field.clear()
        field.send_keys(value)
    driver.find_element(By.ID, "submit").click()
    if wait_for_state(driver, ("done", "error"), timeout) == "error":
        raise RuntimeError(driver.find_element(By.ID, "error").text)


def translate_document_on_page(driver, url: str, text: str, format: str = "html",
                               timeout: float = 120) -> str:
    """Opens the page in document mode, types `text` in `format` (html, xml or text) and
    translates it; returns the page's state once answered: "done" or "error"."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    driver.get(url)
    wait_for_state(driver, ("ready",), timeout)
    driver.find_element(By.CSS_SELECTOR, "input[name=mode][value=document]").click()
    Select(driver.find_element(By.ID, "document-format")).select_by_value(format)
    box = driver.find_element(By.ID, "document")
    box.clear()
    box.send_keys(text)
    driver.find_element(By.ID, "submit").click()
    return wait_for_state(driver, ("done", "error"), timeout)


def choose_sentence(driver, index: int) -> None:
    """Clicks the translated document's sentence `index` (clamped): its alignment shows."""
    spans = driver.find_elements("css selector", "#document-output .sentence")
    if spans:
        spans[min(index, len(spans) - 1)].click()


def focus_target_word(driver, index: int) -> None:
    """Focuses French word `index` (clamped); focus, not hover: the highlight must outlast
    scrolling to the top for the screenshot."""
    words = driver.find_elements("css selector", ".words.target .word")
    if words:
        driver.execute_script("arguments[0].focus()", words[min(index, len(words) - 1)])


def hover(driver, element) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).move_to_element(element).perform()


def save_full_page(driver, path: Path) -> Path:
    """A PNG of the whole page, below the fold included (Chromium's DevTools protocol)."""
    driver.execute_script("window.scrollTo(0, 0)")
    width, height = driver.execute_script(
        "const e = document.documentElement; return [e.scrollWidth, e.scrollHeight]")
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080/",
                        help="the page of a running `nmt serve --http-port 8080`")
    parser.add_argument("--markup", action="store_true",
                        help="document mode: translate --text as --format markup")
    parser.add_argument("--format", choices=("html", "xml", "text"), default="html",
                        help="the document's format with --markup")
    parser.add_argument("--text", help=f"English to translate (default: {SENTENCE!r}, "
                                       f"with --markup {MARKUP!r})")
    parser.add_argument("--sentence", type=int, default=0,
                        help="with --markup: the sentence whose alignment is shown")
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--n-best", type=int, default=3)
    parser.add_argument("--focus-word", type=int, default=1,
                        help="index of the French word to focus (its links are highlighted)")
    parser.add_argument("--width", type=int, default=1100, help="window width in CSS pixels")
    parser.add_argument("--out", type=Path, help="the PNG (default: docs/page.png, with "
                                                 "--markup docs/page-markup.png)")
    args = parser.parse_args(argv)
    if args.text is None:
        args.text = MARKUP if args.markup else SENTENCE
    if args.out is None:
        args.out = Path(__file__).resolve().parent / (
            "page-markup.png" if args.markup else "page.png")
    return args


def take_screenshot(driver, args: argparse.Namespace) -> Path:
    """Translates as `args` say (see `parse_args`) and saves the whole page to `args.out`.

    Raises:
        RuntimeError: the page showed an error (its text is the message).
    """
    if args.markup:
        if translate_document_on_page(driver, args.url, args.text, args.format) == "error":
            raise RuntimeError(driver.find_element("id", "error").text)
        choose_sentence(driver, args.sentence)
    else:
        translate_on_page(driver, args.url, args.text, args.beam_size, args.n_best)
    focus_target_word(driver, args.focus_word)
    return save_full_page(driver, args.out)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        driver = start_browser(args.width, 900)
    except RuntimeError as error:
        print(error, file=sys.stderr)
        return 2
    try:
        print(take_screenshot(driver, args))
    except RuntimeError as error:
        print(f"the page answered with an error: {error}", file=sys.stderr)
        return 1
    finally:
        driver.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
