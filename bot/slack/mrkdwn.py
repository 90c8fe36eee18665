"""Slack mrkdwn from text we did not write: escaped, clipped at safe points (pure).

Slack reads `<...>` as links and mentions (`<!channel>`, `<@U1>`, `<https://x|y>`) and `&` as the
start of an escape, so every value that did not come from our own templates (names and tags from
billing files and the registry, resource ids, services, review reasons, user-typed words) goes
through `escape` (or `code`/`bold`) before it reaches a mrkdwn text or a message's fallback text.
Backticks from outside are replaced too, so every backtick in our output opens or closes a code
span of ours, and a cut can tell whether it is inside one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

# Slack member IDs (U…, or W… on Enterprise Grid) and conversation IDs are uppercase alphanumeric.
USER_ID = re.compile(r"[UW][A-Z0-9]{2,30}")
CHANNEL_ID = re.compile(r"[CG][A-Z0-9]{2,30}")
ELLIPSIS = "…"
SAFE_BACKTICK = "\u02cb"  # ˋ: looks like a backtick, opens no code span

_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "`": SAFE_BACKTICK})


def escape(text: object) -> str:
    """Return text with & < > escaped and backticks neutralised, safe anywhere in mrkdwn."""
    return str(text).translate(_ESCAPES)


def code(text: object) -> str:
    """Return text as an inline code span that nothing inside can close or break."""
    body = escape(text).replace("\r", " ").replace("\n", " ")
    return f"`{body or ' '}`"


def bold(text: object) -> str:
    """Return text in bold (escaped)."""
    return f"*{escape(text)}*"


def is_user_id(value: str) -> bool:
    """Return whether value looks like a Slack user ID (so `<@value>` is a real mention)."""
    return USER_ID.fullmatch(value) is not None


def user(user_id: str) -> str:
    """Return `<@U1>` for a valid user ID; anything else is shown as escaped text, not a link."""
    return f"<@{user_id}>" if is_user_id(user_id) else escape(user_id)


def users(user_ids: Iterable[str], sep: str = ", ") -> str:
    """Return the users as mentions (see `user`), joined by sep."""
    return sep.join(user(u) for u in user_ids)


def channel(channel_id: str) -> str:
    """Return `<#C1>` for a valid channel ID; anything else is shown as escaped text."""
    return f"<#{channel_id}>" if CHANNEL_ID.fullmatch(channel_id) else escape(channel_id)


def clip(text: str, limit: int) -> str:
    """Shorten mrkdwn to the limit with a visible `…`, never cutting an escape, a mention or a
    code span in two."""
    if len(text) <= limit:
        return text
    head = text[: max(0, limit - len(ELLIPSIS))]
    amp = head.rfind("&")
    if amp != -1 and ";" not in head[amp:]:
        head = head[:amp]  # inside &amp; &lt; &gt;
    angle = head.rfind("<")
    if angle != -1 and ">" not in head[angle:]:
        head = head[:angle]  # inside one of our <@U1> / <#C1>
    while head.count("`") % 2:
        head = head[: head.rfind("`")]  # every backtick is ours: drop the unclosed span
    return head + ELLIPSIS


def fit_lines(
    lines: Sequence[str],
    limit: int,
    more: Callable[[int], str] = lambda n: f"{ELLIPSIS}and {n} more",
    sep: str = "\n",
) -> str:
    """Join as many whole lines as fit in limit, then say how many were left out."""
    text = sep.join(lines)
    if len(text) <= limit:
        return text
    kept: list[str] = []
    for index, line in enumerate(lines):
        after = len(lines) - index - 1
        if len(sep.join([*kept, line])) + len(sep) + len(more(after)) <= limit:
            kept.append(line)
            continue
        # this line does not fit whole: keep it clipped if that still says something, then stop
        used = len(sep.join(kept)) + (len(sep) if kept else 0)
        room = limit - used - len(sep) - len(more(after))
        rest = len(lines) - index
        if room >= 40:
            kept.append(clip(line, room))
            rest -= 1
        if rest:
            kept.append(more(rest))
        return clip(sep.join(kept), limit)
    return clip(sep.join(kept), limit)


_ESCAPED_MENTION = re.compile(r"&lt;@([UW][A-Z0-9]{2,30})&gt;")


def escape_message(text: object) -> str:
    """Escape an error message for an ephemeral reply: & < > escaped, backticks kept (the
    message's own code spans), and valid user mentions (<@U1>) kept as mentions."""
    body = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _ESCAPED_MENTION.sub(r"<@\1>", body)


def quoted(text: str) -> str:
    """Render plain text whose `backtick` pairs mark names (the waste findings' wording): the
    names as code spans, the rest escaped. A stray backtick from a name only shifts the spans;
    every part is escaped either way."""
    parts = text.split("`")
    return "".join(code(part) if i % 2 else escape(part) for i, part in enumerate(parts))


_MENTION = re.compile(r"<([@#!])([^|>]*)(?:\|([^>]*))?>")
_LINK = re.compile(r"<([^@#!|>][^|>]*)(?:\|([^>]*))?>")
_EMOJI = re.compile(r"(?<![\w:]):[a-z][a-z0-9_+-]*:(?![\w:])\s?")
_BOLD = re.compile(r"(?<![\w*])\*(\S(?:[^*\n]*\S)?)\*(?![\w*])")


def plain(text: str) -> str:
    """Return mrkdwn as terminal text: no emoji codes, code spans, bold or <...> markup.

    `<@U1>` becomes `@U1`, `<#C1|general>` `#general`, `<!here>` `@here`, and a link its label
    followed by its address; escapes are undone last, so escaped text stays what it said.
    """

    def mention(match: re.Match[str]) -> str:
        sigil, target, label = match.groups()
        shown = label or target
        return ("@" if sigil in "@!" else "#") + shown

    def link(match: re.Match[str]) -> str:
        url, label = match.groups()
        return f"{label} ({url})" if label else url

    text = _LINK.sub(link, _MENTION.sub(mention, text))
    text = _BOLD.sub(r"\1", _EMOJI.sub("", text)).replace("`", "")
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
