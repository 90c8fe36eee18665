"""How an audit record's stored detail becomes before → after (pure)."""

from __future__ import annotations

import datetime as dt

from bot.audit.trail import AuditEntry, change_line, compact, split_detail


def entry(action: str, detail: dict[str, object]) -> AuditEntry:
    before, after = split_detail(action, detail)
    when = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    return AuditEntry(1, when, "U0AAA111", action, "model:recsys", before, after, detail)


def test_each_writers_detail_shape() -> None:
    # budget.set: before/after dicts, money read as money; only what changed is shown
    budget = {
        "before": {"monthly": "12000.0000000000", "thresholds": [50, 80, 100]},
        "after": {"monthly": "15000", "thresholds": [50, 80, 100]},
    }
    assert change_line(entry("budget.set", budget)) == "monthly=$12,000 → monthly=$15,000"
    created = {"before": None, "after": {"monthly": "5000.50", "thresholds": [80]}}
    assert change_line(entry("budget.set", created)) == "— → monthly=$5,000.50, thresholds=[80]"
    # a registry import's budget in its own currency, exact to the cent
    euros = {
        "import": 7,
        "before": {"amount": "2500.5", "period": "weekly", "currency": "EUR"},
        "after": {"amount": "2600", "period": "weekly", "currency": "EUR"},
    }
    assert change_line(entry("registry.budget.update", euros)) == (
        "amount=€2,500.50 → amount=€2,600"
    )
    # model.owners.set: one {before, after} per field
    owners = {
        "owners": {"before": ["U1"], "after": ["U1", "U2"]},
        "channel": {"before": None, "after": "C0X"},
    }
    assert change_line(entry("model.owners.set", owners)) == (
        "owners=[U1], channel=— → owners=[U1, U2], channel=C0X"
    )
    # review.decide: the new value stored flat, with its reason
    decided = {"decision": "kill", "before": "keep", "reason": "no users"}
    assert change_line(entry("review.decide", decided)) == "keep → kill (reason: no users)"
    # silences, imports, sign-offs: no before, the detail is what happened
    assert change_line(entry("budget.snooze", {"period": "2026-11"})) == "— → period=2026-11"
    assert change_line(entry("signoff", {})) == "— → —"


def test_long_values_are_summarised_on_one_line() -> None:
    text = compact({"models": [f"model-{n}" for n in range(100)]}, limit=40)
    assert len(text) == 40 and text.endswith("…") and "\n" not in text
    assert compact("two\nlines") == "two lines"
    assert compact("red \x1b[31mtext\x07") == "red ?[31mtext?"  # no terminal escapes


def test_the_level_an_expected_anomaly_accepts_is_money_on_each_surface() -> None:
    from bot.money import format_money
    from bot.slack.blocks.audit import entry_line

    # issue 23: the terminal showed `up_to=1954.5437060000`, the stored decimal string
    answered = {
        "anomaly": "anomaly:spend:model:recsys:2026-11-19",
        "currency": "USD",
        "before": None,
        "after": {
            "answer": "expected",
            "driver": "run=recsys-v42-retry",
            "up_to": "1954.5437060000",
            "month": "2026-11",
        },
    }
    expected = entry("anomaly.expected", answered)
    assert change_line(expected) == (
        "— → answer=expected, driver=run=recsys-v42-retry, up_to=$1,954.54, month=2026-11"
    )
    assert "up_to=$1,955," in change_line(expected, money=format_money)  # Slack's format
    assert "up_to=$1,955," in entry_line(expected)
    assert expected.as_json()["after"]["up_to"] == "1954.5437060000"  # JSON keeps it exact
    euros = entry("anomaly.expected", {**answered, "currency": "EUR"})
    assert "up_to=€1,954.54," in change_line(euros)
    gpu = {
        **answered,
        "after": {"answer": "expected", "driver": "gpu_hours=recsys", "up_to": "412.25"},
    }
    assert change_line(entry("anomaly.expected", gpu)).endswith("up_to=412.2 GPU-hours")
