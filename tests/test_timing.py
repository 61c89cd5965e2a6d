"""Timing rules between durations are checked when the configuration loads: an app whose settings
break one does not start, and the message names both values."""
import re

import pytest

from app import create_app
from core.config import ConfigurationError
from core import delivery
from rules import execution, plans, scheduler
from studio import records


def _refused(app_config, **changes) -> str:
    with pytest.raises(ConfigurationError) as refused:
        create_app({**app_config, **changes})
    return str(refused.value)


def test_the_default_settings_start(app_config):
    assert create_app(app_config).config["MODEL_READ_TIMEOUT"] == 60.0


def test_a_model_read_timeout_that_outlasts_the_generation_lease_stops_start_up(app_config):
    message = _refused(app_config, MODEL_READ_TIMEOUT=80.0)
    assert "MODEL_READ_TIMEOUT 80" in message and "200 s" in message
    assert "GENERATION_LEASE_SECONDS (180 s)" in message and "interrupted" in message


def test_the_longest_model_read_timeout_the_lease_allows_starts(app_config):
    create_app({**app_config, "MODEL_READ_TIMEOUT": 69.0})  # 2 x (5 + 69) + 30 = 178 s < 180 s
    assert "MODEL_READ_TIMEOUT 70) + 30, is 180 s" in _refused(app_config, MODEL_READ_TIMEOUT=70.0)


def test_a_webhook_lease_shorter_than_the_delivery_job_stops_start_up(app_config):
    message = _refused(app_config, WEBHOOK_LEASE_SECONDS=20)
    assert re.search(r"JOB_SECONDS is 30 s, .* WEBHOOK_LEASE_SECONDS \(20 s\)", message)


@pytest.mark.parametrize("module, name, value, named", [
    (plans, "JOB_TIMEOUT", 200,
     "rules.plans.JOB_TIMEOUT is 200 s, but it must be shorter than rules.plans.STUCK_AFTER (180 s)"),
    (plans, "BUDGET_SECONDS", 130.0,
     "rules.plans.BUDGET_SECONDS is 130 s, but it must be shorter than rules.plans.JOB_TIMEOUT (120 s)"),
    (scheduler, "LEASE_SECONDS", 120.0,
     "rules.scheduler.LEASE_SECONDS is 120 s, but it must equal rules.plans.STUCK_AFTER (180 s)"),
    (execution, "COMMAND_TIMEOUT", 150,
     "rules.execution.COMMAND_TIMEOUT is 150 s, but it must be shorter than rules.execution.STALE_AFTER (120 s)"),
    (delivery, "ATTEMPT_SECONDS", 45,
     "core.delivery.ATTEMPT_SECONDS is 45 s, but it must be shorter than core.delivery.JOB_SECONDS (30 s)"),
    (records, "RESERVATION_SECONDS", 1,
     "TASK_SECONDS) is 2 s, but it must be shorter than studio.records.RESERVATION_SECONDS (1 s)"),
])
def test_a_constant_that_breaks_its_timing_rule_stops_start_up(app_config, monkeypatch, module, name, value, named):
    monkeypatch.setattr(module, name, value)
    assert named in _refused(app_config)
