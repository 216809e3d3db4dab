"""A real headless browser (Debian's chromium through chromedriver) for report tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium")
DRIVER = shutil.which("chromedriver")

needs_browser = pytest.mark.skipif(
    not (CHROMIUM and DRIVER),
    reason="Debian's chromium and chromium-driver are not installed "
    "(`make test` installs them where apt-get can)",
)


def images(page: Path) -> list[dict]:
    """Load ``page`` from disk; every <img> with whether it decoded and its size."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu"):
        opts.add_argument(arg)
    opts.add_argument("--disable-dev-shm-usage")
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    try:
        from selenium.webdriver.support.ui import WebDriverWait

        driver.get(page.resolve().as_uri())
        # the whole document parsed and every image settled (decoded or failed)
        WebDriverWait(driver, 60).until(
            lambda d: d.execute_script(
                "return document.readyState === 'complete' && "
                "Array.from(document.images).every(i => i.complete)"
            )
        )
        return driver.execute_script(
            "return Array.from(document.images).map(i => ({alt: i.alt, "
            "complete: i.complete, width: i.naturalWidth, height: i.naturalHeight}))"
        )
    finally:
        driver.quit()


def assert_every_figure_rendered(page: Path, markdown: Path) -> int:
    """The HTML page shows as many images as the Markdown summary has figures, and
    the browser decoded every one of them to a non-empty bitmap."""
    shown = images(page)
    expected = markdown.read_text(encoding="utf-8").count("![")
    in_html = page.read_text(encoding="utf-8").count("<img ")
    assert in_html == expected, f"the page has {in_html} <img>, the summary {expected}"
    assert len(shown) == expected, f"the browser shows {len(shown)} of {expected}"
    broken = [i["alt"][:60] for i in shown if not (i["complete"] and i["width"] > 0)]
    assert not broken, f"figures that did not render: {broken}"
    return len(shown)


def chrome():
    """A headless Chromium driven through chromedriver (quit it when done)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu"):
        opts.add_argument(arg)
    opts.add_argument("--disable-dev-shm-usage")
    opts.add_argument("--disable-background-networking")
    return webdriver.Chrome(service=Service(DRIVER), options=opts)
