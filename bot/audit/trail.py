"""Read the audit log: filter by day, actor and subject; split each record into before and after.

Every write path stores one `AuditLog` row: budget changes, silences, owner changes, registry
imports, review openings and decisions, sign-offs, resource finding decisions and Stop it
actions, and answers to anomaly posts (`anomaly.expected`, `anomaly.not_expected`). Their
`target` is a budget scope (`model:recsys`, `team:ranking/stage:training`), a model
(`model:recsys`, also an anomaly's scope), an organisation-wide stage (`stage:training`, an
anomaly's), a review key (`review:2026-10:ranking[:model:recsys]`), a resource finding's key
(`account/region/kind/id`) or `registry`; their `detail` holds what changed.

A registry import leaves one `registry.import` record (its id is the import's id) and one
record per team, model, owner list, budget and the settings it changed
(`registry.budget.update` ...), each with `detail.import` naming that id.
Budget amounts are stored as decimal strings; they are shown as money in the budget's currency,
exactly, as they were set. The level an anomaly answered Expected accepts (`up_to`, computed) is
shown in the surface's money format (GPU-hours for a GPU-hour anomaly); JSON keeps it exact.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import ColumnElement, Row, and_, func, or_, select

from bot.db.reading import Reader
from bot.db.tables import audit_log, budgets, models, resource_findings, teams
from bot.errors import NotFoundError, UsageError
from bot.money import format_money_exact, format_money_places
from bot.registry.import_audit import IMPORT_ACTION

MAX_LIMIT = 10_000
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
MODEL, TEAM = "model", "team"
# The records whose before/after hold a budget's amount, and the keys that name it.
MONEY_ACTIONS = frozenset(
    {"budget.set", "registry.budget.create", "registry.budget.update", "registry.budget.remove"}
)
MONEY_KEYS = ("monthly", "amount")
# An anomaly answered Expected: `up_to` is the level accepted, money unless its driver is the
# model's GPU-hours (bot/anomalies/answers.py).
LEVEL_ACTIONS = frozenset({"anomaly.expected"})
LEVEL_KEY = "up_to"
GPU_DRIVER = "gpu_hours="

# how a surface shows an amount of money: the terminal to the cent, Slack as `format_money`
MoneyFormat = Callable[[Decimal, str], str]


def cents(value: Decimal, currency: str) -> str:
    """Render money to the cent, as the terminal's tables do: `$1,954.54`."""
    return format_money_places(value, currency, 2)


@dataclass(frozen=True)
class AuditEntry:
    """One change: when, who, what, on which subject, and the values before and after."""

    id: int
    at: dt.datetime
    actor: str
    action: str
    subject: str
    before: Any
    after: Any
    detail: dict[str, Any]
    currency: str = "USD"  # the budget's (else the organisation's), when the record names none

    @property
    def money_currency(self) -> str:
        """Return the currency of the record's amounts: the record's own, else `currency`."""
        for values in (self.after, self.before, self.detail):
            if isinstance(values, dict) and values.get("currency"):
                return str(values["currency"])
        return self.currency

    def as_json(self) -> dict[str, Any]:
        """Return the full record, JSON-ready (amounts as exact decimal strings, with currency)."""
        record = {
            "id": self.id,
            "at": self.at.astimezone(dt.UTC).isoformat(),
            "actor": self.actor,
            "action": self.action,
            "subject": self.subject,
            "before": self.before,
            "after": self.after,
            "detail": self.detail,
        }
        if self.action in MONEY_ACTIONS:
            record["currency"] = self.money_currency
        return record


@dataclass(frozen=True)
class AuditPage:
    """The newest matching entries (at most the limit) and how many matched in all."""

    entries: list[AuditEntry]
    total: int


@dataclass(frozen=True)
class AuditSubject:
    """A model or team whose audit trail someone asked for."""

    kind: str  # MODEL or TEAM
    name: str
    removed: bool = False  # no longer in the registry: only its audit records remain


def split_detail(action: str, detail: dict[str, Any]) -> tuple[Any, Any]:
    """Return (before, after) from a record's detail, whatever shape its writer gave it."""
    if "before" in detail or "after" in detail:
        after = detail.get("after")
        if after is None and "decision" in detail:  # review.decide stores the new value flat
            after = detail["decision"]
            if detail.get("reason"):
                after = f"{after} (reason: {detail['reason']})"
        return detail.get("before"), after
    pairs = {
        key: value
        for key, value in detail.items()
        if isinstance(value, dict) and set(value) <= {"before", "after"} and value
    }
    if pairs and len(pairs) == len(detail):  # model.owners.set: {"owners": {before, after}, ...}
        return (
            {key: value.get("before") for key, value in pairs.items()},
            {key: value.get("after") for key, value in pairs.items()},
        )
    return None, (dict(detail) or None)


