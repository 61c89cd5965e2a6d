"""Thin job entry points: take ids, call the owning package. Import paths are a wire format."""
from desk import events


def dispatch_event(event: str, **ids: str) -> int:
    """Deliver a desk event to its subscribers inside a worker."""
    return events.dispatch(event, **ids)


def run_script(source: str, input_json: str) -> dict:
    """Evaluate an administrator's script in the runner's sandbox (queue `scripts` only)."""
    from studio.runner import sandbox

    return sandbox().execute(source, input_json)
