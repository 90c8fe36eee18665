"""`/mlcost owner set <model> <@user>... [#channel]`."""

from __future__ import annotations

from bot.errors import UsageError
from bot.registry.ownership import set_model_owners
from bot.slack.blocks.common import mention_channel, mention_users, section
from bot.slack.command_args import clip_word, parse_channel, parse_user, split_options
from bot.slack.command_router import Invocation, Reply, subcommand
from bot.slack.mrkdwn import code
from bot.slack.permissions import model_owners_or_admins

USAGE = "owner set <model> <@user>... [#channel]"


def _model_to_change(args: list[str]) -> str | None:
    """Return the model `owner set <model> ...` would change, else None."""
    words, _options = split_options(args, [])
    return words[1] if len(words) >= 3 and words[0].lower() == "set" else None


@subcommand(
    "owner",
    usage=USAGE,
    example="/mlcost owner set recsys @alice @bob #recsys-costs",
    aliases=("owners",),
    permission=model_owners_or_admins(
        _model_to_change,
        "Only the current owners of `{model}` or an admin can change its owners.",
    ),
)
def handle_owner_command(inv: Invocation) -> Reply:
    """Change who owns a model and where its alerts go (owners and admins)."""
    words, _options = split_options(inv.args, [])
    if len(words) < 3 or words[0].lower() != "set":
        raise UsageError(
            f"Usage: `/mlcost {USAGE}`, e.g. `/mlcost owner set recsys @alice @bob #recsys-costs`"
        )
    model, targets = words[1], words[2:]
    users: list[str] = []
    channel: str | None = None
    for word in targets:
        user = parse_user(word)
        if user is not None:
            users.append(user)
            continue
        found = parse_channel(word)
        if found is None:
            raise UsageError(
                f"`{clip_word(word)}` is not a Slack user or channel; pick "
                "people and the channel from Slack's autocomplete "
                "(`@name`, `#channel`)"
            )
        if channel is not None:
            raise UsageError("give at most one channel")
        channel = found
    change = set_model_owners(
        session=inv.session, user_id=inv.user_id, model_name=model, owners=users, channel=channel
    )
    text = (
        f"{mention_users([inv.user_id])} set the owners of {code(change.model)} to "
        f"{mention_users(change.owners_after)}"
        + (f" (were {mention_users(change.owners_before)})" if change.owners_before else "")
        + (
            f"; its channel is {mention_channel(change.channel_after)}"
            if change.channel_after
            else ""
        )
        + "."
    )
    return Reply(text=text, blocks=[section(f":white_check_mark: {text}")], in_channel=True)
