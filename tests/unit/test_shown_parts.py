"""Amounts shown with their total add up to it (largest remainder, bot/money.py)."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from bot.money import largest_remainder, shown_parts

AMOUNTS = st.lists(
    st.decimals(min_value=-10_000, max_value=100_000, places=10, allow_nan=False), max_size=30
)


@given(AMOUNTS, st.sampled_from([0, 2]))
def test_shown_parts_add_up_to_the_shown_total_and_move_less_than_a_unit(
    values: list[Decimal], places: int
) -> None:
    parts, total = shown_parts(values, places)
    unit = Decimal(1).scaleb(-places)
    assert sum(parts, Decimal(0)) == total
    assert total == sum(values, Decimal(0)).quantize(unit)
    assert all(abs(part - value) < unit for part, value in zip(parts, values, strict=True))
    assert all(part == part.quantize(unit) for part in parts)


def test_the_demo_rows_that_lost_a_cent_to_rounding_get_it_back() -> None:
    # three lines of 1/3 each: shown alone 0.33 + 0.33 + 0.33 = 0.99 under a total of 1.00
    third = Decimal(1) / 3
    parts, total = shown_parts([third, third, third], 2)
    assert total == Decimal("1.00") and sorted(parts) == [
        Decimal("0.33"),
        Decimal("0.33"),
        Decimal("0.34"),
    ]
    assert largest_remainder(
        {"a": Decimal("2.6"), "b": Decimal("1.4")}, Decimal(4), Decimal(1)
    ) == {
        "a": Decimal(3),
        "b": Decimal(1),
    }


def test_a_breakdown_shown_in_whole_dollars_adds_up_to_its_total() -> None:
    from bot.money import shown_breakdown

    # $100.40 + $100.40 + $100.40 = $301.20: shown alone, $100 + $100 + $100 under $301
    places, shown = shown_breakdown([Decimal("100.40")] * 3, Decimal("301.20"))
    assert places == 0 and sum(shown) == Decimal(301) and sorted(shown)[-1] == Decimal(101)
    # parts that are not the whole are only rounded
    assert shown_breakdown([Decimal("1.005")], Decimal(5)) == (2, [Decimal("1.00")])


def test_parts_shown_within_a_shown_total_add_up_to_it() -> None:
    from bot.money import shown_within

    # a group of $100.40 shown as $101 (it took the unit its siblings lost): its parts follow
    parts = [Decimal("33.48"), Decimal("33.46"), Decimal("33.46")]
    assert sum(shown_within(parts, Decimal(101), 0)) == Decimal(101)
    assert sum(shown_within(parts, Decimal(100), 0)) == Decimal(100)
    # parts that are not the whole are only rounded
    assert shown_within(parts[:1], Decimal(101), 0) == [Decimal(33)]
