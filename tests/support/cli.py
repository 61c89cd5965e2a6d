"""The operator CLI as the tests invoke it."""
import json


def run(app, *args: str) -> dict:
    """Invoke `flask ...` and parse its JSON output."""
    result = app.test_cli_runner().invoke(args=list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.output)
