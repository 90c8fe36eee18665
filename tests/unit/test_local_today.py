"""One `local_today`: the date the organisation's clock shows, not UTC's."""

from __future__ import annotations

import datetime as dt

from bot.periods import local_today


def test_local_today_is_the_date_in_the_configured_time_zone() -> None:
    late_utc = dt.datetime(2026, 12, 3, 2, 30, tzinfo=dt.UTC)
    assert local_today(late_utc, "UTC") == dt.date(2026, 12, 3)
    assert local_today(late_utc, "America/Los_Angeles") == dt.date(2026, 12, 2)
    assert local_today(dt.datetime(2026, 12, 2, 23, tzinfo=dt.UTC), "Asia/Tokyo") == dt.date(
        2026, 12, 3
    )