def compact(value: Any, limit: int = 80) -> str:
    """Render a stored value on one short line: `—` for nothing, long values cut with `…`."""
    # one line, and no terminal control sequences from stored text (an ESC would drive the tty)
    text = one_line(_flat(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text: str) -> str:
    """Return stored text on one line with control characters shown as `?`."""
    return " ".join(_CONTROL.sub("?", text).split())


def _flat(value: Any) -> str:
    if value is None or value == {} or value == []:
        return "—"
    if isinstance(value, dict):
        return ", ".join(f"{key}={_flat(item)}" for key, item in value.items())
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_flat(item) for item in value) + "]"
    return str(value)


def changed_only(before: Any, after: Any) -> tuple[Any, Any]:
    """Keep only the keys whose values differ when both sides are dicts (the rest is noise)."""
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return before, after
    keys = [k for k in dict.fromkeys([*before, *after]) if before.get(k) != after.get(k)]
    if not keys:
        return before, after
    return {k: before.get(k) for k in keys}, {k: after.get(k) for k in keys}


def change_line(entry: AuditEntry, limit: int = 80, money: MoneyFormat = cents) -> str:
    """Return `before → after` (only what changed; a value with no before is just `→ after`).

    `money` renders computed amounts as the surface does; budget amounts are shown exactly.
    """
    before, after = changed_only(entry.before, entry.after)
    if entry.action in MONEY_ACTIONS:
        currency = entry.money_currency
        before, after = _as_money(before, currency), _as_money(after, currency)
    elif entry.action in LEVEL_ACTIONS:
        currency = entry.money_currency
        before, after = _as_level(before, currency, money), _as_level(after, currency, money)
    return f"{compact(before, limit)} → {compact(after, limit)}"


def money_text(text: Any, currency: str) -> str:
    """Render a stored amount as money, exact: `$83,183`, `€2,500.50` (cents only if it has)."""
    try:
        value = Decimal(str(text))
    except ArithmeticError:
        return str(text)
    if not value.is_finite():
        return str(text)
    return format_money_exact(value, currency)


def _as_money(values: Any, currency: str) -> Any:
    """Return a budget's values with its amount as money."""
    if not isinstance(values, dict):
        return values
    return {
        key: money_text(value, currency) if key in MONEY_KEYS and value is not None else value
        for key, value in values.items()
    }


def _as_level(values: Any, currency: str, money: MoneyFormat) -> Any:
    """Return an anomaly answer's values with the level it accepts as money (or GPU-hours)."""
    if not isinstance(values, dict) or values.get(LEVEL_KEY) is None:
        return values
    try:
        level = Decimal(str(values[LEVEL_KEY]))
    except ArithmeticError:
        return values
    if not level.is_finite():
        return values
    gpu = str(values.get("driver") or "").startswith(GPU_DRIVER)
    shown = f"{level:,.1f} GPU-hours" if gpu else money(level, currency)
    return {**values, LEVEL_KEY: shown}


def _exact(values: Any) -> Any:
    """Return a budget's values with its amount as an exact decimal string (`12000`, not
    `12000.0000000000`)."""
    if not isinstance(values, dict):
        return values
    out = dict(values)
    for key in MONEY_KEYS:
        try:
            out[key] = format(Decimal(str(out[key])).normalize(), "f")
        except (KeyError, ArithmeticError):
            continue
    return out


