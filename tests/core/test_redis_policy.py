"""Every process refuses, at start-up, a Redis that may evict keys: real processes started against
the test Redis with its maxmemory-policy set to allkeys-lru exit at once saying how to fix it."""
import logging
import subprocess
import sys
import uuid

import pytest
import redis

from core.config import PROJECT_ROOT
from core.redis_policy import refuse_evicting_redis
from tests.conftest import CLOCK, FLASK, RUNNER, process_env

WEB = [sys.executable, "-c", "import wsgi"]  # what gunicorn imports before it serves


@pytest.fixture
def evicting(redis_conn):
    """The test Redis with allkeys-lru for the test, noeviction again afterwards."""
    before = redis_conn.config_get("maxmemory-policy")["maxmemory-policy"]
    redis_conn.config_set("maxmemory-policy", "allkeys-lru")
    yield
    redis_conn.config_set("maxmemory-policy", before)


@pytest.mark.parametrize("command", [CLOCK, RUNNER, [*FLASK, "jobs", "worker", "--burst"], WEB],
                         ids=["clock", "runner", "worker", "web"])
def test_every_process_refuses_a_redis_that_may_evict_keys(app, app_config, evicting, command):
    done = subprocess.run(command, cwd=PROJECT_ROOT, env=process_env(app_config), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0
    assert "maxmemory-policy allkeys-lru" in done.stderr and "CONFIG SET maxmemory-policy noeviction" in done.stderr


def test_a_redis_that_keeps_every_key_is_accepted(redis_conn):
    assert redis_conn.config_get("maxmemory-policy")["maxmemory-policy"] == "noeviction"
    refuse_evicting_redis(redis_conn, "this test")


def test_a_redis_that_will_not_say_its_policy_is_let_through_with_a_warning(app_config, redis_conn, caplog):
    """A provider that renames or forbids CONFIG: an ACL user without it."""
    name, password = f"no-config-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    redis_conn.acl_setuser(name, enabled=True, passwords=[f"+{password}"], commands=["+@all", "-config"],
                           keys=["*"])
    try:
        limited = redis.Redis.from_url(app_config["REDIS_URL"], username=name, password=password)
        with caplog.at_level(logging.WARNING):
            refuse_evicting_redis(limited, "this test")
        assert "could not read Redis's maxmemory-policy" in caplog.text
        limited.close()
    finally:
        redis_conn.acl_deluser(name)
