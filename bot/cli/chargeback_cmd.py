"""`mlcost report chargeback --month YYYY-MM [--detail account] --format table|csv|json`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from bot.cli.arguments import add_cost_basis_argument
from bot.cli.csv_export import csv_text
from bot.cli.table import Column, Table
from bot.errors import UsageError
from bot.money import CostBasis, format_money_places

if TYPE_CHECKING:
    from bot.cli.context import CliContext
    from bot.spend.chargeback import Chargeback


def register(reports: Any) -> None:
    """Add `chargeback` under `mlcost report`."""
    parser = reports.add_parser(
        "chargeback",
        help="each team's spend plus its split of shared costs (unallocated, idle, support, tax)",
    )
    parser.add_argument("--month", help="YYYY-MM (default: last month)")
    parser.add_argument(
        "--format", choices=["table", "csv", "json"], default="table", help="(default: table)"
    )
    parser.add_argument(
        "--detail",
        choices=["account"],
        help="account: also each team's row by usage account (linked account, project, "
        "subscription), adding up to it to the cent (default: teams only)",
    )
    parser.add_argument(
        "--totals",
        action="store_true",
        help="with --format csv: each currency's column totals as their own table, instead "
        "of the teams' rows",
    )
    add_cost_basis_argument(parser)
    parser.set_defaults(handler=run_chargeback)


def run_chargeback(args: argparse.Namespace, ctx: CliContext) -> int:
    """Print the month's chargeback; the totals reconcile with the ledger to the cent."""
    from bot.periods import month_of, month_period, previous_month
    from bot.spend.chargeback import chargeback_report, load_chargeback_policy
    from bot.spend.reports import check_currency_setting

    if args.totals and args.format != "csv":
        raise UsageError("--totals goes with --format csv (the table and JSON carry the totals)")
    today = ctx.now().date()
    period = month_period(args.month) if args.month else previous_month(month_of(today))
    with ctx.reading() as session:
        check_currency_setting(session, ctx.settings.currency)
        charges = chargeback_report(
            session=session,
            period=period,
            policy=load_chargeback_policy(session=session),
            basis=CostBasis(args.cost),
            detail=args.detail,
        )
    print(render_chargeback(charges, args.format, detail=args.detail, totals=args.totals), end="")
    if not charges:
        print(f"note: no spend in {period.label}; nothing to charge back", file=sys.stderr)
    return 0


def render_chargeback(
    charges: list[Chargeback], fmt: str, detail: str | None = None, *, totals: bool = False
) -> str:
    """Render one chargeback per currency as a table, CSV or JSON (currencies never added).

    With `detail="account"` the CSV has one row per team and usage account (an `account`
    column after `team`), the table a "by account" section, the JSON an `accounts` list.
    CSV is one table `pandas.read_csv` reads as it is: the rows (which add up to each
    currency's total), or with `totals` one row of column totals per currency.
    """
    from bot.spend.chargeback import COLUMNS

    if fmt == "json":
        return json.dumps([c.as_json() for c in charges], indent=2) + "\n"
    if fmt == "csv" and totals:
        from bot.spend.chargeback import COLUMNS

        rows: list[list[object]] = [["month", "currency", *COLUMNS, "shared", "total"]]
        for charge in charges:
            rows.append(
                [
                    charge.period.label,
                    charge.currency,
                    *(charge.column_total(c) for c in COLUMNS),
                    sum(charge.column_total(c) for c in COLUMNS[1:]),
                    charge.total,
                ]
            )
        return csv_text(rows, lineterminator="\n")
    if fmt == "csv":
        by_account = detail == "account"
        rows = [
            [
                "month",
                "currency",
                "team",
                *(["account"] if by_account else []),
                *COLUMNS,
                "shared",
                "total",
            ]
        ]
        for charge in charges:
            for team in charge.accounts if by_account else charge.teams:
                rows.append(
                    [
                        charge.period.label,
                        charge.currency,
                        team.team,
                        *([getattr(team, "account", "")] if by_account else []),
                        *(team.cells[c] for c in COLUMNS),
                        team.shared,
                        team.total,
                    ]
                )
        return csv_text(rows, lineterminator="\n")
    return "\n".join(_table(charge) for charge in charges)  # a blank line between currencies


def _table(charge: Chargeback) -> str:
    """One currency's chargeback as an aligned table with its reconciliation line."""
    from bot.spend.chargeback import COLUMNS, POOLS

    money = lambda v: format_money_places(v, charge.currency, 2)  # noqa: E731  (cents: an invoice)
    columns = [Column("team"), *(Column(c, right=True) for c in [*COLUMNS, "total"])]
    body = [[t.team, *(money(t.cells[c]) for c in COLUMNS), money(t.total)] for t in charge.teams]
    totals = ["total", *(money(charge.column_total(c)) for c in COLUMNS), money(charge.total)]
    table = Table(columns, [*body, totals])

    split = ", ".join(f"{pool} {charge.methods[pool]}" for pool in POOLS)
    lines = [
        f"Chargeback {charge.period.label} ({charge.currency}, {charge.basis} cost); "
        f"shared costs split: {split}",
        *table.lines(rule=True)[:-1],
        table.rule(),
        table.line(totals),
        f"{'reconciles' if charge.total == charge.ledger_total else 'DOES NOT RECONCILE'}: "
        f"teams {money(charge.total)}, ledger {money(charge.ledger_total)}",
        *(f"note: {note}" for note in charge.notes),
        *_account_lines(charge, money),
    ]
    return "\n".join(lines) + "\n"


def _account_lines(charge: Chargeback, money: Any) -> list[str]:
    """The account detail as an aligned table under the teams' (nothing without detail)."""
    from bot.spend.chargeback import COLUMNS

    if not charge.accounts:
        return []
    columns = [Column("team"), Column("account")]
    columns += [Column(c, right=True) for c in [*COLUMNS, "total"]]
    body = [
        [a.team, a.account, *(money(a.cells[c]) for c in COLUMNS), money(a.total)]
        for a in charge.accounts
    ]
    return [
        "",
        "by account (each team's row split by usage account; the rows add up to it):",
        *Table(columns, body).lines(rule=True),
    ]
