"""Registry rules on the usage account: a model's `match: {accounts: ...}`, a team's account."""

from __future__ import annotations

import pytest

from bot.errors import RegistryError
from bot.ingest.attribution import AttributionRules, ChargeFacts, ModelMatcher, attribute
from bot.registry.spec import parse_registry

AZURE_SUB = "/subscriptions/64e355d7-997c-491d-b0c1-8414dccfcf42"

RULES = AttributionRules.build(
    models=[
        ModelMatcher("recsys", "ranking"),
        ModelMatcher("fraud", "risk", accounts=("011254002932",)),
        ModelMatcher("ocr", "vision", accounts=("64E355D7-997C-491D-B0C1-8414DCCFCF42",)),
        ModelMatcher("org-wide", "platform", accounts=("999999999999",)),
    ],
    teams=["ranking", "risk", "vision", "platform", "research"],
    model_tag_keys=["ml:model"],
    stage_tag_keys=["ml:stage"],
    team_tag_keys=["team"],
    account_teams={"llm-research-552190": "research"},
)


def charge(sub: str | None, billing: str = "836060457634", **tags: str) -> ChargeFacts:
    return ChargeFacts(service="Amazon EC2", tags=tags, billing_account=billing, sub_account=sub)


def test_a_linked_account_is_claimed_by_its_model_and_no_other() -> None:
    assert attribute(charge("011254002932"), RULES).model == "fraud"
    assert attribute(charge("836060457634"), RULES).model is None


def test_a_billing_account_rule_claims_every_account_under_it() -> None:
    # the payer's id claims the spend of all its linked accounts, not only the payer's own
    claimed = attribute(charge("123456789012", billing="999999999999"), RULES)
    assert (claimed.model, claimed.team, claimed.rule) == ("org-wide", "platform", "rule")


def test_an_azure_subscription_matches_by_its_bare_id_in_any_case() -> None:
    assert attribute(charge(AZURE_SUB, billing="8611537"), RULES).model == "ocr"
    assert attribute(charge(AZURE_SUB.upper(), billing="8611537"), RULES).model == "ocr"


def test_a_model_tag_still_wins_over_an_account_rule() -> None:
    assert attribute(charge("011254002932", **{"ml_model": "recsys"}), RULES).model == "recsys"


def test_an_accounts_team_gets_the_spend_no_model_claims() -> None:
    result = attribute(charge("llm-research-552190", billing="01A2B3-C4D5E6-F7A8B9"), RULES)
    assert (result.model, result.team) == (None, "research")
    # a model's own team wins, and so does an explicit team tag
    tagged = attribute(charge("llm-research-552190", ml_model="recsys"), RULES)
    assert (tagged.model, tagged.team) == ("recsys", "ranking")
    assert attribute(charge("llm-research-552190", team="risk"), RULES).team == "risk"
    assert attribute(charge("other-project"), RULES).team is None


BASE = """\
teams:
  - {name: ranking}
  - {name: research}
models:
  - name: fraud
    team: ranking
    match: {accounts: ACCOUNTS}
"""


def with_accounts(accounts: str, tail: str = "") -> str:
    return BASE.replace("ACCOUNTS", accounts) + tail


def test_accounts_may_be_one_quoted_id_or_a_list() -> None:
    one = parse_registry(with_accounts('"011254002932"'))
    assert one.models[0].match.accounts == ["011254002932"]
    many = parse_registry(with_accounts('["011254002932", "836060457634"]'))
    assert many.models[0].match.accounts == ["011254002932", "836060457634"]


@pytest.mark.parametrize("value", ["123456789012", "[123456789012]", "[0123]"])
def test_an_unquoted_account_id_is_refused_with_the_fix(value: str) -> None:
    # YAML reads 123456789012 as a number and 0123 as octal 83: quote account ids
    with pytest.raises(RegistryError) as exc:
        parse_registry(with_accounts(value))
    assert "registry:7: models.0.match.accounts" in str(exc.value)
    assert 'quote account ids: ["123456789012"]' in str(exc.value)


def test_account_teams_must_name_a_known_team_and_a_real_account() -> None:
    teams = 'attribution:\n  account_teams: {"llm-research-552190": research}\n'
    good = parse_registry(with_accounts('"1"', teams))
    assert good.attribution.account_teams == {"llm-research-552190": "research"}
    unknown = "attribution:\n  account_teams: {x: nosuch}\n"
    with pytest.raises(RegistryError, match=r"registry:9: attribution.account_teams.x: unknown"):
        parse_registry(with_accounts('"1"', unknown))
    number = "attribution:\n  account_teams: {123456789012: research}\n"
    with pytest.raises(RegistryError, match="quote account ids"):
        parse_registry(with_accounts('"1"', number))
