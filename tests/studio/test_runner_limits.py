"""The runner's time and fairness bounds, through the real runner process and real Redis.

Nothing here asserts a duration: the answers (a simulation that succeeds instead of
`code_runner_busy`) are what a slow runner or an unfair queue would change.
"""
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from rq.registry import StartedJobRegistry

from core.redis import get_redis
from core.queue import queue
from core.queue_names import SCRIPTS
from studio.scripting.client import _tenant_slots
from tests.conftest import login, seat
from tests.support.studio import ConsoleApi, sample_definition
from tests.support.scripts import JOIN, REGEX, script_executions

SLOW = {"regex": REGEX, "join": JOIN}
STREAMS = 4


def _script_app(api: ConsoleApi, source: str) -> str:
    return api.create(sample_definition(code={"language": "javascript", "source": source}))


def _wait_until_idle(timeout: float = 30) -> None:
    """Until the scripts queue is empty and the runner holds no task."""
    started = StartedJobRegistry(SCRIPTS, connection=get_redis())
    deadline = time.monotonic() + timeout
    while queue(SCRIPTS).count or started.count:
        assert time.monotonic() < deadline, "the runner did not drain its queue"
        time.sleep(0.05)


@pytest.mark.parametrize("name", SLOW)
def test_two_runaway_scripts_ahead_leave_a_simulation_inside_its_bound(api, runner, name):
    """Each runaway task ends at the run limit plus a margin, not three times later."""
    app_id = _script_app(api, "return {title: input.title + '!'};")
    ahead = [queue(SCRIPTS).enqueue("jobs.tasks.run_script", args=(SLOW[name], "{}")) for _ in range(2)]
    response = api.simulate(app_id, data={"title": "next"})
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["data"]["data"]["title"] == "next!"
    assert [job.latest_result().return_value["code"] for job in ahead] == ["code_timeout"] * 2


@pytest.fixture
def other_api(app, other_tenant) -> ConsoleApi:
    """The other tenant's administrator on the console API."""
    member = seat(other_tenant, "admin")
    browser = app.test_client()
    assert login(browser, member.user.email).status_code == 302
    return ConsoleApi(browser)


@pytest.mark.parametrize("name", SLOW)
def test_one_tenants_slow_scripts_do_not_make_another_tenant_busy(app, api, other_api, runner, tenant, name):
    """Tenant A keeps four streams of slow scripts going; tenant B's simulation, started after
    them, succeeds instead of waiting behind all of them."""
    slow_app = _script_app(api, SLOW[name])
    quick_app = _script_app(other_api, "return {title: input.title + '!'};")
    cookie = api.client.get_cookie("session").value
    done = threading.Event()

    def stream(_) -> list[str]:
        browser = app.test_client()
        browser.set_cookie("session", cookie)
        codes = []
        while not done.is_set():
            codes.append(ConsoleApi(browser).simulate(slow_app, data={"title": "slow"}).get_json()["error"]["code"])
        return codes

    with ThreadPoolExecutor(STREAMS) as pool:
        streams = pool.map(stream, range(STREAMS))
        try:
            for _ in range(500):  # until every stream has passed the rate limit, just before the hand-over
                if script_executions(tenant) >= STREAMS:
                    break
                time.sleep(0.02)
            time.sleep(0.2)  # they reach the queue (or wait for their tenant's turn) meanwhile
            response = other_api.simulate(quick_app, data={"title": "quick"})
        finally:
            done.set()
        codes = [code for codes in streams for code in codes]
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["data"]["data"]["title"] == "quick!"
    assert set(codes) <= {"code_timeout", "code_runner_busy"} and "code_timeout" in codes
    _wait_until_idle()


def test_a_tenants_concurrent_tasks_wait_for_their_turn_and_all_succeed(app, api, runner, tenant):
    """The per-tenant cap queues a tenant's own tasks one after another; none is refused."""
    app_id = _script_app(api, "return {title: input.title + '!'};")
    cookie = api.client.get_cookie("session").value

    def simulate(number: int):
        browser = app.test_client()
        browser.set_cookie("session", cookie)
        return ConsoleApi(browser).simulate(app_id, data={"title": f"t{number}"})

    with ThreadPoolExecutor(4) as pool:
        responses = list(pool.map(simulate, range(4)))
    assert [r.status_code for r in responses] == [200] * 4
    assert [r.get_json()["data"]["data"]["title"] for r in responses] == [f"t{n}!" for n in range(4)]
    assert _tenant_slots(tenant.id).holders() == 0  # every slot was given back
