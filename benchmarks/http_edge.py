"""Benchmark the HTTP edge: acks under 200 concurrent signed requests, /healthz under 1,000 slow
connections.

    python benchmarks/http_edge.py [--server waitress|wsgiref] [--concurrent 200] [--rounds 3]
                                   [--slow 1000] [--trickle 10] [--probe 20]

Serves the real Bolt app (`build_wsgi_app`: the edge checks, Bolt, /healthz) on a migrated
SQLite file with its WebClient on the local fake Slack Web API, and drives it from separate
client processes (asyncio, so 1,000 sockets cost the client one thread):

1. acks: `--rounds` times, `--concurrent` signed `/mlcost help` requests are sent at once, each on
   its own connection; the latency of each is from connect to the whole answer (a reset counts
   as status 0).
2. slow connections: `--slow` clients connect and send a request line and one header, then one
   more header line every `--trickle` seconds (under the server's 30 s idle timeout), never
   finishing; once they are all connected (or after 60 s), another process times `GET /healthz`
   on a new connection four times a second for `--probe` seconds. Reported with the time the slow
   clients took to connect, and the server's threads, open sockets and RSS while they hold.

`--server wsgiref` serves the same WSGI app on the server mlcost used before (stdlib `wsgiref`
with a thread per connection and a 30 s socket timeout), kept here only to measure against.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import logging
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The client processes import this module too: only light imports here, the app's in main().
from tests.support.slack_requests import FORM, signed_headers, slash_command  # noqa: E402

HEALTHZ_TIMEOUT = 30.0


class _LegacyServer(ThreadingMixIn, WSGIServer):
    """mlcost's server before waitress: one daemon thread per connection, HTTP/1.0."""

    daemon_threads = True


class _LegacyHandler(WSGIRequestHandler):
    timeout = 30  # a client that stalls mid-request frees its thread after this many seconds

    def log_message(self, format: str, *args: Any) -> None:
        pass


class LegacyEdge:
    """The old edge: `wsgiref.simple_server` + `ThreadingMixIn` around the same WSGI app."""

    def __init__(self, wsgi: Callable[..., Any]) -> None:
        self.server = make_server(
            "127.0.0.1", 0, wsgi, server_class=_LegacyServer, handler_class=_LegacyHandler
        )
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start_edge(kind: str, wsgi: Callable[..., Any], max_body_bytes: int) -> Any:
    """Start the named server on a free port around the WSGI app."""
    from bot.web.server import HttpServer

    if kind == "wsgiref":
        edge: Any = LegacyEdge(wsgi)
        edge.start()
        return edge
    server = HttpServer(wsgi, "127.0.0.1", 0, max_body_bytes=max_body_bytes)
    server.start()
    return server


def open_sockets() -> int:
    """Return how many sockets this process has open (from /proc)."""
    count = 0
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):
            count += os.readlink(fd).startswith("socket:")
    return count


