"""Measure where `mlcost serve`'s memory goes: the server, its chart workers, under chart load.

    python benchmarks/serve_memory.py [--workers 1] [--charts 200] [--max-charts-per-worker 0]

Builds the demo's database (`mlcost demo --dir` in a temporary folder), starts a real
`mlcost serve --http` on it with its Slack Web API on the local fake (the scheduler off), and
sends signed `/mlcost model` commands one after another, each waiting for its chart to be
uploaded. It prints the resident memory (VmRSS from /proc) of the server and of each chart
worker: after start-up, then every `--charts / 4` charts, and the sum, the figure a container's
memory limit must hold. With `--max-charts-per-worker N` the workers are replaced after N charts
each (MLCOST_CHART_WORKER_MAX_CHARTS), and the peak of the sum shows the moment both pools live.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.chaos.replicas import ServeProcess, mlcost_executable, wait_until  # noqa: E402
from tests.support.fake_slack import FakeSlack  # noqa: E402
from tests.support.slack_requests import SECRET, signed_headers, slash_command  # noqa: E402

MODELS = ("recsys", "search-ranker", "fraud-detector", "embeddings")  # four demo models


def group_rss(pgid: int) -> dict[int, tuple[str, int]]:
    """Return pid -> (command line, VmRSS in MB) of every live process in the process group."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[3]) != pgid:
                continue
            status = (proc / "status").read_text()
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError, IndexError):
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                found[int(proc.name)] = (cmdline, int(line.split()[1]) // 1024)
    return found


def uploaded_more_than(fake: FakeSlack, count: int) -> bool:
    """Whether the fake has seen more than `count` chart uploads completed."""
    return len(fake.calls_to("files.completeUploadExternal")) > count


def describe(pgid: int) -> tuple[str, int]:
    """Return a one-line split of the group's memory and its sum in MB."""
    parts, total = [], 0
    for pid, (cmdline, mb) in sorted(group_rss(pgid).items()):
        if pid == pgid:
            role = "serve"
        elif "resource_tracker" in cmdline:
            role = "tracker"
        else:
            role = "worker"
        parts.append(f"{role} {mb}")
        total += mb
    return ", ".join(parts), total


def main() -> int:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--charts", type=int, default=200)
    parser.add_argument("--max-charts-per-worker", type=int, default=0)
    args = parser.parse_args()

    fake = FakeSlack().start()
    fake.handlers["auth.test"] = lambda params: {
        "ok": True,
        "user_id": "UBOT",
        "user": "mlcost",
        "team_id": "T1",
        "team": "Acme",
        "bot_id": "B1",
    }
    with tempfile.TemporaryDirectory(prefix="mlcost-serve-memory-") as tmp:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MLCOST_", "SLACK_"))}
        subprocess.run(
            [*mlcost_executable(), "demo", "--dir", str(work / "demo")],
            check=True,
            capture_output=True,
            env=env,
        )
        settings = {
            "MLCOST_DATABASE_URL": f"sqlite:///{work / 'demo' / 'mlcost-demo.db'}",
            "SLACK_BOT_TOKEN": "xoxb-benchmark",
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": fake.url,
            "MLCOST_CHART_WORKERS": str(args.workers),
            "MLCOST_CHART_WORKER_MAX_CHARTS": str(args.max_charts_per_worker),
        }
        # without the scheduler: only the charts move memory here
        serve = ServeProcess.start("serve", work, settings, "--no-scheduler")
        try:
            serve.wait_ready(60)
            pgid = serve.process.pid
            time.sleep(2)  # the workers warm up (matplotlib) as they start
            split, total = describe(pgid)
            print(f"after start-up: {split} MB; sum {total} MB")
            peak = total
            step = max(1, args.charts // 4)
            started = time.perf_counter()
            for i in range(1, args.charts + 1):
                uploads = len(fake.calls_to("files.completeUploadExternal"))
                body = slash_command(
                    f"model {MODELS[i % len(MODELS)]}",
                    user="U0BENCH",
                    channel="C0BENCH",
                    response_url=fake.url + "response",
                )
                request = urllib.request.Request(
                    serve.url + "slack/events",
                    data=body.encode(),
                    headers=signed_headers(body, content_type="application/x-www-form-urlencoded"),
                )
                with urllib.request.urlopen(request, timeout=10) as response:
                    response.read()
                wait_until(partial(uploaded_more_than, fake, uploads), 60, f"chart {i}", every=0.01)
                split, total = describe(pgid)
                peak = max(peak, total)
                if i % step == 0:
                    rate = i / (time.perf_counter() - started)
                    print(f"after {i} charts ({rate:.1f}/s): {split} MB; sum {total} MB")
            print(f"peak sum while charting: {peak} MB")
        except AssertionError:
            print(fake.methods()[-10:], serve.log()[-3000:], file=sys.stderr)
            raise
        finally:
            serve.cleanup()
            fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
