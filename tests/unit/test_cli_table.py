"""The command line's one table layout: aligned columns, titles over their cells."""

from __future__ import annotations

import pytest

from bot.cli.table import Column, Table


def test_right_aligned_titles_sit_over_their_numbers_and_lines_end_clean() -> None:
    table = Table(
        [Column("team"), Column("total", right=True), Column("note")],
        [["nlp", "$92,361.12", ""], ["risk", "$6.00", "shared"]],
    )
    assert table.lines(rule=True) == [
        "team       total  note",
        "----  ----------  ------",
        "nlp   $92,361.12",
        "risk       $6.00  shared",
    ]


def test_a_capped_column_cuts_long_cells_with_an_ellipsis() -> None:
    table = Table([Column("who", cut=5), Column("what")], [["someone-long", "x"]])
    assert table.lines() == ["who    what", "some…  x"]


def test_a_row_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="2 cells for 3 columns"):
        Table([Column("a"), Column("b"), Column("c")], [["1", "2"]])


def test_a_table_without_rows_is_its_header() -> None:
    assert Table([Column("a"), Column("bb", right=True)], []).lines() == ["a  bb"]
