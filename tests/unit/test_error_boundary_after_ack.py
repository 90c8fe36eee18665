"""A listener that acknowledges and then raises still answers Slack 200, and the person is told.

slack_bolt's thread runner, given an exception after ack(), sets `ack.response = None`; if that
happens before its 10 ms poll has seen the ack, the request waits the whole 3 s ack timeout and is
answered 404 ("didn't call ack()"), which Slack shows as an error. A refused button click does
exactly this: ack at once, then the permission check raises.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlencode

from slack_bolt import Ack, App, BoltRequest, Respond
from slack_bolt.authorization import AuthorizeResult
from slack_sdk import WebClient

from bot.errors import PermissionDenied
from bot.slack.error_boundary import guarded, handle_error
from handlers import register_all


def _app() -> App:
    app = App(
        client=WebClient(base_url="http://127.0.0.1:9/"),  # nothing here may call Slack
        authorize=lambda **_: AuthorizeResult(enterprise_id=None, team_id="T1", bot_token="xoxb-x"),
        signing_secret="unused",
        token_verification_enabled=False,
        request_verification_enabled=False,
        raise_error_for_unhandled_request=False,
    )
    app.error(handle_error)
    return app


def _click(action_id: str) -> BoltRequest:
    payload = {
        "type": "block_actions",
        "user": {"id": "U0STRANGER"},
        "team": {"id": "T1"},
        "channel": {"id": "C1"},
        "response_url": "https://hooks.slack.invalid/response",
        "trigger_id": "t",
        "actions": [{"action_id": action_id, "block_id": "b", "value": "1"}],
    }
    return BoltRequest(
        body=urlencode({"payload": json.dumps(payload)}),
        headers={"content-type": ["application/x-www-form-urlencoded"]},
    )


def test_a_refusal_right_after_ack_is_answered_200_at_once_and_told() -> None:
    app = _app()
    told: list[dict[str, Any]] = []

    def refuse(ack: Ack, respond: Respond) -> None:
        ack()
        raise PermissionDenied("Only the owners of `recsys` or an admin can decide.")

    def capture_replies(context: Any, next: Any) -> None:
        context["respond"] = lambda **reply: told.append(reply)
        next()

    app.middleware(capture_replies)
    app.action("refuse")(guarded(refuse))
    for _ in range(20):  # the race Bolt loses is timing-dependent: try it many times
        started = time.monotonic()
        response = app.dispatch(_click("refuse"))
        assert response.status == 200
        assert time.monotonic() - started < 2.5
    time.sleep(0.2)
    assert len(told) == 20
    assert told[0]["text"].startswith(":warning: Only the owners of")


def test_every_listener_of_the_app_is_guarded() -> None:
    app = _app()
    register_all(app)
    listeners = app._listeners
    assert listeners
    for listener in listeners:
        assert getattr(listener.ack_function, "guarded", False), listener.ack_function
