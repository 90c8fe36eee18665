"""`/mlcost model|team|top|budget|unallocated` and App Home over HTTP, on the demo organisation."""

from __future__ import annotations

import time
from typing import Any

from bot.slack.charts.spend_chart import HEIGHT_PX, WIDTH_PX
from tests.support.demo_org import png_size
from tests.support.slack_app import SlackHarness


def all_text(blocks: list[dict[str, Any]]) -> str:
    """Flatten every piece of text in blocks, for assertions."""
    out: list[str] = []
    for block in blocks:
        if "text" in block:
            out.append(block["text"]["text"])
        out += [f["text"] for f in block.get("fields", [])]
        out += [e.get("text", "") for e in block.get("elements", [])]
    return "\n".join(out)


def test_model_posts_a_real_png_chart_after_the_ack_and_the_numbers(demo: SlackHarness) -> None:
    result = demo.command("model recsys", channel="C0RANKING")
    replied_at = time.monotonic()
    assert result.status == 200
    assert result.elapsed < 1.0
    assert result.json()["response_type"] == "ephemeral"
    assert "Working on" in result.json()["text"]

    done = demo.fake.wait_for("files.completeUploadExternal")[0]
    started = demo.fake.calls_to("files.getUploadURLExternal")[0]
    assert started.at > replied_at, "the chart work must start after the ack was answered"
    assert done.params["channel_id"] == "C0RANKING"
    upload = demo.fake.calls_to("upload/F123")[0]
    assert png_size(upload.body) == (WIDTH_PX, HEIGHT_PX) == (1200, 500)
    assert int(started.params["length"]) == len(upload.body)
    assert started.params["filename"] == "mlcost-recsys-30d.png"

    reply = demo.responses(1)[0]
    assert reply["response_type"] == "in_channel"
    assert reply["text"].startswith("recsys: $17,139 month to date (Nov 1–20); 78 % of its $22,000")
    text = all_text(reply["blocks"])
    for expected in (
        "*Month to date (Nov 1–20)*\n*$17,139*",
        "$22,000 · *78 %* used",
        "Month-end forecast",
        "weekday run-rate over 28 days",
        "Change vs last month",
        "+36 %",
        "GPU-hours",
        "4,697 GPU-h",
        "<@U0AAA111>, <@U0AAA112>",
        "<#C0RECSYS>",
        "billed cost (as invoiced)",
        "• training: *$12,310* (72 %) · 82 % of its $15,000 budget",
        "`i-recsystrain01`",
        "data through Nov 20, 2026",
    ):
        assert expected in text, expected
    assert len(reply["blocks"]) <= 50


def test_model_for_a_past_month_and_effective_cost(demo: SlackHarness) -> None:
    assert demo.command("model recsys 2026-10 --cost effective").status == 200
    upload = demo.fake.wait_for("upload/F123")[0]
    assert png_size(upload.body) == (1200, 500)
    reply = demo.responses(1)[0]
    text = all_text(reply["blocks"])
    assert "Month total (Oct 1–31)" in text
    assert "actual (month complete)" in text
    assert "effective cost (amortised" in text


def test_unknown_model_suggests_the_closest_names_ephemerally(demo: SlackHarness) -> None:
    assert demo.command("model recsy").status == 200
    reply = demo.responses(1)[0]
    assert reply["response_type"] == "ephemeral"
    assert reply["text"].startswith(":warning: No model named `recsy`. Did you mean `recsys`")
    assert not demo.fake.calls_to("files.getUploadURLExternal")


def test_bad_window_is_a_specific_ephemeral_error(demo: SlackHarness) -> None:
    demo.command("model recsys 7 weeks")
    reply = demo.responses(1)[0]
    assert reply["response_type"] == "ephemeral"
    assert "Usage: `/mlcost model &lt;name&gt;" in reply["text"]


def test_team_ranks_its_models_with_a_chart(demo: SlackHarness) -> None:
    assert demo.command("team ranking", channel="C0RANKING").status == 200
    upload = demo.fake.wait_for("upload/F123")[0]
    assert png_size(upload.body) == (1200, 500)
    reply = demo.responses(1)[0]
    text = all_text(reply["blocks"])
    assert reply["response_type"] == "in_channel"
    assert text.index("1. *recsys* $17,139") < text.index("2. *search-ranker* $2,890")
    assert "$36,000 · *67 %* used" in text


