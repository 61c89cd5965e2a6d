"""Generation quotas against the real Redis, within this process and across processes."""
import json
import subprocess
import sys
import time
import uuid
from datetime import datetime, timezone

import pytest

from core.api import ApiError
from core.clock import iso
from core.config import PROJECT_ROOT
from studio import quota
from studio.catalog import LIMITS
from studio.quota import quota_state, release_slot, reserve_generation
from tests.conftest import LONG_WINDOW, process_env, seconds_left_in_window

DAY = 86_400


@pytest.fixture
def limits(monkeypatch):
    """Lower (or raise) catalog limits for one test; the quota reads them at every call."""
    def use(**values: int) -> None:
        for name, value in values.items():
            monkeypatch.setitem(LIMITS, name, value)
    return use


def refused(tenant_id: uuid.UUID, metered: bool = False) -> int:
    """Assert that the tenant's next generation is refused with 429; its Retry-After seconds."""
    with pytest.raises(ApiError) as caught:
        reserve_generation(tenant_id, metered)
    assert (caught.value.code, caught.value.status) == ("generation_budget_exceeded", 429)
    return int(caught.value.headers["Retry-After"])


def generate(tenant_id: uuid.UUID, metered: bool = False) -> None:
    """One generation from its reservation to its end (the in-progress slot given back)."""
    release_slot(reserve_generation(tenant_id, metered).slot_token)


def server_seconds(redis_conn) -> float:
    """The Redis server's clock, the one every quota counts in."""
    seconds, micros = redis_conn.time()
    return seconds + micros / 1_000_000


def test_a_tenant_gets_one_generation_per_minute_and_other_tenants_are_unaffected(app, rate_window, redis_conn):
    rate_window()  # one long window, so the burst is counted together
    first, other = uuid.uuid4(), uuid.uuid4()
    generate(first)
    before = seconds_left_in_window(redis_conn, LONG_WINDOW)
    wait = refused(first)
    assert seconds_left_in_window(redis_conn, LONG_WINDOW) <= wait <= before  # the window's own seconds left
    generate(other)


def test_the_minute_limit_opens_again_when_its_window_ends(app, rate_window, redis_conn):
    rate_window(2, needed=1.5)
    tenant_id = uuid.uuid4()
    generate(tenant_id)
    wait = refused(tenant_id)
    assert wait == seconds_left_in_window(redis_conn, 2) == 2  # more than 1.4 s of the 2 s window are left
    time.sleep(wait + 0.05)  # Retry-After is enough: whole seconds, rounded up
    generate(tenant_id)


def test_a_tenant_gets_its_daily_limit_per_rolling_24_hours(app, rate_window, limits):
    rate_window()
    limits(generations_per_tenant_per_minute=100, generations_per_tenant_per_day=3)
    tenant_id = uuid.uuid4()
    for _ in range(3):
        generate(tenant_id)
    assert DAY - 60 <= refused(tenant_id) <= DAY  # until the first one is 24 hours old
    generate(uuid.uuid4())


def test_a_failed_generation_still_counts(app, rate_window, limits):
    rate_window()
    limits(generations_per_tenant_per_minute=100, generations_per_tenant_per_day=2)
    tenant_id = uuid.uuid4()
    reservation = reserve_generation(tenant_id, False)
    release_slot(reservation.slot_token)  # the generation failed: its slot ends, its count stays
    assert quota_state(tenant_id, False)["remaining_today"] == 1
    generate(tenant_id)
    refused(tenant_id)


def test_a_metered_tenant_is_not_capped_per_day(app, rate_window, limits):
    rate_window()
    limits(generations_per_tenant_per_minute=100, generations_per_tenant_per_day=2)
    metered, capped = uuid.uuid4(), uuid.uuid4()
    for _ in range(5):
        generate(metered, metered=True)
    generate(capped)
    generate(capped)
    refused(capped)


def test_a_metered_tenant_still_gets_one_generation_per_minute(app, rate_window):
    rate_window()
    tenant_id = uuid.uuid4()
    generate(tenant_id, metered=True)
    refused(tenant_id, metered=True)


def test_the_platform_allows_its_daily_limit_across_all_tenants(app, rate_window, limits):
    rate_window()
    limits(generations_platform_per_day=3)
    for _ in range(3):
        generate(uuid.uuid4())
    assert DAY - 60 <= refused(uuid.uuid4()) <= DAY
    assert DAY - 60 <= refused(uuid.uuid4(), metered=True) <= DAY  # metering skips only the tenant's day


