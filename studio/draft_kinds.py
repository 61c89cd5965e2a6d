"""The kinds of AI draft other packages offer the generator besides applications, registered at
wiring time (the app factory fills `app.extensions[DRAFT_KINDS]`; studio imports none of them).

A registered kind's draft is checked by its own validator, answered and kept on the generation
row, never saved or executed here.
"""
from collections.abc import Callable
from dataclasses import dataclass, field

from flask import current_app

DRAFT_KINDS = "studio.draft_kinds"  # app.extensions key: kind name -> DraftKind


@dataclass(frozen=True)
class DraftKind:
    """What the generator needs to ask for, check and show one kind of draft."""

    name: str  # the answer's `kind`
    validate: Callable[[object], dict]  # the kind's one validator: the normalized definition, or ApiError
    capabilities: Callable[[dict], list[str]]  # the catalog capabilities a valid definition uses
    allowed: frozenset[str]  # the capabilities a draft of this kind may use
    schema: Callable[[], dict]  # the JSON schema of its definition, for the model
    instructions: str  # the system prompt's paragraph on when and how to answer this kind
    example: dict = field(compare=False)  # shown by the console (GET /api/extensions: `<name>_example`)


def registered() -> tuple[DraftKind, ...]:
    """The current app's draft kinds, in registration order."""
    return tuple(current_app.extensions.get(DRAFT_KINDS, {}).values())


def find(name: object) -> DraftKind | None:
    """The registered kind of that name, if any."""
    return current_app.extensions.get(DRAFT_KINDS, {}).get(name)