def test_top_lists_biggest_and_fastest_growing(demo: SlackHarness) -> None:
    demo.command("top 3")
    reply = demo.responses(1)[0]
    text = all_text(reply["blocks"])
    assert "1. *chat-assistant* $27,303" in text
    assert "3. *moderation* $3,500" in text
    assert "4. *" not in text.split("Fastest-growing")[0]
    growing = text.split("Fastest-growing")[1]
    assert growing.index("*recsys*") < growing.index("*forecasting*")


def test_budget_list_and_show(demo: SlackHarness) -> None:
    demo.command("budget list")
    listing = all_text(demo.responses(1)[0]["blocks"])
    assert listing.index(
        "`model:recsys/stage:training` $12,310 of $15,000 · *82 %*"
    ) < listing.index("`team:vision`")
    assert ":large_orange_circle:" in listing
    demo.fake.calls.clear()
    demo.command("budget show recsys")
    shown = all_text(demo.responses(1)[0]["blocks"])
    assert "*Monthly budget*\n*$22,000*" in shown
    assert "50 %, 80 %, 100 %" in shown
    demo.fake.calls.clear()
    demo.command("budget show model:recsy")
    assert "Did you mean `model:recsys`" in demo.responses(1)[0]["text"]


def test_unallocated_groups_by_the_tag_that_would_fix_it(demo: SlackHarness) -> None:
    demo.command("unallocated")
    reply = demo.responses(1)[0]
    text = all_text(reply["blocks"])
    assert reply["text"].startswith("Unallocated spend 2026-11: $")
    assert "*Model tag `legacy-ranker`*" in text
    assert "register `legacy-ranker` in the registry" in text
    assert "*No model tag*" in text
    assert "Amazon Elastic Compute Cloud" in text


def test_app_home_shows_the_users_models(demo: SlackHarness) -> None:
    assert demo.event({"type": "app_home_opened", "user": "U0AAA111", "tab": "home"}).status == 200
    call = demo.fake.wait_for("views.publish")[0]
    assert call.params["user_id"] == "U0AAA111"
    text = all_text(call.params["view"]["blocks"])
    assert "*recsys* :large_orange_circle:\nMonth to date *$17,139*" in text
    assert "budget *78 %* of $22,000" in text
    assert "chat-assistant" not in text


def test_app_home_for_a_stranger_says_how_to_become_an_owner(demo: SlackHarness) -> None:
    demo.event({"type": "app_home_opened", "user": "U0NOBODY", "tab": "home"})
    text = all_text(demo.fake.wait_for("views.publish")[0].params["view"]["blocks"])
    assert "You don't own any models yet" in text


def test_chart_upload_failure_still_posts_the_numbers(demo: SlackHarness) -> None:
    demo.fake.fail("files.getUploadURLExternal", 200, error="not_in_channel")
    demo.command("model recsys", channel="C0ELSEWHERE")
    reply = demo.responses(1)[0]
    assert reply["response_type"] == "in_channel"
    assert "I could not post the chart here (`not_in_channel`)" in all_text(reply["blocks"])


def test_waste_for_everyone_for_a_team_and_for_an_unknown_name(demo: SlackHarness) -> None:
    demo.command("waste")
    everything = all_text(demo.responses(1)[0]["blocks"])
    assert "Spot candidate: `recsys` training on p4d.24xlarge in us-east-1" in everything
    assert "`legacy-ranker`" in everything  # orphaned: no team owns it
    demo.command("waste ranking")
    ranking = demo.responses(2)[-1]
    assert ranking["response_type"] == "ephemeral"
    assert "Spot candidate: `recsys`" in all_text(ranking["blocks"])
    assert "legacy-ranker" not in all_text(ranking["blocks"])
    demo.command("waste vision")
    assert demo.responses(3)[-1]["text"].startswith("Waste: nothing found this week")
    demo.command("waste rankin")
    assert demo.responses(4)[-1]["text"].startswith(
        ":warning: No team or model named `rankin`. Did you mean `ranking`"
    )
    demo.command("waste ranking recsys")
    assert "Usage: `/mlcost waste [team|model]`" in demo.responses(5)[-1]["text"]
