"""Races: many browsers of one person posting the same body at the same moment."""
import threading
from concurrent.futures import ThreadPoolExecutor

from tests.conftest import login
from tests.support.studio import ORIGIN

PARALLEL = 20


def browsers_of(app, email: str, count: int) -> list:
    """Separate browsers sharing one login (a login per browser would trip the login throttle)."""
    first = app.test_client()
    login(first, email)
    cookie = first.get_cookie("session").value
    browsers = [first]
    for _ in range(count - 1):
        browser = app.test_client()
        browser.set_cookie("session", cookie)
        browsers.append(browser)
    return browsers


def at_once(browsers, path: str, body: dict) -> list:
    """POST the same body from every browser at the same moment."""
    barrier = threading.Barrier(len(browsers))

    def send(browser):
        barrier.wait()
        return browser.post(path, json=body, headers=ORIGIN)

    with ThreadPoolExecutor(len(browsers)) as pool:
        return list(pool.map(send, browsers))
