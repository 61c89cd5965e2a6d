"""Placeholders in quick replies (issue 37): `{{customer.name}}`, `{{customer.first_name}}`,
`{{agent.name}}` and `{{conversation.id}}`, each with an optional fallback written after a bar,
`{{customer.name | "您好"}}`. The composer fills them with the open conversation's values when an
agent picks the reply (static/js/app.js, `fillPlaceholders`, the same grammar); nothing is filled or
sent on the server. Anything between `{{` and `}}` that is not one of these is refused when the
reply is saved, so a typo never reaches a customer as braces. Studio applications keep document 1's
rule: no variable substitution there."""
import re
from dataclasses import dataclass

NAMES = ("customer.name", "customer.first_name", "agent.name", "conversation.id")
BRACES = re.compile(r"\{\{(.*?)\}\}", re.S)
INSIDE = re.compile(r'\s*([a-z_]+(?:\.[a-z_]+)*)\s*(?:\|\s*"([^"{}]*)"\s*)?')


@dataclass(frozen=True)
class Placeholder:
    """One placeholder of a text: its name, its fallback (None: none given) and where it stands."""

    name: str
    fallback: str | None
    start: int
    end: int


class UnknownPlaceholder(ValueError):
    """Braces holding something other than a known name with an optional quoted fallback."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text


def placeholders(text: str) -> list[Placeholder]:
    """The text's placeholders in order; UnknownPlaceholder for the first `{{…}}` that is not one."""
    found = []
    for braces in BRACES.finditer(text):
        inside = INSIDE.fullmatch(braces.group(1))
        if inside is None or inside.group(1) not in NAMES:
            raise UnknownPlaceholder(braces.group(0))
        found.append(Placeholder(inside.group(1), inside.group(2), braces.start(), braces.end()))
    return found


def first_name(name: str) -> str:
    """The part of a name before its first space, or the whole name when it has none (as with most
    Chinese names)."""
    return name.strip().split(" ", 1)[0]
