"""Parse each botocore JSON file once per test process, not once per boto3 session.

moto's `mock_aws` resets boto3's default session on entry, and moto builds sessions of its own
(e.g. per EKS role check), so each mocked test parsed the same service models, endpoints and
partitions again: about a quarter of the time of the moto-heavy test files. botocore already
shares one loaded model among every client of a session (its loader's instance cache) and only
ever merges the same `sdk-extras` into it, so sharing it among sessions changes nothing else,
except for the S3 models botocore edits in place (below), which are not shared.
"""

from __future__ import annotations

from typing import Any

from botocore.loaders import JSONFileLoader

_loaded: dict[str, Any] = {}
_load_file = JSONFileLoader.load_file


# botocore edits these services' operation models in place on a client's first call
# (handlers.remove_bucket_from_url_paths_from_model, remove_accid_host_prefix_from_model):
# shared, the edit reached every later session, and moto then routed S3 by '' ("URL rule ''
# must start with a slash"). They are parsed per session, as botocore does.
_EDITED_BY_BOTOCORE = ("/s3/", "/s3control/")


def _load_file_once(self: JSONFileLoader, file_path: str) -> Any:
    if any(service in file_path for service in _EDITED_BY_BOTOCORE):
        return _load_file(self, file_path)
    if file_path not in _loaded:
        _loaded[file_path] = _load_file(self, file_path)
    return _loaded[file_path]


def share_loaded_aws_models() -> None:
    """Install the process-wide cache (tests only; idempotent)."""
    JSONFileLoader.load_file = _load_file_once  # type: ignore[method-assign]
