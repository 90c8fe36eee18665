"""OpenCost answers for tests: allocations built field by field, and a local HTTP server."""

from __future__ import annotations

import datetime as dt
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit


def allocation(
    name: str,
    day: dt.date,
    *,
    cluster: str = "eks-ml",
    namespace: str | None = None,
    cpu: str = "0",
    ram: str = "0",
    gpu: str = "0",
    pv: str = "0",
    gpu_hours: str | None = None,
    gpu_count: str | None = None,
    minutes: str = "1440",
    labels: dict[str, str] | None = None,
    namespace_labels: dict[str, str] | None = None,
    total: str | None = None,
    provider_id: str | None = None,
) -> dict[str, Any]:
    """One allocation of a daily set, in OpenCost's JSON shape (amounts as text, summed exactly).

    `total` defaults to the sum of the components (what OpenCost computes).
    """
    start = dt.datetime.combine(day, dt.time(), dt.UTC)
    window = {
        "start": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "end": (start + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    props: dict[str, Any] = {"cluster": cluster}
    if namespace is not None:
        props["namespace"] = namespace
    if labels:
        props["labels"] = labels
    if namespace_labels:
        props["namespaceLabels"] = namespace_labels
    if provider_id is not None:
        props["providerID"] = provider_id  # the node's: `i-...` or `aws:///zone/i-...`
    parts = {"cpuCost": cpu, "ramCost": ram, "gpuCost": gpu, "pvCost": pv}
    answer: dict[str, Any] = {
        "name": name,
        "properties": props,
        "window": window,
        "start": window["start"],
        "end": window["end"],
        "minutes": minutes,
        **parts,
        "cpuCostAdjustment": "0",
        "gpuCostAdjustment": "0",
        "ramCostAdjustment": "0",
        "pvCostAdjustment": "0",
        "networkCost": "0",
        "loadBalancerCost": "0",
        "sharedCost": "0",
        "externalCost": "0",
        "totalCost": total or str(sum(Decimal(v) for v in parts.values())),
    }
    if gpu_hours is not None:
        answer["gpuHours"] = gpu_hours
    if gpu_count is not None:
        answer["gpuCount"] = gpu_count
    return answer


def allocation_answer(*sets: list[dict[str, Any]]) -> str:
    """Return an `/allocation` answer: one set per list, amounts written as JSON numbers."""
    data = [{a["name"]: a for a in allocations} for allocations in sets]
    text = json.dumps({"code": 200, "status": "success", "data": data})
    # the builders keep amounts as text so they stay exact; OpenCost writes numbers
    for key in ("minutes", "Cost", "Adjustment", "gpuHours", "gpuCount", "totalCost"):
        text = _unquote_numbers(text, key)
    return text


def _unquote_numbers(text: str, key_suffix: str) -> str:
    return re.sub(rf'("\w*{key_suffix}": )"(-?[0-9.]+)"', r"\1\2", text)


@dataclass
class Answer:
    """What the fake OpenCost answers: a status and a body."""

    status: int = 200
    body: str = ""
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)


@contextmanager
def opencost_server(answer: Answer) -> Iterator[str]:
    """Serve `answer` on 127.0.0.1 (any path); yield the base URL; record each request."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            answer.requests.append((parts.path, dict(parse_qsl(parts.query))))
            if auth := self.headers.get("Authorization"):
                answer.authorizations.append(auth)
            body = answer.body.encode()
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    with serving(Handler) as port:
        yield f"http://127.0.0.1:{port}"


@contextmanager
def serving(
    handler: type[BaseHTTPRequestHandler], stopping: threading.Event | None = None
) -> Iterator[int]:
    """Serve `handler` on 127.0.0.1, port 0, in a thread; yield the port.

    On exit `stopping` is set first (so a handler holding a connection lets go), then the server
    is shut down and its thread joined.
    """
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield httpd.server_address[1]
    finally:
        if stopping is not None:
            stopping.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()
