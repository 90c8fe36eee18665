"""Every kind of resource finding and every fix has its words on the Slack post."""

from __future__ import annotations

from bot.waste import catalog
from bot.waste.scan.model import Action, ResourceKind


def test_every_resource_kind_is_named() -> None:
    assert sorted(set(ResourceKind) - set(catalog.resource_kinds())) == []


def test_every_fix_says_what_stop_it_does() -> None:
    assert sorted(set(Action) - set(catalog.stop_actions())) == []
