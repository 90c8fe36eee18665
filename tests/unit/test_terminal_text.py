"""Slack mrkdwn shown on a terminal: no emoji codes, code spans, bold or <...> markup."""

from __future__ import annotations

import pytest

from bot.slack.mrkdwn import escape, plain


@pytest.mark.parametrize(
    ("mrkdwn", "terminal"),
    [
        (
            ":warning: model:recsys passed 50 % of its budget: $11,024 of $22,000 (50 %).",
            "model:recsys passed 50 % of its budget: $11,024 of $22,000 (50 %).",
        ),
        (":rotating_light: Unusual spend for *model:recsys*", "Unusual spend for model:recsys"),
        ("owners <@U0AAA111> <@U0B|bob>", "owners @U0AAA111 @bob"),
        ("in <#C0RANKING|ranking> or <#C0RISK>, <!here>", "in #ranking or #C0RISK, @here"),
        ("see <https://x.example/z|the docs>", "see the docs (https://x.example/z)"),
        ("run `/mlcost model recsys`", "run /mlcost model recsys"),
        # not markup: times, snake_case, a lone asterisk, a tag key with colons
        (
            "at 12:30:45 churn_predictor 5 * 3 ml:model:x",
            "at 12:30:45 churn_predictor 5 * 3 ml:model:x",
        ),
    ],
)
def test_mrkdwn_becomes_terminal_text(mrkdwn: str, terminal: str) -> None:
    assert plain(mrkdwn) == terminal


def test_escaped_outside_text_comes_back_as_it_was_written_and_pings_nobody() -> None:
    hostile = "<!channel> <@U0ADMIN01> & <https://evil.example|click>"
    assert plain(escape(hostile)) == hostile
