"""Thousands of random command texts: every one gets one helpful reply, never internals."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.slack.guard import checked_message
from handlers.commands import build_router, handle_command
from tests.support.slack_app import SlackHarness

SUBCOMMANDS = [
    "model",
    "team",
    "top",
    "budget",
    "owner",
    "unallocated",
    "help",
    "budgets",
    "modle",
    "MODEL",
    "",
    "?",
    "--help",
    "value",
    "review",
]
WORDS = [
    "recsys",
    "RecSys",
    "recsy",
    "chat-assistant",
    "ranking",
    "vision",
    "nope",
    "30d",
    "90d",
    "0d",
    "999d",
    "2026-11",
    "2026-13",
    "0000-01",
    "9999-12",
    "1970-01",
    "set",
    "show",
    "list",
    "model:recsys",
    "team:ranking",
    "stage:storage",
    "stage:gpu",
    "model:recsys/stage:training",
    "12000",
    "$12,000",
    "12k",
    "-5",
    "1e40",
    "nan",
    "inf",
    "--alert",
    "50,80,100",
    "--alert=0",
    "--cost",
    "effective",
    "billed",
    "--cost=x",
    "-h",
    "<@U0AAA111|alice>",
    "<@U0ADMIN01>",
    "<@U0STRANGER|x>",
    "@alice",
    "<#C0NEW1234|x>",
    "#general",
    "<@>",
    "<#>",
    "`",
    '"',
    "'",
    "\u201c",
    "ー",
    "²",
    "١٢",
    "\x00",
    "\n",
    "a" * 300,
]
USERS = ["U0AAA111", "U0STRANGER", "U0BBB222", "U0ADMIN01", ""]
FORBIDDEN = (
    "Traceback",
    'File "',
    "sqlalchemy",
    "psycopg",
    "Exception",
    "Sorry, something went wrong",
    "NoneType",
    "KeyError",
    "ValueError",
    "TypeError",
)

command_texts = st.one_of(
    st.text(max_size=200),
    st.builds(
        lambda sub, words: " ".join([sub, *words]),
        st.sampled_from(SUBCOMMANDS),
        st.lists(st.one_of(st.sampled_from(WORDS), st.text(max_size=12)), max_size=6),
    ),
)


class RecordingClient:
    """Stands in for WebClient in the direct dispatch: records chart uploads."""

    def __init__(self) -> None:
        self.uploads: list[dict[str, Any]] = []

    def files_upload_v2(self, **kwargs: Any) -> None:
        self.uploads.append(kwargs)


def assert_helpful(replies: list[dict[str, Any]], sent: str) -> None:
    assert len(replies) == 1, replies
    reply = replies[0]
    assert reply["response_type"] in ("ephemeral", "in_channel")
    text = reply["text"]
    assert text.strip()
    for word in FORBIDDEN:
        if word.lower() not in sent.lower():  # a reply may quote the user's own words back
            assert word not in text, text
    if text.startswith(":warning:"):
        assert reply["response_type"] == "ephemeral"
    if reply.get("blocks"):
        checked_message(text, reply["blocks"])


@settings(max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=command_texts, user=st.sampled_from(USERS))
def test_router_answers_every_text_helpfully(
    demo: SlackHarness, tiny_charts: None, text: str, user: str
) -> None:
    router = build_router()
    replies: list[dict[str, Any]] = []
    body = {"text": text, "user_id": user, "channel_id": "C0RANKING", "team_id": "T1"}
    handle_command(
        body,
        lambda **kw: replies.append(kw),
        RecordingClient(),  # type: ignore[arg-type]
        demo.services,
        router,
    )
    assert_helpful(replies, text)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=command_texts.filter(lambda t: "\x00" not in t), user=st.sampled_from(USERS[:4]))
def test_random_commands_over_http_get_200_and_one_reply(
    demo: SlackHarness, text: str, user: str
) -> None:
    demo.fake.calls.clear()
    result = demo.via_http().command(text, user=user)
    assert result.status == 200
    ack = result.json()
    if ack is not None:
        assert "Traceback" not in ack.get("text", "")
    assert_helpful(demo.responses(1), text)
