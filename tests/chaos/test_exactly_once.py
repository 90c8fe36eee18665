"""Exactly once under chaos: real `mlcost serve` processes, a faulty Slack, a killed leader.

The serve processes run the real Bolt app and the real scheduler (leader election, outbox
delivery, review jobs) against PostgreSQL (two replicas) or SQLite (one process, killed and
restarted). Slack is the fake Web API behind a proxy that answers 429, 500 and timeouts at
random (a timed-out post is in the channel). The test feeds the outbox as the poll would,
kills the leader while a post is in flight, sends concurrent review decisions to both replicas,
and then checks the Slack transcript: every message exactly once, none lost, the dead channel's
messages (and their thread replies) failed with the reason, every decision shown and audited once.

Reproduce a failure with the seed it prints: `CHAOS_SEED=<seed> .venv/bin/pytest tests/chaos`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from bot.config import Settings
from bot.db.engine import make_engine, make_session_factory, session_scope, upgrade
from bot.db.schema import AuditLog, OutboxMessage, Review, ReviewItem
from bot.notify.outbox import PlannedPost, PreRendered, enqueue_many
from bot.periods import month_period
from bot.review.open import open_reviews
from bot.review.threads import item_key, parent_key
from tests.chaos.chaos_slack import ChaosSlack, FaultPlan, PostedMessage
from tests.chaos.replicas import ServeProcess, wait_until
from tests.conftest import PG_ENV
from tests.support.economics_seed import add_spend, month_days, seed_review_month
from tests.support.fake_slack import FakeSlack
from tests.support.sample_registry import load_registry
from tests.support.slack_requests import (
    FORM,
    button_click,
    interactive,
    signed_headers,
    view_submission,
)

pytestmark = [pytest.mark.chaos, pytest.mark.xdist_group("serve")]

SECRET = "chaos-signing-secret"
DEAD = "C0DEAD"  # deleted: every post there answers channel_not_found
MONTH = "2026-11"
CLIENT_TIMEOUT = 1.0
BATCHES = 12
REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
  - {name: risk, channel: C0RISK, owners: [U0RRR111]}
  - {name: ghosts, channel: C0DEAD, owners: [U0GGG111]}
models:
  - {name: recsys, team: ranking, owners: [U0AAA111, U0AAA112]}
  - {name: search, team: ranking, owners: [U0AAA113]}
  - {name: churn, team: risk, owners: [U0RRR111]}
  - {name: phantom, team: ghosts, owners: [U0GGG111]}
admins: [U0ADMIN01]
"""
# (model, user, decision) pairs sent at the same moment, one to each replica
DECISION_ROUNDS = [
    [("recsys", "U0AAA111", "kill"), ("search", "U0AAA113", "keep")],  # two items, one review
    [("churn", "U0RRR111", "keep"), ("churn", "U0ADMIN01", "discuss")],  # one item, twice
]


# --- the world -----------------------------------------------------------------------------


def seed_world(session: Session) -> None:
    """The registry, October and November spend, and November's reviews in the outbox."""
    load_registry(session, REGISTRY)
    seed_review_month(session)
    for day in month_days(2026, 11):
        add_spend(session, "phantom", "ghosts", "training", day, Decimal(5))
    opened = open_reviews(
        session=session,
        month=month_period(MONTH),
        settings=Settings(),
        now=dt.datetime(2026, 12, 1, 9, tzinfo=dt.UTC),
    )
    assert {r.team_name for r in opened} == {"ranking", "risk", "ghosts"}


def batch(number: int) -> list[PlannedPost]:
    """What one poll might queue: alerts to channels and a DM, and a thread of three."""
    channels = ["C0RANKING", "C0RISK", "U0AAA111", DEAD]
    posts = []
    for i in range(6):
        channel = channels[(number + i) % len(channels)]
        key = f"chaos:{number}:{i}"
        posts.append(
            PlannedPost(key, "chaos.alert", channel, PreRendered(f"alert {key}", section(key)))
        )
    thread_channel = DEAD if number % 4 == 3 else ["C0RANKING", "C0RISK"][number % 2]
    parent = f"chaos:{number}:thread"
    posts.append(
        PlannedPost(parent, "chaos.thread", thread_channel, PreRendered(parent, section(parent)))
    )
    for r in range(2):
        key = f"{parent}:reply:{r}"
        posts.append(
            PlannedPost(key, "chaos.reply", thread_channel, PreRendered(key, section(key)), parent)
        )
    return posts


