"""The two Slack app manifests describe one app: HTTP mode and Socket Mode differ only in where
Slack sends requests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
HTTP = ROOT / "slack" / "manifest.yaml"
SOCKET = ROOT / "slack" / "manifest-socket.yaml"
PLACEHOLDER_URL = "https://mlcost.example.com/slack/events"


def load(path: Path) -> dict[str, Any]:
    manifest = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(manifest, dict)
    return manifest


def without_urls(manifest: dict[str, Any]) -> dict[str, Any]:
    """Return the manifest without its request URLs and its Socket Mode switch."""
    copy = yaml.safe_load(yaml.safe_dump(manifest))
    for command in copy["features"]["slash_commands"]:
        command.pop("url", None)
    copy["settings"]["event_subscriptions"].pop("request_url", None)
    copy["settings"]["interactivity"].pop("request_url", None)
    copy["settings"].pop("socket_mode_enabled")
    return copy


def urls(manifest: dict[str, Any]) -> list[str | None]:
    settings = manifest["settings"]
    return [
        *(command.get("url") for command in manifest["features"]["slash_commands"]),
        settings["event_subscriptions"].get("request_url"),
        settings["interactivity"].get("request_url"),
    ]


def test_the_http_manifest_sends_everything_to_one_url() -> None:
    http = load(HTTP)
    assert http["settings"]["socket_mode_enabled"] is False
    assert urls(http) == [PLACEHOLDER_URL] * 3  # docs/slack.md: "three places"


def test_the_socket_manifest_has_no_urls_and_socket_mode_on() -> None:
    socket = load(SOCKET)
    assert socket["settings"]["socket_mode_enabled"] is True
    assert urls(socket) == [None, None, None]
    assert socket["settings"]["interactivity"]["is_enabled"] is True


def test_both_manifests_describe_the_same_app() -> None:
    assert without_urls(load(HTTP)) == without_urls(load(SOCKET))


def test_the_docs_name_the_manifest_each_mode_uses() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    slack = (ROOT / "docs" / "slack.md").read_text(encoding="utf-8")
    steps = readme.split("## From the demo to your own data", 1)[1].split("\n## ", 1)[0]
    step_4, step_5 = steps.split("**4. ", 1)[1].split("**5. ", 1)
    step_5 = step_5.split("**6. ", 1)[0]
    # the README's step 5 runs Socket Mode, so step 4 creates the app from the Socket Mode manifest
    assert "mlcost serve --socket" in step_5
    assert "slack/manifest-socket.yaml" in step_4
    for name in ("slack/manifest.yaml", "slack/manifest-socket.yaml"):
        assert name in slack
