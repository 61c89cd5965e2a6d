"""The workbench's tools: forms and tools a higher layer adds to the customer's side panel, and
the styles that come with them. The app factory hands the provider over at wiring time (the desk
never imports the layer that fills it); without one the workbench has no tools and one style.

A style's settings reach the page only as class names from the fixed tables below: a setting
the tables do not name is dropped, so no provider value can become a `style` attribute, a
stylesheet or a script, and no class can touch the controls outside the workbench's panes.
"""
from dataclasses import dataclass, field
from typing import Protocol

from flask import current_app
from markupsafe import Markup

from desk.models import Conversation, Member

PANELS = "desk.panels"  # app.extensions key of the PanelProvider
BEFORE, AFTER = "before_profile", "after_profile"
STYLE_CLASSES = {
    "theme": {"blue": "wb-theme-blue", "emerald": "wb-theme-emerald", "violet": "wb-theme-violet"},
    "density": {"comfortable": "wb-density-comfortable", "compact": "wb-density-compact"},
    "list_width": {260: "wb-list-260", 320: "wb-list-320", 380: "wb-list-380"},
    "details_width": {280: "wb-details-280", 360: "wb-details-360", 440: "wb-details-440"},
}


@dataclass(frozen=True)
class Style:
    """A style an agent may choose: an opaque key, its title and its settings."""

    key: str
    title: str
    settings: dict = field(default_factory=dict)

    def classes(self) -> str:
        """The fixed class names of the settings the tables know (others are dropped)."""
        names = (STYLE_CLASSES[name].get(self.settings.get(name)) for name in STYLE_CLASSES)
        return " ".join(name for name in names if name)


@dataclass(frozen=True)
class Tool:
    """One tool of the side panel, rendered by its provider, shown before or after the profile."""

    html: Markup
    position: str = AFTER


class PanelProvider(Protocol):
    """What fills the tools area: the styles a member may choose and the tools for a conversation."""

    def styles(self, member: Member) -> list[Style]: ...

    def tools(self, member: Member, conversation: Conversation) -> list[Tool]: ...


class _NoTools:
    """The workbench without a provider."""

    def styles(self, member: Member) -> list[Style]:
        return []

    def tools(self, member: Member, conversation: Conversation) -> list[Tool]:
        return []


def provider() -> PanelProvider:
    """The provider handed over at wiring time, or none."""
    return current_app.extensions.get(PANELS) or _NoTools()


def chosen_style(styles: list[Style], key: str | None) -> Style | None:
    """The chosen style, while it is still on offer (else the defaults)."""
    return next((style for style in styles if style.key == key), None)
