"""The Spot Instance Advisor feed: the bundled snapshot, lookups, and files that are not a feed."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from bot.errors import UsageError
from bot.waste.spot import BUNDLED, SpotAdvisor, load_spot_advisor


def test_the_bundled_snapshot_has_the_documented_values() -> None:
    advisor = load_spot_advisor()
    # values from the feed's us-east-1 Linux table (see bot/waste/data/README.md)
    p4d = advisor.offer("us-east-1", "p4d.24xlarge")
    assert p4d is not None and (p4d.savings_pct, p4d.band, p4d.band_label) == (67, 2, "10-15%")
    trn1 = advisor.offer("us-east-1", "trn1.32xlarge")
    assert trn1 is not None and (trn1.savings_pct, trn1.band) == (79, 0)
    sagemaker = advisor.offer("us-east-1", "ml.p4d.24xlarge")  # SageMaker's prefix is dropped
    assert sagemaker == p4d
    assert advisor.offer("us-east-1", "nope.large") is None
    assert advisor.offer("mars-north-1", "p4d.24xlarge") is None
    assert advisor.offer(None, "p4d.24xlarge") is None


def test_a_fresh_feed_from_a_file_plain_or_gzipped(tmp_path: Path) -> None:
    tables = {
        "Linux": {"g6e.xlarge": {"s": 61, "r": 1}},
        "Windows": {"g6e.xlarge": {"s": 20, "r": 0}},
    }
    feed = {
        "ranges": [{"index": 0, "label": "<5%"}, {"index": 1, "label": "5-10%"}],
        "spot_advisor": {"eu-west-1": tables},
    }
    plain = tmp_path / "feed.json"
    plain.write_text(json.dumps(feed))
    zipped = tmp_path / "feed.json.gz"
    zipped.write_bytes(gzip.compress(json.dumps(feed).encode()))
    for path in (plain, zipped):
        offer = load_spot_advisor(path).offer("eu-west-1", "g6e.xlarge")
        assert offer is not None and (offer.savings_pct, offer.band_label) == (61, "5-10%")
        assert str(offer.price_ratio) == "0.39"


def test_files_that_are_not_a_feed_say_so(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    with pytest.raises(UsageError, match="cannot read the Spot Instance Advisor feed"):
        load_spot_advisor(missing)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(UsageError, match="cannot read"):
        load_spot_advisor(broken)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"regions": []}))
    with pytest.raises(UsageError, match="not a Spot Instance Advisor feed"):
        load_spot_advisor(wrong)
    assert BUNDLED.exists()


def test_an_advisor_built_from_a_dict_without_ranges_uses_the_standard_bands() -> None:
    advisor = SpotAdvisor(
        {"spot_advisor": {"us-west-2": {"Linux": {"g5.xlarge": {"s": 60, "r": 4}}}}}
    )
    offer = advisor.offer("us-west-2", "g5.xlarge")
    assert offer is not None and offer.band_label == ">20%"