def rss_mb() -> float:
    """Return this process's resident memory in MB (from /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentile(values: list[float], pct: float) -> float:
    """Return the pct-th percentile (nearest rank)."""
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def describe(values: list[float]) -> str:
    return (
        f"p50 {statistics.median(values) * 1000:.0f} ms, p99 {percentile(values, 99) * 1000:.0f} "
        f"ms, max {max(values) * 1000:.0f} ms"
    )


# --- client processes (spawned: they import this module, not the server's state) ------------


async def _exchange(port: int, request: bytes) -> tuple[int, float]:
    """Send one request on a new connection; return (status, seconds to the whole answer)."""
    started = time.perf_counter()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(request)
            await writer.drain()
            answer = await reader.read()  # Connection: close, so the answer ends at EOF
        finally:
            writer.close()
    except OSError:  # refused or reset: counted as status 0
        return 0, time.perf_counter() - started
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else 0
    return status, time.perf_counter() - started


def _signed_command(port: int, fake_url: str, n: int) -> bytes:
    body = slash_command(
        "help", user="U0AAA111", channel="C1", response_url=f"{fake_url}respond/bench-{n}"
    ).encode()
    head = {
        "Host": f"127.0.0.1:{port}",
        "Content-Length": str(len(body)),
        "Connection": "close",
        **signed_headers(body, content_type=FORM),
    }
    lines = "".join(f"{k}: {v}\r\n" for k, v in head.items())
    return f"POST /slack/events HTTP/1.1\r\n{lines}\r\n".encode() + body


def concurrent_acks(port: int, fake_url: str, concurrent: int, rounds: int, out: Any) -> None:
    """Send `concurrent` signed commands at once, `rounds` times; put [(status, seconds)]."""

    async def main() -> list[tuple[int, float]]:
        results: list[tuple[int, float]] = []
        for r in range(rounds):
            requests = [
                _signed_command(port, fake_url, r * concurrent + i) for i in range(concurrent)
            ]
            results += await asyncio.gather(*(_exchange(port, q) for q in requests))
            if r < rounds - 1:
                await asyncio.sleep(1.0)  # let the replies to response_url drain between rounds
        return results

    out.put(asyncio.run(main()))


def slow_connections(port: int, count: int, trickle: float, stop: Any, out: Any) -> None:
    """Hold `count` connections that send a header line every `trickle` s; report on them."""

    async def one(i: int, opened: list[float]) -> None:
        started = time.perf_counter()
        try:
            _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            await writer.drain()
        except OSError:
            return
        opened.append(time.perf_counter() - started)
        try:
            while not stop.is_set():
                await asyncio.sleep(trickle)
                writer.write(f"X-Slow-{i}: still sending\r\n".encode())
                await writer.drain()
        except OSError:
            pass  # the server gave up on us
        finally:
            writer.close()

    async def main() -> None:
        opened: list[float] = []
        t0 = time.perf_counter()
        tasks = [asyncio.create_task(one(i, opened)) for i in range(count)]
        deadline = t0 + 60
        while len(opened) < count and time.perf_counter() < deadline:
            await asyncio.sleep(0.05)
        out.put(("connected", len(opened), time.perf_counter() - t0))
        while not stop.is_set():
            await asyncio.sleep(0.2)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(main())


def probe_healthz(port: int, seconds: float, out: Any) -> None:
    """GET /healthz on a new connection four times a second; put [(status, seconds)]."""
    request = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"

    async def main() -> list[tuple[int, float]]:
        results: list[tuple[int, float]] = []
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            tick = time.perf_counter()
            try:
                results.append(
                    await asyncio.wait_for(_exchange(port, request.encode()), HEALTHZ_TIMEOUT)
                )
            except (TimeoutError, OSError):
                results.append((0, HEALTHZ_TIMEOUT))
            await asyncio.sleep(max(0.0, 0.25 - (time.perf_counter() - tick)))
        return results

    out.put(asyncio.run(main()))


# --- the server process -----------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=["waitress", "wsgiref"], default="waitress")
    parser.add_argument("--concurrent", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--slow", type=int, default=1000)
    parser.add_argument("--trickle", type=float, default=10.0)
    parser.add_argument("--probe", type=float, default=20.0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)

    from bot.bootstrap import AppServices
    from bot.config import SecretStr, Settings
    from bot.db.engine import make_engine, make_session_factory, upgrade
    from bot.slack.app import build_app, identify_bot
    from bot.slack.client import make_web_client
    from bot.web.server import build_wsgi_app
    from tests.support.fake_slack import FakeSlack

    folder = Path(tempfile.mkdtemp(prefix="mlcost-bench-http-"))
    url = f"sqlite:///{folder / 'bench.db'}"
    engine = make_engine(url)
    upgrade(engine)
    fake = FakeSlack().start()
    # Slack takes far more than the fake's backlog of 5 at once; the fake is not what is measured
    fake.server.socket.listen(1024)
    settings = Settings(
        database_url=url,
        slack_bot_token=SecretStr("xoxb-bench"),
        slack_signing_secret=SecretStr("test-signing-secret"),
        slack_api_url=fake.url,
    )
    services = AppServices(
        settings=settings,
        session_factory=make_session_factory(engine),
        client=make_web_client(settings),
        clock=lambda: dt.datetime.now(dt.UTC),
    )
    # as `mlcost serve` does: auth.test once at start, never per request
    app = build_app(services, identity=identify_bot(services.client))
    edge = start_edge(args.server, build_wsgi_app(app, services), settings.max_body_bytes)
    spawn = multiprocessing.get_context("spawn")
    results = spawn.Queue()
    print(f"server: {args.server} on port {edge.port}")

    # 1. acks under concurrent signed requests
    client = spawn.Process(
        target=concurrent_acks,
        args=(edge.port, fake.url, args.concurrent, args.rounds, results),
    )
    client.start()
    acks = results.get(timeout=600)
    client.join()
    statuses = Counter(status for status, _ in acks)  # 0: the connection was reset
    print(
        f"acks, {args.concurrent} concurrent signed `/mlcost help` x {args.rounds} rounds: "
        f"{describe([s for _, s in acks])}; statuses {dict(sorted(statuses.items()))}"
    )
    print(f"  threads after: {threading.active_count()}, RSS {rss_mb():.0f} MB")

    # 2. /healthz while slow connections are held open
    stop = spawn.Event()
    slow = spawn.Process(
        target=slow_connections, args=(edge.port, args.slow, args.trickle, stop, results)
    )
    slow.start()
    _, connected, took = results.get(timeout=120)
    print(f"slow connections: {connected} of {args.slow} connected in {took:.1f} s")
    probe = spawn.Process(target=probe_healthz, args=(edge.port, args.probe, results))
    probe.start()
    peak_threads, peak_rss, peak_sockets = 0, 0.0, 0
    while probe.is_alive():
        peak_threads = max(peak_threads, threading.active_count())
        peak_rss = max(peak_rss, rss_mb())
        peak_sockets = max(peak_sockets, open_sockets())
        time.sleep(0.2)
    health = results.get(timeout=60)
    probe.join()
    stop.set()
    slow.join(timeout=60)
    ok = [s for status, s in health if status == 200]
    print(
        f"/healthz with {connected} slow connections open: {len(ok)} of {len(health)} answered "
        f"200; {describe([s for _, s in health])}"
    )
    print(
        f"  server while they hold: threads {peak_threads}, sockets open {peak_sockets}, "
        f"RSS {peak_rss:.0f} MB"
    )
    edge.close()
    fake.stop()
    engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
