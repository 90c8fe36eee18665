"""The cost basis is one enum wherever a user names it: Slack's --cost, the CLI, the settings."""

from __future__ import annotations

import pytest

from bot.config import Settings
from bot.errors import UsageError
from bot.money import CostBasis
from bot.slack.command_args import cost_basis


def test_slack_cost_option_parses_to_the_enum_and_keeps_its_message() -> None:
    assert cost_basis({}) is CostBasis.BILLED
    assert cost_basis({"--cost": "Effective"}) is CostBasis.EFFECTIVE
    with pytest.raises(UsageError) as refused:
        cost_basis({"--cost": "amortised"})
    assert str(refused.value) == "`--cost` is billed or effective, not `amortised`"


def test_the_budget_cost_basis_setting_is_the_enum_with_its_plain_value() -> None:
    setting = Settings(MLCOST_BUDGET_COST_BASIS="effective").budget_cost_basis
    assert setting is CostBasis.EFFECTIVE
    assert f"{setting}" == "effective" and setting == "effective"
