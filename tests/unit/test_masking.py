"""One masker for every URL mlcost shows: userinfo and credential-looking query parameters."""

from __future__ import annotations

import pytest

from bot.logs import Redactor, poll_source_passwords
from bot.masking import mask_text, mask_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://oc:9003/allocation?window=7d", "http://oc:9003/allocation?window=7d"),
        ("http://u:pw@oc:9003/x", "http://u:***@oc:9003/x"),
        ("https://tok3n@oc/x", "https://***@oc/x"),
        (
            "http://oc/a?token=t1&Access_Token=t2&api-key=t3&APIKEY=t4&key=t5&secret=t6"
            "&password=t7&sig=t8&signature=t9&auth=t10&window=7d",
            "http://oc/a?token=***&Access_Token=***&api-key=***&APIKEY=***&key=***&secret=***"
            "&password=***&sig=***&signature=***&auth=***&window=7d",
        ),
        (
            "https://b.s3.amazonaws.com/f?X-Amz-Credential=AKIA%2F1&X-Amz-Signature=ab12"
            "&X-Amz-Security-Token=FwoG&X-Amz-Expires=60",
            "https://b.s3.amazonaws.com/f?X-Amz-Credential=***&X-Amz-Signature=***"
            "&X-Amz-Security-Token=***&X-Amz-Expires=60",
        ),
        ("http://oc:bad-port/a?token=t1", "http://oc:bad-port/a?token=***"),
    ],
)
def test_mask_url(url: str, shown: str) -> None:
    assert mask_url(url) == shown


def test_every_url_in_a_line_is_masked_and_the_rest_kept() -> None:
    line = "poll of opencost:http://r:pw@oc/a?sig=zz9 failed (see https://docs/x?page=2)"
    assert mask_text(line) == (
        "poll of opencost:http://r:***@oc/a?sig=*** failed (see https://docs/x?page=2)"
    )


def test_log_lines_never_show_a_polled_urls_query_secret() -> None:
    entries = "opencost:http://oc:9003/?token=tok-0123456789&window=7d"
    secrets = poll_source_passwords(entries)
    assert secrets == ["tok-0123456789"]
    redact = Redactor(secrets)
    assert redact("OpenCost said: bad token tok-0123456789") == "OpenCost said: bad token ***"
    assert "tok-0123456789" not in redact("GET http://oc:9003/?token=tok-0123456789 failed")
