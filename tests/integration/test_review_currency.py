"""Review, sign-off, `review show` and gate show each model's money in its own billing currency."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from bot.cli import main
from bot.config import Settings
from bot.db.engine import make_engine, make_session_factory, session_scope
from bot.db.schema import Budget, DailySpend, OutboxMessage, Review
from bot.economics.gate import evaluate_gate
from bot.periods import month_period
from bot.review.open import open_reviews
from bot.review.signoff import enqueue_digests
from bot.review.threads import item_message, parent_message
from bot.slack.charts.review import render_review_chart, review_figure
from bot.slack.render import Message, render
from tests.support.cli import import_registry_file
from tests.support.economics_seed import REGISTRY, seed_review_month
from tests.support.outbox import rendered
from tests.support.sample_registry import load_registry

NOW = dt.datetime(2026, 12, 1, 9, tzinfo=dt.UTC)


def seed_two_currencies(session: Session) -> None:
    """The ranking team: recsys billed in USD ($1,500 in November), search in EUR (€450)."""
    load_registry(session, REGISTRY)
    seed_review_month(session)
    session.execute(update(DailySpend).where(DailySpend.model == "search").values(currency="EUR"))
    session.flush()


def ranking_review_in_two_currencies(session: Session) -> Review:
    """Seed the two-currency months and open November's review; return ranking's."""
    seed_two_currencies(session)
    (review,) = [
        r
        for r in open_reviews(
            session=session, month=month_period("2026-11"), settings=Settings(), now=NOW
        )
        if r.team_name == "ranking"
    ]
    return review


def shown(message: Message) -> str:
    text, blocks = render(message)
    return text + json.dumps(blocks, ensure_ascii=False)


def test_a_euro_models_review_item_is_in_euros_and_the_parent_never_adds_them(
    session: Session,
) -> None:
    review = ranking_review_in_two_currencies(session)
    items = {item.model_name: item for item in review.items}
    search = shown(item_message(items["search"], "USD"))
    assert "€450" in search and "€300" in search  # November against October
    assert "$" not in search
    assert items["search"].snapshot["currency"] == "EUR"
    recsys = shown(item_message(items["recsys"], "USD"))
    assert "$1,500" in recsys and "€" not in recsys
    parent = shown(parent_message(review, "USD"))
    assert "1,950" not in parent and "1,300" not in parent  # 1500 + 450, 1000 + 300
    assert "$1,500" in parent and "€450" in parent


def test_an_old_snapshot_without_a_currency_falls_back_to_the_setting(session: Session) -> None:
    review = ranking_review_in_two_currencies(session)
    item = next(i for i in review.items if i.model_name == "recsys")
    item.snapshot = {k: v for k, v in item.snapshot.items() if k != "currency"}
    assert "£1,500" in shown(item_message(item, "GBP"))


def test_the_signoff_digest_shows_a_euro_model_in_euros(session: Session) -> None:
    seed_two_currencies(session)
    assert enqueue_digests(
        session=session, week_start=dt.date(2026, 11, 16), currency="USD", now=NOW
    )
    messages = session.scalars(
        select(OutboxMessage).where(OutboxMessage.channel == "U0AAA113")  # owns search only
    ).all()
    assert messages
    body = "".join(json.dumps(rendered(m), ensure_ascii=False) for m in messages)
    assert "€" in body and "$" not in body


def test_review_show_prints_each_model_in_its_currency(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = import_registry_file(database_url, tmp_path, REGISTRY)
    engine = make_engine(database_url)
    with session_scope(make_session_factory(engine)) as session:
        seed_two_currencies(session)
    engine.dispose()
    capsys.readouterr()
    assert main([*db, "review", "show", "--month", "2026-11"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line}
    assert "€450" in rows["search"] and "$" not in rows["search"]
    assert "$1,500" in rows["recsys"] and "€" not in rows["recsys"]


def test_the_gate_shows_a_euro_models_budget_in_euros(session: Session) -> None:
    seed_two_currencies(session)
    session.execute(
        update(Budget)
        .where(Budget.model_name == "search")
        .values(currency="EUR", monthly_amount=Decimal(100))
    )
    result = evaluate_gate(
        session=session, model_name="search", as_of=dt.date(2026, 11, 30), settings=Settings()
    )
    text = result.as_text()
    assert "€450.00 of €100.00" in text and "$" not in text


def test_the_review_chart_draws_each_currency_on_its_own_axis(session: Session) -> None:
    review = ranking_review_in_two_currencies(session)
    snaps = [i.snapshot for i in review.items]
    figure = review_figure("2026-11", "ranking", snaps, "USD")
    panels = {
        axes.get_xlabel(): [label.get_text() for label in axes.get_yticklabels()]
        for axes in figure.axes
    }
    assert panels == {"Cost this month (EUR)": ["search"], "Cost this month (USD)": ["recsys"]}
    assert render_review_chart("2026-11", "ranking", snaps, "USD").startswith(b"\x89PNG")