def test_at_most_three_generations_are_in_progress_and_a_release_frees_a_slot(app, rate_window):
    rate_window()
    running = [reserve_generation(uuid.uuid4(), False) for _ in range(3)]
    fourth = uuid.uuid4()
    assert refused(fourth) == quota.BUSY_RETRY_SECONDS
    release_slot(running[0].slot_token)
    # The refusal took none of the fourth tenant's minute: it may start at once.
    reserve_generation(fourth, False)


def test_an_expired_lease_frees_its_slot_without_a_release(app, rate_window, monkeypatch):
    rate_window()
    monkeypatch.setattr(quota, "GENERATION_LEASE_SECONDS", 1)
    for _ in range(3):
        reserve_generation(uuid.uuid4(), False)  # their processes die: nothing releases them
    refused(uuid.uuid4())
    time.sleep(1.1)
    assert quota_state(uuid.uuid4(), False)["in_progress"] == 0
    reserve_generation(uuid.uuid4(), False)


def test_a_refused_reservation_holds_no_slot(app, rate_window, limits):
    rate_window()
    limits(generations_platform_per_day=1)
    first = uuid.uuid4()
    reserve_generation(first, False)
    refused(first)           # by the tenant's minute
    refused(uuid.uuid4())    # by the platform's day
    assert quota_state(first, False)["in_progress"] == 1


CHILD = """
import json, sys, uuid
from app import create_app
from core.api import ApiError
from studio.quota import reserve_generation
app = create_app({"RATE_WINDOW_SECONDS": int(sys.argv[2])})
with app.app_context():
    try:
        print(json.dumps({"slot_token": reserve_generation(uuid.UUID(sys.argv[1]), False).slot_token}))
    except ApiError as error:
        print(json.dumps({"code": error.code, "retry_after": error.headers["Retry-After"]}))
"""


def reserve_in_processes(app, app_config, tenant_id: uuid.UUID, count: int) -> list[dict]:
    """Ask `count` other processes, started together, to reserve a generation for the tenant."""
    processes = [subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tenant_id), str(app.config["RATE_WINDOW_SECONDS"])],
        cwd=PROJECT_ROOT, env=process_env(app_config), stdout=subprocess.PIPE, text=True)
        for _ in range(count)]
    outputs = [process.communicate(timeout=60)[0] for process in processes]
    assert [process.returncode for process in processes] == [0] * count
    return [json.loads(output.strip().splitlines()[-1]) for output in outputs]


def test_quotas_are_shared_across_processes(app, app_config, rate_window):
    rate_window()
    tenant_id = uuid.uuid4()
    answers = reserve_in_processes(app, app_config, tenant_id, 3)
    winners = [answer["slot_token"] for answer in answers if "slot_token" in answer]
    assert len(winners) == 1
    assert all(answer["code"] == "generation_budget_exceeded" and int(answer["retry_after"]) >= 1
               for answer in answers if "slot_token" not in answer)
    state = quota_state(tenant_id, False)
    assert (state["remaining_today"], state["in_progress"]) == (19, 1)
    refused(tenant_id)
    release_slot(winners[0])  # another process's slot, freed here
    assert quota_state(tenant_id, False)["in_progress"] == 0


def test_quota_state_of_a_fresh_tenant_is_all_available_and_reading_it_takes_nothing(app):
    tenant_id = uuid.uuid4()
    for _ in range(3):
        assert quota_state(tenant_id, False) == {"remaining_today": 20, "next_allowed_at": None,
                                                 "in_progress": 0, "metered": False}
    reserve_generation(tenant_id, False)


def test_quota_state_counts_down_and_names_the_end_of_the_minute(app, rate_window, redis_conn):
    rate_window()
    tenant_id = uuid.uuid4()
    reserve_generation(tenant_id, False)
    window_end = (int(server_seconds(redis_conn)) // 3600 + 1) * 3600
    assert quota_state(tenant_id, False) == {
        "remaining_today": 19, "next_allowed_at": iso(datetime.fromtimestamp(window_end, timezone.utc)),
        "in_progress": 1, "metered": False}
    assert quota_state(tenant_id, True)["remaining_today"] is None
    assert quota_state(tenant_id, True)["metered"] is True


def test_quota_state_names_when_a_full_day_frees_up(app, rate_window, limits, redis_conn):
    rate_window()
    limits(generations_per_tenant_per_minute=100, generations_per_tenant_per_day=2)
    tenant_id = uuid.uuid4()
    before = server_seconds(redis_conn)
    generate(tenant_id)
    after = server_seconds(redis_conn)
    generate(tenant_id)
    state = quota_state(tenant_id, False)
    assert state["remaining_today"] == 0
    free_at = datetime.fromisoformat(state["next_allowed_at"]).timestamp()
    assert before + DAY <= free_at <= after + DAY
    assert quota_state(tenant_id, True)["next_allowed_at"] is None  # the day holds no metered tenant back
