"""Headless Chromium for the viewer's browser tests: the `browser` and `page` fixtures.

The tests drive Debian's Chromium through Playwright (``M3BENCH_CHROMIUM``, default
/usr/bin/chromium). Without it they are skipped with the reason, except under CI (``CI`` set),
where a missing browser is a failure. A test module uses them with
``from chromium import browser, page``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = Path(os.environ.get("M3BENCH_CHROMIUM", "/usr/bin/chromium"))


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium through Playwright; skipped without it, failed under CI."""
    missing = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing = "playwright is not installed (pip install -e '.[test]')"
    if missing is None and not CHROMIUM.is_file():
        missing = f"no Chromium at {CHROMIUM} (apt-get install chromium, or set M3BENCH_CHROMIUM)"
    if missing:
        if os.environ.get("CI", "").lower() not in ("", "0", "false"):
            pytest.fail(f"{missing}; CI is set, so this is an error", pytrace=False)
        pytest.skip(missing)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM))
        yield chromium
        chromium.close()


@pytest.fixture()
def page(browser):
    """A fresh page that records console errors and uncaught exceptions in page.errors."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    tab.errors = []
    tab.on("console", lambda m: tab.errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: tab.errors.append(str(e)))
    yield tab
    context.close()