def _like(text: str) -> str:
    """Escape LIKE's wildcards in a name (names may hold `_`, and `\\` is our escape)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# A review's key starts `review:YYYY-MM:`; `_` matches one character, so a team's pattern
# cannot reach into the model part of another team's key (bot/review/threads.py).
REVIEW = "review:" + "_" * 7 + ":"


def _model_terms(name: str) -> list[ColumnElement[bool]]:
    target, n = audit_log.c.target, _like(name)
    return [
        target == f"model:{name}",
        target.like(f"model:{n}/%", escape="\\"),  # its stage budgets
        target.like(f"{REVIEW}%:model:{n}", escape="\\"),  # its review decisions
    ]


def _team_terms(name: str) -> list[ColumnElement[bool]]:
    target, n = audit_log.c.target, _like(name)
    return [
        target == f"team:{name}",
        target.like(f"team:{n}/%", escape="\\"),
        target.like(f"{REVIEW}{n}", escape="\\"),  # the team's review opening
        target.like(f"{REVIEW}{n}:%", escape="\\"),  # and every decision in it
    ]


def _resource_keys(*, model: str | None = None, team: str | None = None) -> Any:
    """Select the keys (as the audit stores them) of resource findings of a model or team."""
    record = resource_findings.c
    key = record.account + "/" + record.region + "/" + record.kind + "/" + record.resource_id
    column = record.model if model is not None else record.team
    return select(func.substr(key, 1, 250)).where(column == (model or team))


def subject_condition(
    session: Reader, subject: str, kind: str | None = None
) -> ColumnElement[bool]:
    """Return the filter for `--subject`.

    A subject with `:` or `/` (`model:recsys`, `team:ranking/stage:training`, a resource key,
    `review:2026-10:ranking`) matches that target exactly. A bare name matches the model and the
    team of that name (only one of them if `kind` says which): their budgets (stage ones too),
    owners, sign-offs, reviews and review decisions, and resource findings attributed to them;
    a team also brings its models' records.
    """
    text = subject.strip()
    if not text:
        raise UsageError("--subject needs a model, team, budget scope or resource")
    if ":" in text or "/" in text:
        return audit_log.c.target == text
    name = text.lower()
    terms: list[ColumnElement[bool]] = [audit_log.c.target == text]
    if kind in (None, MODEL):
        terms.extend(_model_terms(name))
        terms.append(audit_log.c.target.in_(_resource_keys(model=name)))
    if kind in (None, TEAM):
        terms.extend(_team_terms(name))
        terms.append(audit_log.c.target.in_(_resource_keys(team=name)))
        query = select(models.c.name).join(teams, teams.c.id == models.c.team_id)
        for model in session.scalars(query.where(teams.c.name == name)).all():
            terms.extend(_model_terms(model))
            terms.append(audit_log.c.target.in_(_resource_keys(model=model)))
    return or_(*terms)


def resolve_subject(session: Reader, name: str) -> AuditSubject:
    """Return the model (first) or team with this name, or NotFoundError with close names."""
    wanted = name.strip().lower()
    if session.scalars(select(models.c.id).where(models.c.name == wanted)).first() is not None:
        return AuditSubject(MODEL, wanted)
    if session.scalars(select(teams.c.id).where(teams.c.name == wanted)).first() is not None:
        return AuditSubject(TEAM, wanted)
    for kind in (MODEL, TEAM):  # removed since, but its records remain
        target = f"{kind}:{wanted}"
        if session.scalars(select(audit_log.c.id).where(audit_log.c.target == target)).first():
            return AuditSubject(kind, wanted, removed=True)
    names = sorted(
        {*session.scalars(select(models.c.name)), *session.scalars(select(teams.c.name))}
    )
    close = difflib.get_close_matches(wanted, names, n=3, cutoff=0.5)
    shown = name.replace("`", "'")[:60]
    if close:
        hint = "Did you mean " + ", ".join(f"`{c}`" for c in close) + "?"
    else:
        hint = "Known: " + ", ".join(f"`{n}`" for n in names[:10]) if names else "none yet."
    raise NotFoundError(f"No model or team named `{shown}`. {hint}")


def audit_trail(
    *,
    session: Reader,
    since: dt.date | None = None,
    until: dt.date | None = None,
    actor: str | None = None,
    subject: str | None = None,
    subject_kind: str | None = None,
    import_id: int | None = None,
    limit: int = 50,
    currency: str = "USD",
) -> AuditPage:
    """Return the newest changes matching the filters (days inclusive, UTC), newest first.

    Newest is the last written: changes to one thing are serialised, so the order written is
    the order made, while `at` is each writer's clock (replicas' clocks may differ by minutes).

    `import_id` keeps one registry import's records; `currency` is the organisation's, for
    budget amounts whose record and budget do not name one.
    """
    if not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"--limit must be between 1 and {MAX_LIMIT}")
    if since is not None and until is not None and until < since:
        raise UsageError(f"--until {until} is before --since {since}")
    conditions: list[ColumnElement[bool]] = []
    if since is not None:
        conditions.append(audit_log.c.at >= _midnight(since))
    if until is not None:
        conditions.append(audit_log.c.at < _midnight(until + dt.timedelta(days=1)))
    if actor is not None:
        conditions.append(audit_log.c.actor == actor.strip().lstrip("@"))
    if subject is not None:
        conditions.append(subject_condition(session, subject, subject_kind))
    if import_id is not None:
        conditions.append(
            or_(
                and_(audit_log.c.id == import_id, audit_log.c.action == IMPORT_ACTION),
                audit_log.c.detail["import"].as_integer() == import_id,
            )
        )
    total = session.scalar(select(func.count(audit_log.c.id)).where(*conditions)) or 0
    rows = session.execute(
        select(audit_log)
        .where(*conditions)
        .order_by(audit_log.c.id.desc())  # the order written, not the writers' clocks (see above)
        .limit(limit)
    ).all()
    currencies = _budget_currencies(session, rows)
    entries = [_entry(row, currencies.get(row.target, currency)) for row in rows]
    return AuditPage(entries, int(total))


def _budget_currencies(session: Reader, rows: Sequence[Row[Any]]) -> dict[str, str]:
    """Return the currency of each budget the rows change (a budget keeps its currency)."""
    scopes = {row.target for row in rows if row.action in MONEY_ACTIONS}
    if not scopes:
        return {}
    query = select(budgets.c.scope, budgets.c.currency).where(budgets.c.scope.in_(scopes))
    return {scope: code for scope, code in session.execute(query)}


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)


def _entry(row: Row[Any], currency: str) -> AuditEntry:
    detail = dict(row.detail or {})
    if row.action in MONEY_ACTIONS:
        for side in ("before", "after"):
            if isinstance(detail.get(side), dict):
                detail[side] = _exact(detail[side])
    before, after = split_detail(row.action, detail)
    return AuditEntry(
        row.id, row.at, row.actor, row.action, row.target, before, after, detail, currency
    )