def section(text: str) -> list[dict[str, Any]]:
    return [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]


# --- signed requests to the replicas ---------------------------------------------------------


def signed_post(url: str, payload: dict[str, Any]) -> tuple[int, str]:
    """POST an interactivity payload to a replica's /slack/events, signed as Slack signs."""
    body = interactive(payload)
    request = urllib.request.Request(
        url + "slack/events",
        data=body.encode(),
        method="POST",
        headers=signed_headers(body, content_type=FORM, secret=SECRET),
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def click(item: ReviewTarget, user: str, decision: str, fake_url: str) -> dict[str, Any]:
    """The block_actions payload of a decision button in the item's thread message."""
    return button_click(
        user=user,
        action_id=f"review_decide_{decision}",
        value=str(item.id),
        channel=item.channel,
        message_ts=item.ts,
        message_text=item.model,
        response_url=f"{fake_url}respond/{user}-{item.id}-{time.time_ns()}",
    )


def submission(view: dict[str, Any], user: str, reason: str) -> dict[str, Any]:
    """The view_submission payload of the decision modal the click opened."""
    return view_submission(view, user=user, block="reason", value=reason)


def all_at_once(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run the calls in threads released together; return their results in order."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)
    errors: list[BaseException] = []

    def run(index: int, call: Callable[[], Any]) -> None:
        barrier.wait()
        try:
            results[index] = call()
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    if errors:
        raise errors[0]
    return results


@dataclass(frozen=True)
class ReviewTarget:
    id: int
    model: str
    channel: str
    ts: str


# --- the scenario ----------------------------------------------------------------------------


@dataclass
class Chaos:
    """Everything one run holds: the database, Slack, the serve processes."""

    workdir: Path
    database_url: str
    fake: FakeSlack
    proxy: ChaosSlack
    factory: sessionmaker[Session]
    settings: dict[str, str]
    processes: list[ServeProcess] = field(default_factory=list)
    started: int = 0
    submitted: list[tuple[str, str, str]] = field(default_factory=list)

    def start_replica(self) -> ServeProcess:
        self.started += 1
        process = ServeProcess.start(f"serve-{self.started}", self.workdir, self.settings)
        self.processes.append(process)
        return process

    def live(self) -> list[ServeProcess]:
        return [p for p in self.processes if p.alive()]

    def leader(self) -> ServeProcess | None:
        leaders = [p for p in self.live() if p.is_leader()]
        return leaders[0] if len(leaders) == 1 else None

    def wait_for_leader(self, what: str, timeout: float = 30.0) -> ServeProcess:
        wait_until(self.leader, timeout, what)
        leader = self.leader()
        assert leader is not None
        return leader

    def enqueue(self, posts: list[PlannedPost]) -> None:
        with session_scope(self.factory) as session:
            assert enqueue_many(session, posts) == {p.dedupe_key for p in posts}

    def kill_leader_mid_post(self, batch_number: int) -> ServeProcess:
        """Queue a batch, hold the leader's first post of it in flight, SIGKILL the leader."""
        leader = self.wait_for_leader("a leader before the kill")
        self.proxy.force("chat.postMessage", "timeout")
        self.enqueue(batch(batch_number))
        wait_until(self.proxy.forced_started.is_set, 20, "the leader to post (to kill it mid-post)")
        leader.kill()
        return leader

    def review_targets(self) -> dict[str, ReviewTarget]:
        """The review items whose thread messages are in Slack (by model)."""
        found: dict[str, ReviewTarget] = {}
        with session_scope(self.factory) as session:
            for review in session.scalars(select(Review)):
                for item in review.items:
                    row = outbox_row(
                        session, item_key(review.month, review.team_name, item.model_name)
                    )
                    if row.slack_ts and row.slack_channel:
                        found[item.model_name] = ReviewTarget(
                            item.id, item.model_name, row.slack_channel, row.slack_ts
                        )
        return found

    def decide_concurrently(self, round_: list[tuple[str, str, str]]) -> None:
        """Click the buttons at once on different replicas, then submit the modals at once."""
        targets: dict[str, ReviewTarget] = {}

        def posted() -> bool:
            targets.update(self.review_targets())
            return all(model in targets for model, _, _ in round_)

        wait_until(posted, 120, f"the review messages of {[m for m, _, _ in round_]} in Slack")
        replicas = self.live()
        urls = [replicas[i % len(replicas)].url for i in range(len(round_))]
        opened = len(self.fake.calls_to("views.open"))
        clicks = all_at_once(
            [
                lambda m=m, u=u, d=d, url=url: signed_post(
                    url, click(targets[m], u, d, self.fake.url)
                )
                for (m, u, d), url in zip(round_, urls, strict=True)
            ]
        )
        assert [status for status, _ in clicks] == [200] * len(round_), clicks
        views = [c.params["view"] for c in self.fake.wait_for("views.open", opened + len(round_))]
        chosen = []
        for model, _user, decision in round_:
            wanted = {"item": targets[model].id, "decision": decision}
            chosen.append(
                next(
                    v
                    for v in views[opened:]
                    if json.loads(v["private_metadata"]).items() >= wanted.items()
                )
            )
        answers = all_at_once(
            [
                lambda v=v, u=u, d=d, url=url: signed_post(url, submission(v, u, f"{u} says {d}"))
                for v, (_, u, d), url in zip(chosen, round_, urls, strict=True)
            ]
        )
        # each submission is accepted (the modal closes): no 500, no validation error
        assert answers == [(200, "")] * len(round_), answers
        self.submitted += round_

    def unsettled(self) -> list[str]:
        """Outbox rows still waiting and review items whose messages are not refreshed yet."""
        with session_scope(self.factory) as session:
            rows = [
                f"{r.dedupe_key}: {r.status} (attempt {r.attempts}, {r.last_error})"
                for r in session.scalars(
                    select(OutboxMessage).where(OutboxMessage.status.in_(("pending", "sending")))
                )
            ]
            rows += [
                f"review item {i.model_name}: thread not refreshed"
                for i in session.scalars(
                    select(ReviewItem).where(ReviewItem.refresh_pending.is_(True))
                )
            ]
        return rows


def run_scenario(chaos: Chaos, replicas: int) -> None:
    """Feed the outbox through the chaos, kill leaders, decide concurrently; wait until settled."""
    first = chaos.start_replica()
    chaos.wait_for_leader("the first replica to lead")
    if replicas > 1:
        chaos.start_replica()
    for process in chaos.live():
        process.wait_ready()
    feeding = time.monotonic()
    chaos.proxy.plan.hard_until = feeding + 6  # then only 429s: retries settle within a minute
    chaos.proxy.force("chat.postMessage", "500")
    chaos.proxy.force("chat.postMessage", "429")
    chaos.proxy.force("chat.update", "timeout")
    kills = {4, 8}  # after a third and two thirds of the work
    for number in range(BATCHES):
        if number in kills:
            killed = chaos.kill_leader_mid_post(number)
            if replicas > 1:
                # the standby takes the lead once PostgreSQL frees the dead session's lock
                successor = chaos.wait_for_leader("the standby to take the lead", 30)
                assert successor is not killed
                chaos.start_replica().wait_ready()  # the killed one comes back, and stands by
            else:
                chaos.start_replica().wait_ready()
                chaos.wait_for_leader("the restarted process to lead", 30)
        else:
            chaos.enqueue(batch(number))
        if number == 5:
            chaos.decide_concurrently(DECISION_ROUNDS[0])
            chaos.decide_concurrently(DECISION_ROUNDS[1])
        time.sleep(0.5)  # pacing the feed, not an assertion: the deliver job runs every 0.2 s
    del first
    # retries after a 500 or a timeout wait the outbox's backoff (4 s on the first retry, here)
    deadline = time.monotonic() + 120
    while chaos.unsettled() and time.monotonic() < deadline:
        time.sleep(0.2)
    wait_until(lambda: chaos.leader(), 15, "one leader among the live replicas")


def check_transcript(chaos: Chaos) -> list[str]:
    """Every outbox message is in Slack exactly once, or failed for good with the reason."""
    problems = []
    unsettled = chaos.unsettled()
    if unsettled:
        problems.append(f"{len(unsettled)} never settled (lost): {unsettled[:12]}")
    with session_scope(chaos.factory) as session:
        rows = {r.dedupe_key: r for r in session.scalars(select(OutboxMessage))}
        session.expunge_all()
    posted: dict[str | None, list[PostedMessage]] = {}
    for message in chaos.proxy.posted:
        posted.setdefault(message.key, []).append(message)
    doubles = {k: len(v) for k, v in posted.items() if len(v) > 1}
    if doubles:
        problems.append(f"posted more than once: {doubles}")
    if set(posted) - set(rows):
        problems.append(f"posts the outbox never held: {set(posted) - set(rows)}")

    def dead(row: OutboxMessage) -> bool:
        parent = rows.get(row.thread_key) if row.thread_key else None
        return row.channel == DEAD or (parent is not None and dead(parent))

    for row in (r for r in rows.values() if r.kind != "review.chart"):
        key, sent = row.dedupe_key, posted.get(row.dedupe_key, [])
        if dead(row):
            if row.status != "failed" or "channel_not_found" not in (row.last_error or ""):
                problems.append(f"{key} (dead channel): {row.status}, {row.last_error}")
            if sent:
                problems.append(f"{key} (dead channel) posted: {sent}")
        elif row.status != "delivered":
            problems.append(f"{key} not delivered: {row.status}, {row.last_error}")
        elif not sent:
            problems.append(f"{key} marked delivered but never in Slack")
        elif (row.slack_channel, row.slack_ts) not in {(m.channel, m.ts) for m in sent}:
            problems.append(f"{key} recorded at {row.slack_ts}, posted as {sent}")
        elif row.thread_key and sent[0].thread_ts != rows[row.thread_key].slack_ts:
            problems.append(f"{key} posted outside its thread: {sent}")
    # the chaos did happen: each fault reached the outbox's posts at least once
    injected = chaos.proxy.injected
    if not all(injected[("chat.postMessage", f)] for f in ("429", "500", "timeout")):
        problems.append(f"not every fault was injected on chat.postMessage: {injected}")
    if not any(m.answer_lost for m in chaos.proxy.posted):
        problems.append("no post whose answer was lost")
    # a review chart is uploaded at most once per review
    uploads = Counter(
        c.params.get("channel_id") for c in chaos.fake.calls_to("files.completeUploadExternal")
    )
    if any(n > 1 for n in uploads.values()):
        problems.append(f"a review chart uploaded more than once: {uploads}")
    return problems


def check_decisions(chaos: Chaos) -> list[str]:
    """Each decision is audited once, in order; each review's messages show all of them."""
    problems = []
    label = {"keep": "Keep", "kill": "Kill", "discuss": "Needs discussion"}
    with session_scope(chaos.factory) as session:
        audits = list(
            session.scalars(
                select(AuditLog).where(AuditLog.action == "review.decide").order_by(AuditLog.id)
            )
        )
        if len(audits) != len(chaos.submitted):
            problems.append(
                f"{len(chaos.submitted)} decisions, {len(audits)} audited: "
                f"{[(a.target, a.detail) for a in audits]}"
            )
        by_target: dict[str, list[AuditLog]] = {}
        for audit in audits:
            by_target.setdefault(audit.target, []).append(audit)
        for review in session.scalars(select(Review).where(Review.team_name != "ghosts")):
            for item in review.items:
                key = item_key(review.month, review.team_name, item.model_name)
                trail = by_target.get(key, [])
                befores = [a.detail["before"] for a in trail]
                decisions = [a.detail["decision"] for a in trail]
                # each audit's "before" is the decision the previous one recorded
                if not trail or befores != [None, *decisions[:-1]]:
                    problems.append(f"{item.model_name} audit: before {befores}, after {decisions}")
                elif item.decision != decisions[-1]:
                    problems.append(f"{item.model_name} is {item.decision}, audit {decisions}")
                shown = last_text(chaos.fake, review.channel, outbox_row(session, key).slack_ts)
                expected = (
                    f"*{label.get(item.decision or '', '?')}* — decided by <@{item.decided_by}>"
                )
                if expected not in shown:
                    updates = update_texts(
                        chaos.fake, review.channel, outbox_row(session, key).slack_ts
                    )
                    problems.append(
                        f"{item.model_name} message does not show {expected!r}; "
                        f"its updates: {updates}"
                    )
            if review.status != "decided":
                problems.append(f"{review.team_name} review still {review.status}")
            parent_ts = outbox_row(session, parent_key(review.month, review.team_name)).slack_ts
            if "All decided" not in last_text(chaos.fake, review.channel, parent_ts):
                updates = update_texts(chaos.fake, review.channel, parent_ts)
                problems.append(f"{review.team_name} parent not 'All decided'; updates: {updates}")
    return problems


def outbox_row(session: Session, key: str) -> OutboxMessage:
    return session.scalars(select(OutboxMessage).where(OutboxMessage.dedupe_key == key)).one()


def update_texts(fake: FakeSlack, channel: str, ts: str | None) -> list[str]:
    """The text of every chat.update of a message that reached Slack, in order."""
    return [
        str(c.params.get("text"))
        for c in fake.calls_to("chat.update")
        if c.params.get("channel") == channel and c.params.get("ts") == ts
    ]


def last_text(fake: FakeSlack, channel: str, ts: str | None) -> str:
    """What Slack shows for a message: its last update that reached Slack (or the post)."""
    if not ts:
        return "(never posted)"
    updates = [
        c
        for c in fake.calls_to("chat.update")
        if c.params.get("channel") == channel and c.params.get("ts") == ts
    ]
    if updates:
        params = updates[-1].params
        return json.dumps([params.get("text"), params.get("blocks")], ensure_ascii=False)
    return ""


# --- the tests ---------------------------------------------------------------------------------


@pytest.fixture
def seed() -> int:
    return int(os.environ.get("CHAOS_SEED") or random.randrange(2**32))


@pytest.fixture
def chaos(database_url: str, tmp_path: Path, seed: int) -> Iterator[Chaos]:
    engine = make_engine(database_url)
    upgrade(engine)
    factory = make_session_factory(engine)
    with session_scope(factory) as session:
        seed_world(session)
    fake = FakeSlack().start()
    proxy = ChaosSlack(fake.url, FaultPlan(seed), CLIENT_TIMEOUT, frozenset({DEAD})).start()
    settings = {
        "MLCOST_DATABASE_URL": database_url,
        "SLACK_BOT_TOKEN": "xoxb-chaos",
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": proxy.url,
        "MLCOST_SLACK_TIMEOUT_SECONDS": str(CLIENT_TIMEOUT),
        "MLCOST_DELIVERY_INTERVAL_SECONDS": "0.2",
        # longer than the longest attempt (a lookup and a post, each up to a timeout + a 429)
        "MLCOST_OUTBOX_LEASE_SECONDS": "8",
        # the first retry after a 500 or a timeout waits 4 s rather than a minute: the same
        # retries and history lookups, in a quarter of the run's time
        "MLCOST_OUTBOX_BACKOFF_SECONDS": "2",
        "MLCOST_LEADER_CHECK_SECONDS": "0.3",
        "MLCOST_POLL_INTERVAL_HOURS": "0.002",
        "MLCOST_TIMEZONE": "UTC",
    }
    chaos = Chaos(tmp_path, database_url, fake, proxy, factory, settings)
    try:
        yield chaos
    finally:
        for process in chaos.processes:
            process.cleanup()
        proxy.stop()
        fake.stop()
        engine.dispose()


def run_and_check(chaos: Chaos, seed: int, replicas: int) -> None:
    try:
        run_scenario(chaos, replicas)
        codes = [p.terminate() for p in chaos.live()]
        problems = check_transcript(chaos) + check_decisions(chaos)
        if codes != [0] * len(codes):
            problems.append(f"serve exit codes on SIGTERM: {codes}")
        assert not problems, "\n".join(problems)
    except AssertionError as exc:
        logs = ", ".join(str(p.log_path) for p in chaos.processes)
        raise AssertionError(
            f"chaos seed {seed} (rerun: CHAOS_SEED={seed} pytest {__file__}); "
            f"injected {dict(chaos.proxy.injected)}; serve logs: {logs}\n{exc}"
        ) from exc


@pytest.mark.skipif(
    not os.environ.get(PG_ENV),
    reason=f"two serve replicas need PostgreSQL (advisory-lock leader election): set {PG_ENV}",
)
def test_two_replicas_on_postgresql_post_every_message_exactly_once(
    chaos: Chaos, seed: int
) -> None:
    run_and_check(chaos, seed, replicas=2)


@pytest.mark.skipif(
    bool(os.environ.get(PG_ENV)), reason="the SQLite variant: one process, killed and restarted"
)
def test_one_process_on_sqlite_killed_and_restarted_posts_every_message_exactly_once(
    chaos: Chaos, seed: int
) -> None:
    run_and_check(chaos, seed, replicas=1)
