"""Changes made from several real processes at once: budget sets and finding decisions.

Each worker runs in its own process (multiprocessing, spawn) with its own engine, waits at a
barrier with the others, then makes its change in its own transaction, as a replica would. A
pause between the permission check and the change widens the window in which another process
can land a change (without serialisation, both would read the same `before`).
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from bot.db.engine import make_engine, make_session_factory, session_scope
from bot.errors import MlcostError

NOW = dt.datetime(2026, 12, 4, 9, tzinfo=dt.UTC)
PAUSE_SECONDS = 0.3  # between a change's permission check and its write


def _slow(module: Any, name: str) -> None:
    """Make module.name pause after it returns (it runs before the change is written)."""
    original = getattr(module, name)

    def slowed(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        time.sleep(PAUSE_SECONDS)
        return result

    setattr(module, name, slowed)


def set_budgets(
    url: str, barrier: Any, results: Any, user: str, scope: str, amounts: list[str]
) -> None:
    """Set the scope's budget to each amount in turn, each round after the barrier."""
    import bot.budgets.admin as admin

    _slow(admin, "check_budget_permission")
    factory = make_session_factory(make_engine(url))
    for amount in amounts:
        barrier.wait()
        try:
            with session_scope(factory) as session:
                admin.set_budget(session=session, user_id=user, scope=scope, amount=Decimal(amount))
            results.put(("ok", user, amount))
        except MlcostError as exc:
            results.put(("refused", user, str(exc)))


def decide_finding(
    url: str, barrier: Any, results: Any, user: str, decision: str, finding_id: int, wait: float
) -> None:
    """Press Keep, Not waste or Stop it on a finding after the barrier (and `wait` seconds)."""
    import bot.waste.lifecycle as lifecycle

    _slow(lifecycle, "check_can_decide")
    factory = make_session_factory(make_engine(url))
    barrier.wait()
    time.sleep(wait)
    try:
        with session_scope(factory) as session:
            if decision == lifecycle.STOP:
                approval = lifecycle.approve_stop(
                    session=session, finding_id=finding_id, user_id=user, now=NOW
                )
                outcome = "ok" if approval.acts else "refused"
                results.put((outcome, user, approval.previous_result or ""))
                return
            lifecycle.record_silence(
                session=session, finding_id=finding_id, user_id=user, decision=decision, now=NOW
            )
        results.put(("ok", user, decision))
    except MlcostError as exc:
        results.put(("refused", user, str(exc)))


def run_at_once(
    worker: Callable[..., None], calls: list[tuple[Any, ...]], expected: int
) -> list[tuple[str, ...]]:
    """Run worker(url, barrier, results, *args) once per call (url, *args), each in a process.

    Returns the `expected` results the workers report; fails if a worker died.
    """
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(calls))
    results = ctx.Queue()
    processes = [
        ctx.Process(target=worker, args=(call[0], barrier, results, *call[1:])) for call in calls
    ]
    for process in processes:
        process.start()
    reported = [results.get(timeout=120) for _ in range(expected)]
    for process in processes:
        process.join(timeout=120)
    codes = [process.exitcode for process in processes]
    assert codes == [0] * len(calls), f"a worker failed: exit codes {codes}"
    return reported
