"""One list of job entry points, tick handlers and subscribers (jobs.wiring). That no lower layer
imports jobs is a contract of `.importlinter` (tests/test_layers.py)."""
import re

import pytest
from werkzeug.utils import ImportStringError, import_string

from core.config import PROJECT_ROOT
from jobs import wiring

APP_PACKAGES = ("core", "desk", "studio", "rules", "openapi", "jobs", "app")


def sources(*packages: str):
    """Every module of the given packages, as (path, text)."""
    for package in packages:
        for path in sorted((PROJECT_ROOT / package).rglob("*.py")):
            yield path, path.read_text()


def test_every_listed_path_imports_as_a_callable():
    listed = [*wiring.ENTRY_POINTS, *wiring.TICK_HANDLERS,
              *(path for paths in wiring.EVENT_SUBSCRIBERS.values() for path in paths)]
    assert "openapi.webhooks.sweep" in wiring.TICK_HANDLERS
    for path in listed:
        assert callable(import_string(path)), path


def test_every_job_the_code_queues_is_a_listed_entry_point():
    queued = {name for _, text in sources(*APP_PACKAGES)
              for name in re.findall(r'"(jobs\.(?:tasks|cron)\.[a-z_]+)"', text)}
    assert queued and queued <= set(wiring.ENTRY_POINTS)
    assert "jobs.cron.tick" in wiring.ENTRY_POINTS  # what `flask jobs cron` registers


def test_the_production_lists_cannot_be_changed_in_place():
    """Tests and deployments add handlers through the app's config; nothing appends to these."""
    assert isinstance(wiring.TICK_HANDLERS, tuple)
    assert all(isinstance(paths, tuple) for paths in wiring.EVENT_SUBSCRIBERS.values())


def test_the_app_config_extends_the_lists_for_that_app_only(app, monkeypatch):
    monkeypatch.setitem(app.config, "EXTRA_TICK_HANDLERS", ("tests.jobs.test_jobs.counting_tick",))
    monkeypatch.setitem(app.config, "EXTRA_EVENT_SUBSCRIBERS",
                        {"message_received": ("tests.jobs.test_jobs.record_event",)})
    assert wiring.tick_handlers() == (*wiring.TICK_HANDLERS, "tests.jobs.test_jobs.counting_tick")
    assert wiring.subscribers("message_received") == (*wiring.EVENT_SUBSCRIBERS["message_received"],
                                                      "tests.jobs.test_jobs.record_event")
    wiring.check()


def test_a_broken_path_fails_the_check_a_process_runs_at_start(app, monkeypatch):
    monkeypatch.setitem(app.config, "EXTRA_TICK_HANDLERS", ("tests.jobs.test_jobs.no_such_handler",))
    with pytest.raises(ImportStringError):
        wiring.check()
