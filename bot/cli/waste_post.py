"""`mlcost waste scan --post`: record the scan, post what is due, say what happened (plain text)."""

from __future__ import annotations

import sys

from bot.cli.context import CliContext
from bot.cli.terminal import NOT_DELIVERED
from bot.counts import counted
from bot.money import format_money_places
from bot.waste.jobs import post_scan
from bot.waste.scan.run import ScanReport


def post_and_print(ctx: CliContext, report: ScanReport, *, to_stderr: bool = False) -> None:
    """Record the findings and deliver their posts (when a Slack token is set); print a summary."""
    delivering = ctx.settings.slack_bot_token is not None
    services = ctx.services
    posted = post_scan(
        report,
        deliver=delivering,
        session_factory=services.session_factory,
        settings=services.settings.scan,
        clock=services.clock,
        edge=services.delivery_edge,
    )
    life = posted.lifecycle
    out = sys.stderr if to_stderr else sys.stdout
    print(
        f"recorded {counted(len(report.findings), 'finding')}: {len(life.new)} new, "
        f"{len(life.worse)} worse, {len(life.reraised)} raised again, "
        f"{len(life.silenced)} silenced (Keep or Not waste), {len(life.unchanged)} already "
        f"posted; {counted(len(life.posts), 'post')} queued",
        file=out,
    )
    if life.below_floor:
        floor = format_money_places(ctx.settings.scan_min_monthly, report.currency, 2)
        print(
            f"not posted: {counted(len(life.below_floor), 'finding')} under {floor} a month "
            "(MLCOST_SCAN_MIN_MONTHLY); reports list them",
            file=out,
        )
    if life.summarised:
        cap = ctx.settings.scan_max_posts_per_channel
        print(
            f"summarised: {counted(len(life.summarised), 'finding')} over the cap of {cap} "
            "posts per channel a day (MLCOST_SCAN_MAX_POSTS_PER_CHANNEL): one summary post per "
            "channel, posted one by one on later days",
            file=out,
        )
    for key, saved in life.closed:
        money = format_money_places(saved, report.currency, 2)
        print(f"closed: {key} no longer found; saved so far {money}", file=out)
    for key in life.unrouted:
        print(f"not posted (no channel; set finops_channel in the registry): {key}", file=out)
    if posted.delivery is not None:
        d = posted.delivery
        print(
            f"delivered {len(d.delivered)}, found already posted {len(d.recovered)}, to retry "
            f"{len(d.failed)}, undeliverable {len(d.dead)}",
            file=out,
        )
    elif not delivering:
        print(NOT_DELIVERED, file=out)
