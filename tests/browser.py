"""Open a page in Debian's headless chromium through Playwright and say what a person would see:
console errors, which plots were drawn (with how many drawn marks), the text, a screenshot.

The browser is the system's (/usr/bin/chromium, from .ci/run): Playwright never downloads one.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("BOTTLENECKD_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


@dataclass(frozen=True)
class PageView:
    errors: list[str]
    plots: dict[str, int]  # plot div id -> drawn marks (bars, line paths, points, boxes)
    text: str
    screenshot: Path


def need_browser() -> None:
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)")
    pytest.importorskip("playwright.sync_api", reason="pip install playwright (the 'test' extra)")


DRAWN = """() => Object.fromEntries([...document.querySelectorAll('.js-plotly-plot')].map(el => [el.id,
  el.querySelectorAll('g.trace path.point, g.trace path.js-line, g.trace path.box, g.trace .points path').length]))"""


def _answer(body: str) -> Any:
    def fulfill(route: Any, _request: Any = None) -> None:
        route.fulfill(body=body, content_type="application/javascript", headers={"Access-Control-Allow-Origin": "*"})

    return fulfill


def open_page(html_file: Path, screenshot: Path, serve: dict[str, str] | None = None) -> PageView:
    """``serve``: URLs answered with the given JavaScript (with CORS allowed), as a CDN would: the
    only requests off the file that are not errors."""
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
            for url, body in (serve or {}).items():
                page.route(url, _answer(body))
            # any other request off the file itself would mean the page is not self-contained
            page.on(
                "request",
                lambda r: (
                    errors.append(f"network request: {r.url}")
                    if not r.url.startswith(("file:", "data:", "blob:")) and r.url not in (serve or {})
                    else None
                ),
            )
            page.goto(html_file.resolve().as_uri(), wait_until="load", timeout=60_000)
            page.wait_for_function(
                "() => [...document.querySelectorAll('.js-plotly-plot')].every(el => el.querySelector('.main-svg'))",
                timeout=60_000,
            )
            plots = page.evaluate(DRAWN)
            text = page.inner_text("body")
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    print(f"\nscreenshot of {html_file.name}: {screenshot}")
    return PageView(errors, plots, text, screenshot)
