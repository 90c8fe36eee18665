"""Every message type comes back from the outbox's JSON (bot/notify/codec.py) equal."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any, get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.budgets.drivers import Driver, Drivers
from bot.budgets.messages import AlertContext
from bot.economics.gate import GateCheck, GateResult
from bot.economics.messages import GateResultMessage
from bot.money import CostBasis
from bot.notify.codec import CodecError, decode, encode
from bot.slack.render import Message, render
from bot.spend.freshness import LedgerFreshness
from bot.waste.messages import (
    ResourceDecisionState,
    WasteDigestMessage,
    WasteResourceMessage,
    WasteResourceReplyMessage,
    WasteResourceSummaryLine,
    WasteResourceSummaryMessage,
)
from tests.unit.test_markup_safety import (
    AS_OF,
    VALID_USERS,
    WHEN,
    hostile,
    money,
    resource_details,
    resource_entries,
    waste_finding,
)
from tests.unit.test_render import cases

COVERED: set[type] = set()


def through_json(message: Any) -> Any:
    """Return the message as the outbox stores it and delivery reads it back."""
    stored = json.loads(json.dumps(encode(message)))
    return decode(type(message), stored)


def assert_round_trip(message: Any) -> None:
    back = through_json(message)
    assert back == message
    assert render(back) == render(message)
    COVERED.add(type(message))


def more_cases(draw: Any) -> list[Any]:
    """Return the message types tests/unit/test_render.py does not build."""
    state = ResourceDecisionState(
        draw(st.integers(1, 10**6)),
        draw(st.sampled_from(["none", "keep", "not_waste", "stop"])),
        draw(st.one_of(st.none(), st.sampled_from(VALID_USERS), hostile(40))),
        WHEN,
        draw(st.one_of(st.none(), st.just(WHEN))),
        draw(st.one_of(st.none(), money)),
        draw(st.one_of(st.none(), hostile(300))),
    )
    line = st.builds(WasteResourceSummaryLine, hostile(20), hostile(100), money, hostile(40))
    checks = draw(st.lists(st.builds(GateCheck, hostile(), st.booleans(), hostile(300))))
    freshness = draw(st.one_of(st.none(), st.just(LedgerFreshness(AS_OF, None, 3))))
    return [
        WasteResourceMessage(
            resource_details(draw),
            list(VALID_USERS),
            state,
            draw(st.sampled_from(["USD", "EUR", "JPY"])),
            draw(st.integers(1, 9)),
            draw(st.one_of(st.none(), money)),
            draw(st.one_of(st.none(), hostile(300))),
        ),
        WasteResourceReplyMessage(
            draw(hostile(100)),
            draw(st.sampled_from(["closed", "action"])),
            draw(hostile(400)),
            draw(st.one_of(st.none(), st.sampled_from(VALID_USERS))),
        ),
        WasteResourceSummaryMessage(
            draw(st.integers(0, 300)), draw(money), draw(st.lists(line, max_size=4)), 5, "EUR"
        ),
        WasteDigestMessage(
            [waste_finding(draw)],
            "the week of Nov 9–15",
            list(VALID_USERS),
            "EUR",
            resource_entries(draw),
            draw(st.one_of(st.none(), money)),
            draw(st.integers(0, 5)),
            draw(st.one_of(st.none(), hostile(100))),
        ),
        GateResultMessage(GateResult(draw(hostile(40)), AS_OF, checks, freshness)),
    ]


@settings(max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_message_comes_back_equal_and_renders_the_same(data: st.DataObject) -> None:
    for message, _ in cases(data.draw):
        assert_round_trip(message)
    for message in more_cases(data.draw):
        assert_round_trip(message)


def test_the_examples_cover_every_message_type() -> None:
    test_every_message_comes_back_equal_and_renders_the_same()
    assert set(get_args(Message)) <= COVERED


def test_amounts_are_strings_and_days_iso() -> None:
    context = AlertContext(
        "C1",
        frozenset({"U2", "U1"}),
        Drivers(stages=[Driver("training", Decimal("1.50"))]),
        "EUR",
        CostBasis.EFFECTIVE,
    )
    stored = encode(context)
    assert stored["drivers"]["stages"] == [{"label": "training", "cost": "1.50"}]
    assert stored["owners"] == ["U1", "U2"]
    assert json.loads(json.dumps(stored)) == stored
    assert through_json(context) == context
    assert encode(dt.date(2026, 11, 16), dt.date) == "2026-11-16"
    assert decode(Decimal, "1.10").as_tuple() == Decimal("1.10").as_tuple()


def test_what_is_not_json_under_any_is_refused() -> None:
    with pytest.raises(CodecError):
        encode({"cost": Decimal("1")}, dict[str, Any])
