"""A live server on loopback and Debian's Chromium driven by Playwright."""
import threading

import pytest
from playwright.sync_api import sync_playwright
from werkzeug.serving import make_server

from tests.openapi.conftest import make_open_app  # noqa: F401
from tests.studio.conftest import api, draft_app  # noqa: F401  the studio fixtures, shared here

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture
def live_server(app):
    """Serve the test app on a free loopback port for the duration of a test."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(timeout=5)


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the session."""
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    """A fresh browser context (no cookies) per test."""
    context = browser.new_context()
    yield context.new_page()
    context.close()
