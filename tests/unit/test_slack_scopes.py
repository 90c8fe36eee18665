"""The Slack manifests ask for exactly the bot scopes the code uses.

The code's Web API calls are found by reading its source (every attribute named like a WebClient
method: a call, or a method handed on to be called, as the history lookup does), and each
method's scopes come from Slack's method reference (docs.slack.dev/reference/methods/<method>,
"Required scopes", bot token). A new call fails here until its scopes are written down; a
scope nothing uses fails here until it leaves the manifests.
"""

from __future__ import annotations

import ast
from pathlib import Path

import yaml
from slack_sdk import WebClient

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = [ROOT / "slack" / "manifest.yaml", ROOT / "slack" / "manifest-socket.yaml"]

# The bot-token scopes each called method needs, for the conversations mlcost uses: public and
# private channels, and DMs with one person (never group DMs, so no mpim:* scope).
METHOD_SCOPES: dict[str, set[str]] = {
    "auth_test": set(),  # no scope
    "chat_postMessage": {"chat:write"},
    "chat_postEphemeral": {"chat:write"},
    "chat_update": {"chat:write"},
    # files.getUploadURLExternal and files.completeUploadExternal, both files:write
    "files_upload_v2": {"files:write"},
    "conversations_open": {"im:write"},  # a DM with one user
    "conversations_history": {"channels:history", "groups:history", "im:history"},
    "conversations_replies": {"channels:history", "groups:history", "im:history"},
    "views_open": set(),  # no scope
    "views_publish": set(),  # no scope
}

# Scopes that come from what the app is, not from a method it calls.
FEATURE_SCOPES = {
    "commands": "the /mlcost slash command (features.slash_commands)",
    "chat:write.public": "alerts post to a team's channel without the bot being invited",
}

WEB_API_METHODS = {name for name in vars(WebClient) if not name.startswith("_")}


def called_methods() -> dict[str, list[str]]:
    """Return each WebClient method the application's code names, with where."""
    found: dict[str, list[str]] = {}
    files = [*(ROOT / "bot").rglob("*.py"), *(ROOT / "handlers").rglob("*.py")]
    for path in sorted(files):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = None
            if isinstance(node, ast.Attribute) and node.attr in WEB_API_METHODS:
                name = node.attr
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                # Bolt's say() is chat.postMessage (respond() posts to a response_url: no scope)
                name = "chat_postMessage" if node.func.id == "say" else None
            if name:
                found.setdefault(name, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def manifest_scopes(path: Path) -> set[str]:
    manifest = yaml.safe_load(path.read_text(encoding="utf-8"))
    return set(manifest["oauth_config"]["scopes"]["bot"])


def test_every_called_method_has_its_scopes_written_down() -> None:
    called = called_methods()
    assert "chat_postMessage" in called and "conversations_history" in called  # the scan works
    unknown = {name: where for name, where in called.items() if name not in METHOD_SCOPES}
    assert not unknown, f"add these methods' scopes to METHOD_SCOPES: {unknown}"
    unused = set(METHOD_SCOPES) - set(called)
    assert not unused, f"no longer called, drop from METHOD_SCOPES: {sorted(unused)}"


def test_the_manifests_ask_for_exactly_the_scopes_the_code_uses() -> None:
    needed = set(FEATURE_SCOPES).union(*(METHOD_SCOPES[m] for m in called_methods()))
    for path in MANIFESTS:
        asked = manifest_scopes(path)
        assert asked - needed == set(), f"{path.name} asks for scopes nothing uses"
        assert needed - asked == set(), f"{path.name} lacks scopes the code needs"


def test_the_users_read_scope_is_gone() -> None:
    for path in MANIFESTS:
        assert "users:read" not in manifest_scopes(path)
