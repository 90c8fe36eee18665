import pytest

from bot.errors import RegistryError
from bot.registry import parse_registry

GOOD = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
models:
  - name: recsys
    team: ranking
    owners: [U0AAA111]
    channel: C0RECSYS
    match: {tags: {"ml:model": recsys}}
  - name: checkout
    team: ranking
    match: {tags: {application: checkout}}
budgets:
  - {scope: "model:recsys", monthly: 12000, thresholds: [50, 80, 100], forecast: true}
  - {scope: "team:ranking", monthly: 40000, thresholds: [80, 100]}
  - {scope: "model:recsys/stage:training", monthly: 5000}
admins: [U0ADMIN01]
finops_channel: C0FINOPS
attribution:
  model_tag_keys: ["ml:model", model]
  stage_tag_keys: ["ml:stage", stage]
  team_tag_keys: [team]
"""


def test_the_documented_example_parses() -> None:
    spec = parse_registry(GOOD)
    assert [m.name for m in spec.models] == ["recsys", "checkout"]
    assert spec.budgets[2].thresholds == [50, 80, 100]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "team: ranking\n    owners",
            "team: rankng\n    owners",
            "registry:5: models.0.team: unknown team 'rankng'",
        ),
        ("monthly: 40000", "monthly: -5", "registry:14: budgets.1.monthly:"),
        ("name: checkout", "name: recsys", "registry:9: models.1.name: duplicate model 'recsys'"),
        ("owners: [U0AAA111]}", "owners: [bob]}", "registry:2: teams.0.owners"),
        ('"team:ranking"', '"team:nobody"', "registry:14: budgets.1.scope: unknown team"),
        (
            '"model:recsys/stage:training"',
            '"model:recsys/stage:lunch"',
            "registry:15: budgets.2.scope",
        ),
    ],
)
def test_errors_name_the_line_and_the_field(old: str, new: str, expected: str) -> None:
    with pytest.raises(RegistryError) as info:
        parse_registry(GOOD.replace(old, new, 1))
    assert expected in str(info.value)


def test_broken_yaml_names_the_line() -> None:
    with pytest.raises(RegistryError, match="line 3"):
        parse_registry("teams:\n  - {name: a\n  - b: [\n")
