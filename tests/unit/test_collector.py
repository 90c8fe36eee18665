"""bot.collector.paused: the cyclic collector is off inside, and left as it was found."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from bot import collector


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_the_collector_is_off_inside_and_on_again_after() -> None:
    with collector.paused():
        assert not gc.isenabled()
        with collector.paused():  # nested: still off, and the outer block turns it on
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_an_error_inside_turns_it_on_again() -> None:
    with pytest.raises(ValueError), collector.paused():
        raise ValueError("boom")
    assert gc.isenabled()


def test_a_collector_someone_else_turned_off_stays_off() -> None:
    gc.disable()
    with collector.paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
