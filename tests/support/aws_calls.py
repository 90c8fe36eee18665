"""An AWS client factory for tests: one moto-backed client per (service, region), calls counted."""

from __future__ import annotations

from collections import Counter
from typing import Any

import boto3


class CountingAws:
    """`aws(service, region)` like bot.bootstrap.aws_client, counting each API call it makes."""

    def __init__(self) -> None:
        self.clients: dict[tuple[str, str], Any] = {}
        self.calls: Counter[str] = Counter()

    def __call__(self, service: str, region: str | None = None) -> Any:
        key = (service, region or "us-east-1")
        if key not in self.clients:
            client = boto3.client(service, region_name=key[1])  # type: ignore[call-overload]
            client.meta.events.register("before-call", self._count)
            self.clients[key] = client
        return self.clients[key]

    def _count(self, event_name: str, **kwargs: Any) -> None:
        service, operation = event_name.split(".", 2)[1:]
        self.calls[f"{service}:{operation}"] += 1
