"""The runner's time bound, through the real runner process and real Redis.

Nothing here asserts a duration: the answers (a simulation that succeeds instead of
`code_runner_busy`) are what a slow runner or an unfair queue would change.
"""

import pytest

from jobs.queues import SCRIPTS, queue
from tests.studio.conftest import ConsoleApi, sample_definition
from tests.studio.test_scripts import JOIN, REGEX

SLOW = {"regex": REGEX, "join": JOIN}

def _script_app(api: ConsoleApi, source: str) -> str:
    return api.create(sample_definition(code={"language": "javascript", "source": source}))

@pytest.mark.parametrize("name", SLOW)
def test_two_runaway_scripts_ahead_leave_a_simulation_inside_its_bound(api, runner, name):
    """Each runaway task ends at the run limit plus a margin, not three times later."""
    app_id = _script_app(api, "return {title: input.title + '!'};")
    ahead = [queue(SCRIPTS).enqueue("jobs.tasks.run_script", args=(SLOW[name], "{}")) for _ in range(2)]
    response = api.simulate(app_id, data={"title": "next"})
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["data"]["data"]["title"] == "next!"
    assert [job.latest_result().return_value["code"] for job in ahead] == ["code_timeout"] * 2
