"""Parse each botocore JSON file once per test process, not once per boto3 session.

moto's `mock_aws` resets boto3's default session on entry, and moto builds sessions of its own
(e.g. per EKS role check), so each mocked test parsed the same service models, endpoints and
partitions again: about a quarter of the time of the moto-heavy test files. botocore already
shares one loaded model among every client of a session (its loader's instance cache) and only
ever merges the same `sdk-extras` into it, so sharing it among sessions changes nothing else.
"""

from __future__ import annotations

from typing import Any

from botocore.loaders import JSONFileLoader

_loaded: dict[str, Any] = {}
_load_file = JSONFileLoader.load_file


def _load_file_once(self: JSONFileLoader, file_path: str) -> Any:
    if file_path not in _loaded:
        _loaded[file_path] = _load_file(self, file_path)
    return _loaded[file_path]


def share_loaded_aws_models() -> None:
    """Install the process-wide cache (tests only; idempotent)."""
    JSONFileLoader.load_file = _load_file_once  # type: ignore[method-assign]
