"""OpenCost: Kubernetes allocations (`/allocation`) and cloud costs (`/cloudCost`), file or URL.

An allocation's cost is its `totalCost` (CPU, GPU, RAM, PV, network, load balancer, each with its
adjustment, plus shared and external cost: OpenCost's own sum); the components are checked
against it and a gap over a hundredth of a cent is named in a note. GPU-hours come from
`gpuHours` (else `gpuCount` x `minutes`). Idle cluster capacity (`__idle__`) is its own charge,
flagged idle: attribution gives it no model and no team. Unmounted volumes (`__unmounted__`)
are their own storage charge. Labels, annotations and the namespace's labels and annotations
become tags; the namespace itself is the tag `kubernetes_namespace` (registry `namespace:`).
"""

from __future__ import annotations

import base64
import contextlib
import csv
import datetime as dt
import functools
import http.client
import json
import socket
import threading
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urljoin, urlsplit, urlunsplit

import pyarrow as pa

from bot.counts import counted
from bot.errors import IngestError
from bot.ingest.attribution import NAMESPACE_TAG, normalize_tags
from bot.ingest.nodes import ec2_instance
from bot.ingest.sources.base import (
    COST_TYPE,
    DEFAULT_CURRENCY,
    GPU_HOURS_UNIT,
    IDLE_COLUMN,
    KEY_COLUMNS,
    NODE_COLUMN,
    TAGS_JSON,
    VALUE_COLUMNS,
    GroupedCharges,
    Progress,
    ReplaceScope,
    SourceData,
    check_currency,
    month_start,
    source_data,
    tags_json,
)
from bot.ingest.sources.formats import format_hint
from bot.masking import mask_text, mask_url

PROVIDER = "Kubernetes"
SERVICE = "Kubernetes"
IDLE_NAME = "__idle__"
UNMOUNTED_NAME = "__unmounted__"
USAGE_IDLE = "Kubernetes:Idle"
USAGE_UNMOUNTED = "Kubernetes:UnmountedPV"
USAGE_GPU = "Kubernetes:GPUAllocation"
USAGE_ALLOCATION = "Kubernetes:Allocation"
# each component with its adjustment; networkCost already includes its cross-zone/region parts
COST_COMPONENTS = (
    "cpuCost",
    "cpuCostAdjustment",
    "gpuCost",
    "gpuCostAdjustment",
    "ramCost",
    "ramCostAdjustment",
    "pvCost",
    "pvCostAdjustment",
    "networkCost",
    "networkCostAdjustment",
    "loadBalancerCost",
    "loadBalancerCostAdjustment",
    "sharedCost",
    "externalCost",
)
# OpenCost rounds every amount to 5 places: up to 14 roundings may separate the sum from the total
COMPONENT_TOLERANCE = Decimal("0.0001")
_PLACES = Decimal("1e-10")
# what a URL asks for unless it says otherwise: daily sets, idle as its own allocation
_ALLOCATION_DEFAULTS = {
    "step": "1d",
    "accumulate": "false",
    "includeIdle": "true",
    "shareIdle": "false",
    # each node's idle capacity with its providerID, so it is matched to the instance billed
    "idleByNode": "true",
}
# the whole fetch's deadline and the largest answer read (MLCOST_OPENCOST_TIMEOUT_SECONDS,
# MLCOST_OPENCOST_MAX_BYTES); redirects followed, within the URL's origin only
HTTP_TIMEOUT_SECONDS = 300.0
MAX_BYTES = 512 * 1024 * 1024
MAX_REDIRECTS = 5
_REDIRECT_STATUSES = (301, 302, 303, 307, 308)
_DEFAULT_PORTS = {"http": 80, "https": 443}
_CHUNK_BYTES = 1 << 16


def is_url(location: str) -> bool:
    """Return whether the location is an http(s) URL rather than a file."""
    return location.lower().startswith(("http://", "https://"))


def opencost_window(start: dt.date, end: dt.date) -> str:
    """Return OpenCost's window for the days [start, end): two RFC3339 midnights (UTC)."""
    return f"{start.isoformat()}T00:00:00Z,{end.isoformat()}T00:00:00Z"


def request_url(location: str, window: str | None, aggregate: str | None = None) -> str:
    """Return the OpenCost API URL to read: `/allocation` unless the path names an endpoint.

    `window` and `aggregate` replace the URL's own; allocation queries default to daily sets
    (`step=1d`, `accumulate=false`) with idle cost as its own allocation (`includeIdle=true`,
    `shareIdle=false`). A URL asking OpenCost to spread idle cost (`shareIdle=true`) is refused.
    """
    parts = urlsplit(location)
    path = parts.path.rstrip("/")
    if not path.endswith(("/allocation", "/allocation/compute", "/cloudCost")):
        path += "/allocation"
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    if window:
        params["window"] = window
    if not params.get("window"):
        raise IngestError(
            f"opencost: {mask_url(location)} needs a window: --window 7d, or "
            "--window 2026-11-01T00:00:00Z,2026-12-01T00:00:00Z"
        )
    if aggregate:
        params["aggregate"] = aggregate
    if not path.endswith("/cloudCost"):
        for key, value in _ALLOCATION_DEFAULTS.items():
            params.setdefault(key, value)
        if params["shareIdle"].lower() == "true":
            raise IngestError(
                "opencost: shareIdle=true spreads idle cluster cost over the allocations; "
                "mlcost keeps idle cost as its own line: drop shareIdle from the URL"
            )
    return urlunsplit((parts.scheme, parts.netloc, path, urlencode(params), ""))


def split_credentials(url: str) -> tuple[str, str | None]:
    """Return the URL without `user:password@`, and the Basic Authorization header they make.

    OpenCost behind an authenticating proxy is reached as `http://user:password@host`; the
    password goes in the header and never into the location mlcost records or prints.
    """
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.netloc.rpartition("@")[2]
    header = _basic(parts.username, parts.password)
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)), header


def _basic(username: str | None, password: str | None) -> str:
    pair = f"{unquote(username or '')}:{unquote(password or '')}"
    return "Basic " + base64.b64encode(pair.encode()).decode()


@dataclass(frozen=True)
class Proxy:
    """The forward proxy a URL is fetched through (HTTP_PROXY or HTTPS_PROXY)."""

    host: str
    port: int
    authorization: str | None  # Proxy-Authorization, from the proxy URL's user:password
    shown: str  # the proxy URL, masked
    variable: str

    def describe(self) -> str:
        return f" through the proxy {self.shown} ({self.variable})"


def proxy_for(url: str) -> Proxy | None:
    """Return the proxy the environment names for the URL's scheme, or None.

    None when `http_proxy` / `https_proxy` (either case) is unset or the host is in
    `no_proxy`, as urllib decides. Only http:// proxies are spoken to: http through them with
    the absolute URI, https through a CONNECT tunnel; any other is refused by name.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    configured = urllib.request.getproxies().get(scheme)
    if not configured or urllib.request.proxy_bypass(parts.netloc.rpartition("@")[2]):
        return None
    variable = f"{scheme.upper()}_PROXY"
    if "://" not in configured:
        configured = "http://" + configured  # `proxy:3128`, as urllib reads it
    shown = mask_url(configured)
    try:
        proxy = urlsplit(configured)
        port = proxy.port
    except ValueError:
        proxy, port = None, None
    if proxy is None or proxy.scheme.lower() != "http" or not proxy.hostname:
        raise IngestError(
            f"opencost: {variable}={shown}: mlcost reaches OpenCost through an http:// proxy "
            f"only (https:// then goes through a CONNECT tunnel): set {variable} to "
            f"http://host:port, or add {parts.hostname} to NO_PROXY"
        )
    authorization = (
        _basic(proxy.username, proxy.password)
        if proxy.username is not None or proxy.password is not None
        else None
    )
    return Proxy(proxy.hostname, port or 80, authorization, shown, variable)


def fetch_json(
    url: str,
    *,
    authorization: str | None = None,
    timeout: float = HTTP_TIMEOUT_SECONDS,
    max_bytes: int = MAX_BYTES,
    shown: str | None = None,
) -> Any:
    """GET a URL and parse its JSON (floats as Decimal); IngestError says what went wrong.

    The whole fetch (connecting, redirects, every byte of the answer) has `timeout` seconds;
    an answer over `max_bytes` is refused; redirects are followed within the URL's origin only,
    so the credentials never reach another host. Messages show the URL masked: as `shown`
    (the configured URL through mask_url), or the URL itself masked.
    """
    shown = shown or mask_url(url)
    body = _fetch_body(url, authorization, timeout, max_bytes, shown)
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise IngestError(f"opencost: {shown}: not JSON ({exc})") from None
    del body  # the text and what it parses into are held; the bytes need not be
    return _parse_text(text, f"opencost: {shown}")


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or _DEFAULT_PORTS.get(scheme)


def _fetch_body(
    url: str, authorization: str | None, timeout: float, max_bytes: int, shown: str
) -> bytearray:
    """Return the answer's bytes: same-origin redirects followed, within one deadline and cap."""
    deadline = time.monotonic() + timeout
    origin = _origin(url)
    for hop in range(MAX_REDIRECTS + 1):
        shown = shown if hop == 0 else mask_url(url)
        proxy = proxy_for(url)
        via = proxy.describe() if proxy is not None else ""
        if proxy is not None and authorization is not None and origin[0] == "http":
            raise IngestError(
                f"opencost: {shown} carries credentials, and {proxy.variable} would send them "
                f"in clear text to the proxy {proxy.shown}: use an https:// URL (the proxy "
                f"then only tunnels), or add {origin[1]} to NO_PROXY"
            )
        response = _Exchange(url, authorization, deadline, proxy)
        try:
            status, location = response.open()
            if status in _REDIRECT_STATUSES and location:
                target = urljoin(url, location)
                if _origin(target) != origin:
                    raise IngestError(
                        f"opencost: {shown} redirects to another origin ({mask_url(target)}); "
                        "mlcost follows redirects within the URL's own scheme, host and port "
                        "only, so its credentials never reach another host: configure the "
                        "URL the answer really comes from"
                    )
                url = target
                continue
            if not 200 <= status < 300:
                detail = response.read_some(300).decode("utf-8", "replace").strip()
                raise IngestError(
                    f"opencost: {shown} answered HTTP {status}{via}"
                    + (f": {mask_text(detail)}" if detail else "")
                )
            return response.read_all(max_bytes)
        except _DeadlinePassed:
            raise IngestError(
                f"opencost: {shown} gave no complete answer within {timeout:g} s{via} "
                "(MLCOST_OPENCOST_TIMEOUT_SECONDS)"
            ) from None
        except _TooLarge:
            raise IngestError(
                f"opencost: {shown}: the answer is larger than {max_bytes:,} bytes "
                "(MLCOST_OPENCOST_MAX_BYTES): ask for a shorter window or a coarser aggregate, "
                "or raise the setting"
            ) from None
        except (OSError, http.client.HTTPException) as exc:
            verb = "read" if response.connected else "reach"
            reason = mask_text(str(exc)) or type(exc).__name__
            raise IngestError(f"opencost: cannot {verb} {shown}{via} ({reason})") from None
        finally:
            response.close()
    raise IngestError(
        f"opencost: {mask_url(url)}: more than {MAX_REDIRECTS} redirects; configure the URL "
        "the answer really comes from"
    )


class _DeadlinePassed(Exception):
    """The fetch's deadline passed."""


class _TooLarge(Exception):
    """The answer is over the size cap."""


class _Exchange:
    """One GET on its own connection; a timer cuts the socket when the fetch's deadline passes.

    A per-read socket timeout would let a server that sends a byte now and then hold the fetch
    for ever; shutting the socket down at the deadline ends any read, however far it got.
    """

    def __init__(
        self, url: str, authorization: str | None, deadline: float, proxy: Proxy | None = None
    ) -> None:
        self.url = url
        self.authorization = authorization
        self.deadline = deadline
        self.proxy = proxy
        self.connected = False
        self._cut = threading.Event()
        self._timer: threading.Timer | None = None
        self._response: http.client.HTTPResponse | None = None
        # the connected socket: a response read until the socket closes (or any HTTP/1.0
        # answer) takes it over, and the connection forgets it
        self._sock: socket.socket | None = None
        parts = urlsplit(url)
        https = parts.scheme.lower() == "https"
        make = http.client.HTTPSConnection if https else http.client.HTTPConnection
        if proxy is None:
            self._connection = make(parts.hostname or "", parts.port, timeout=self._left())
            return
        # through a proxy: https in a CONNECT tunnel (the proxy sees only the host and port,
        # never OpenCost's Authorization), http as an absolute URI; the proxy's credentials
        # go to the proxy alone, as Proxy-Authorization
        self._connection = make(proxy.host, proxy.port, timeout=self._left())
        if https:
            tunnel = (
                {} if proxy.authorization is None else {"Proxy-Authorization": proxy.authorization}
            )
            self._connection.set_tunnel(parts.hostname or "", parts.port or 443, tunnel)

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0 or self._cut.is_set():
            raise _DeadlinePassed
        return left

    def _cut_off(self) -> None:
        self._cut.set()
        sock = self._sock or self._connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)

    def _checked(self, error: BaseException | None = None) -> None:
        """Raise _DeadlinePassed if the timer cut the socket (a cut read may look complete)
        or the socket timed out (its timeout is never longer than what is left)."""
        if self._cut.is_set() or isinstance(error, TimeoutError):
            raise _DeadlinePassed

    def open(self) -> tuple[int, str | None]:
        """Send the GET; return the status and any Location header."""
        self._timer = threading.Timer(self._left(), self._cut_off)
        self._timer.daemon = True
        self._timer.start()
        try:
            self._connection.connect()
        except OSError as exc:
            self._checked(exc)
            raise
        self.connected = True
        self._sock = self._connection.sock
        if self._sock is not None:
            self._sock.settimeout(self._left())
            if self._cut.is_set():  # the timer fired while connecting, before the socket was kept
                self._cut_off()
        parts = urlsplit(self.url)
        headers = {"Accept": "application/json", "User-Agent": "mlcost"}
        if self.authorization is not None:
            headers["Authorization"] = self.authorization
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if self.proxy is not None and parts.scheme.lower() == "http":
            target = urlunsplit((parts.scheme, parts.netloc, parts.path or "/", parts.query, ""))
            if self.proxy.authorization is not None:
                headers["Proxy-Authorization"] = self.proxy.authorization
        try:
            self._connection.request("GET", target, headers=headers)
            self._response = self._connection.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            self._checked(exc)
            raise
        self._checked()
        return self._response.status, self._response.getheader("Location")

    def read_some(self, limit: int) -> bytes:
        """Return up to `limit` bytes of the body (an error's detail)."""
        assert self._response is not None
        try:
            return self._response.read(limit)
        except (OSError, http.client.HTTPException):
            return b""

    def read_all(self, max_bytes: int) -> bytearray:
        """Return the body; _TooLarge as soon as it is known to be over `max_bytes`."""
        assert self._response is not None
        declared = self._response.length
        if declared is not None and declared > max_bytes:
            raise _TooLarge
        body = bytearray()
        try:
            while chunk := self._response.read(_CHUNK_BYTES):
                body += chunk
                if len(body) > max_bytes:
                    raise _TooLarge
        except (OSError, http.client.HTTPException) as exc:
            self._checked(exc)
            raise
        self._checked()
        return body

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._response is not None:
            self._response.close()  # it may hold the socket the connection handed over
        self._connection.close()


def read_json_file(path: str) -> Any:
    """Read a saved OpenCost answer (floats as Decimal); IngestError names the file."""
    try:
        body = Path(path).read_bytes()
    except OSError as exc:
        raise IngestError(f"{path}: cannot read ({exc.strerror})") from None
    return parse_json(body, path)


def parse_json(body: bytes, where: str) -> Any:
    """Parse JSON with exact decimals."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise IngestError(f"{where}: not JSON ({exc})") from None
    return _parse_text(text, where)


def _parse_text(text: str, where: str) -> Any:
    try:
        return json.loads(text, parse_float=Decimal)
    except ValueError as exc:
        raise IngestError(f"{where}: not JSON ({exc}){_csv_hint(text)}") from None


def _csv_hint(text: str) -> str:
    """Say what a CSV body is (OpenCost's CSV export, a FOCUS or CUR file), from its header."""
    first = text.partition("\n")[0]
    if "," not in first:
        return ""
    try:
        return format_hint(next(csv.reader([first])), "opencost")
    except csv.Error:
        return ""


@dataclass(frozen=True)
class _Charge:
    """One canonical charge read from an allocation or a cloud cost."""

    day: dt.date
    provider: str
    billing_account: str
    sub_account: str
    service: str
    service_category: str
    usage_type: str
    region: str
    resource_id: str
    tags: str
    idle: bool
    billed: Decimal
    effective: Decimal
    quantity: Decimal
    unit: str
    node: str = ""  # the EC2 instance an allocation ran on (`i-...`), else empty


class OpenCostSource:
    """Read an OpenCost `/allocation` or `/cloudCost` answer, from a URL or a saved file.

    Each (provider, account) replaces the days the answer covers: a cluster's allocations are
    provider `Kubernetes`, account = the cluster; cloud costs keep their provider and account.
    OpenCost's answers carry no currency: amounts are counted in `default_currency`.
    """

    kind = "opencost"

    def __init__(
        self,
        location: str,
        *,
        window: str | None = None,
        aggregate: str | None = None,
        default_currency: str = DEFAULT_CURRENCY,
        timeout: float = HTTP_TIMEOUT_SECONDS,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        url = request_url(location, window, aggregate) if is_url(location) else None
        self.url: str | None = None
        self._authorization: str | None = None
        if url is not None:
            self.url, self._authorization = split_credentials(url)
        # the URL as messages, the ingestion record and logs show it (credentials masked)
        self.shown = mask_url(url) if url else location
        if self.url is None and (window or aggregate):
            raise IngestError(
                f"opencost: {location} is a saved answer: it covers the window it was saved "
                "with; --window and --aggregate apply to a URL"
            )
        self.path = location
        self.location = mask_url(self.url) if self.url else location
        # where errors say the problem is: the file, as for every file source, or the URL
        self.where = f"opencost: {self.shown}" if self.url else location
        self.currency = check_currency(default_currency, "MLCOST_CURRENCY")
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._notes: list[str] = []

    def read(self, tag_keys: set[str], progress: Progress | None = None) -> SourceData:
        self._notes = []  # a polled source is read again at every poll
        if progress is not None:
            progress.set_total(1, "answers")
        answer = (
            fetch_json(
                self.url,
                authorization=self._authorization,
                timeout=self.timeout,
                max_bytes=self.max_bytes,
                shown=self.shown,
            )
            if self.url
            else read_json_file(self.path)
        )
        charges, spans = self._charges(answer, tag_keys)
        grouped = GroupedCharges(default_currency=self.currency)
        rows = len(charges)
        grouped.add(self._table(charges), rows=rows)
        if progress is not None:
            progress.advance(1, rows=rows)
        data = source_data(
            grouped, lambda _charges: _scopes(spans), api_requests=1 if self.url else 0
        )
        data.notes.extend(self._notes)
        return data

    def _charges(
        self, answer: Any, tag_keys: set[str]
    ) -> tuple[list[_Charge], dict[tuple[str, str], tuple[dt.date, dt.date]]]:
        """Turn an answer into charges and, per (provider, account), the days it covers."""
        where = self.where
        if not isinstance(answer, dict) or "data" not in answer:
            raise IngestError(f"{where}: not an OpenCost answer (no 'data')")
        code = answer.get("code")
        if code is not None and str(code) != "200":
            message = str(answer.get("message") or answer.get("status") or "")[:200]
            raise IngestError(f"{where}: OpenCost answered code {code}: {message}")
        data = answer["data"]
        if isinstance(data, dict) and isinstance(data.get("sets"), list):
            return self._cloud_costs(data["sets"], tag_keys)
        if isinstance(data, list):
            return self._allocations(data, tag_keys)
        raise IngestError(
            f"{where}: not an OpenCost /allocation answer (data is a list of sets) nor a "
            "/cloudCost answer (data.sets)"
        )

    def _allocations(
        self, sets: list[Any], tag_keys: set[str]
    ) -> tuple[list[_Charge], dict[tuple[str, str], tuple[dt.date, dt.date]]]:
        charges: list[_Charge] = []
        spans: dict[tuple[str, str], tuple[dt.date, dt.date]] = {}
        longer, gaps = 0, []
        for index, allocation_set in enumerate(sets):
            if allocation_set is None:
                continue
            if not isinstance(allocation_set, dict):
                raise IngestError(f"{self.where}: set {index} is not an object of allocations")
            for key, allocation in allocation_set.items():
                if not isinstance(allocation, dict):
                    raise IngestError(f"{self.where}: allocation {key!r} is not an object")
                charge, days, gap = _allocation_charge(key, allocation, tag_keys, self.where)
                charges.append(charge)
                _widen(spans, (charge.provider, charge.billing_account), days)
                longer += days[1] - days[0] > dt.timedelta(days=1)
                if gap is not None:
                    gaps.append(gap)
        if longer:
            self._notes.append(
                f"{counted(longer, 'allocation')} {'covers' if longer == 1 else 'cover'} more "
                "than a day: each is booked on the day its "
                "window starts (ask OpenCost for step=1d and accumulate=false for daily spend)"
            )
        if gaps:
            worst = max(gaps, key=lambda g: abs(g[1]))
            self._notes.append(
                f"{counted(len(gaps), 'allocation')} whose cost components and adjustments "
                "differ from "
                f"totalCost by more than {COMPONENT_TOLERANCE} (largest: {worst[0]}, "
                f"{worst[1]:+}); totalCost is what is booked"
            )
        return charges, spans

    def _cloud_costs(
        self, sets: list[Any], tag_keys: set[str]
    ) -> tuple[list[_Charge], dict[tuple[str, str], tuple[dt.date, dt.date]]]:
        charges: list[_Charge] = []
        spans: dict[tuple[str, str], tuple[dt.date, dt.date]] = {}
        for index, cost_set in enumerate(sets):
            items = cost_set.get("cloudCosts") if isinstance(cost_set, dict) else None
            if not isinstance(items, dict):
                raise IngestError(f"{self.where}: set {index} has no cloudCosts object")
            for key, item in items.items():
                if not isinstance(item, dict):
                    raise IngestError(f"{self.where}: cloud cost {key!r} is not an object")
                charge, days = _cloud_cost_charge(key, item, tag_keys, self.where)
                charges.append(charge)
                _widen(spans, (charge.provider, charge.billing_account), days)
        return charges, spans

    def _table(self, charges: list[_Charge]) -> pa.Table:
        """Return the canonical Arrow table of the charges."""
        columns: dict[str, Any] = {
            "day": pa.array([c.day for c in charges], pa.date32()),
            "billing_period": pa.array([month_start(c.day) for c in charges], pa.date32()),
        }
        for name in KEY_COLUMNS[2:]:
            if name == "estimated":
                columns[name] = pa.array([False] * len(charges), pa.bool_())
            elif name == "currency":
                columns[name] = pa.array([self.currency] * len(charges), pa.string())
            elif name in ("instance_type", "charge_category"):
                value = "Usage" if name == "charge_category" else ""
                columns[name] = pa.array([value] * len(charges), pa.string())
            else:
                columns[name] = pa.array([getattr(c, name) for c in charges], pa.string())
        columns[TAGS_JSON] = pa.array([c.tags for c in charges], pa.string())
        columns[IDLE_COLUMN] = pa.array([c.idle for c in charges], pa.bool_())
        columns[NODE_COLUMN] = pa.array([c.node for c in charges], pa.string())
        for name in VALUE_COLUMNS:
            columns[name] = pa.array([getattr(c, name) for c in charges], COST_TYPE)
        return pa.table(columns)


def _allocation_charge(
    key: str, allocation: Mapping[str, Any], tag_keys: set[str], where: str
) -> tuple[_Charge, tuple[dt.date, dt.date], tuple[str, Decimal] | None]:
    """Return one allocation's charge, its days [first, after last) and any component gap."""
    name = str(allocation.get("name") or key)
    props = allocation.get("properties") or {}
    if not isinstance(props, dict):
        raise IngestError(f"{where}: allocation {name!r} has properties that are not an object")
    days = _days(allocation.get("window") or allocation, f"allocation {name!r}", where)
    cluster = str(props.get("cluster") or "") or PROVIDER.lower()
    parts = name.split("/")
    idle = IDLE_NAME in parts
    unmounted = not idle and (
        UNMOUNTED_NAME in parts
        or props.get("namespace") == UNMOUNTED_NAME
        or props.get("container") == UNMOUNTED_NAME
    )
    namespace = str(props.get("namespace") or "")
    if namespace in (IDLE_NAME, UNMOUNTED_NAME) or idle:
        namespace = ""
    subject = f"allocation {name!r}"
    total = _amount(allocation.get("totalCost"), where, subject, "totalCost")
    components = [_amount(allocation.get(f), where, subject, f) for f in COST_COMPONENTS]
    parts_sum = sum((c for c in components if c is not None), Decimal(0))
    gap = None
    if total is None:
        total = parts_sum  # OpenCost writes null for a NaN total: book what the parts add to
    elif abs(parts_sum - total) > COMPONENT_TOLERANCE:
        gap = (name, parts_sum - total)
    gpu_hours = _gpu_hours(allocation, name, where)
    if idle:
        usage_type = USAGE_IDLE
    elif unmounted:
        usage_type = USAGE_UNMOUNTED
    else:
        usage_type = USAGE_GPU if gpu_hours > 0 else USAGE_ALLOCATION
    tags = {} if idle else _allocation_tags(props, namespace)
    charge = _Charge(
        day=days[0],
        provider=PROVIDER,
        billing_account=cluster,
        sub_account=namespace,
        service=SERVICE,
        service_category="Compute",
        usage_type=usage_type,
        region="",
        resource_id=name if name.startswith(cluster + "/") else f"{cluster}/{name}",
        tags=tags_json(tags, tag_keys),
        idle=idle,
        billed=_places(total),
        effective=_places(total),
        quantity=_places(gpu_hours),
        unit=GPU_HOURS_UNIT,
        node=ec2_instance(props.get("providerID")),
    )
    return charge, days, gap


def _allocation_tags(props: Mapping[str, Any], namespace: str) -> dict[str, str]:
    """Return the tags: pod labels, then annotations, then the namespace's; then the namespace."""
    tags: dict[str, str] = {}
    for field in ("labels", "annotations", "namespaceLabels", "namespaceAnnotations"):
        values = props.get(field)
        if isinstance(values, dict):
            for k, v in normalize_tags(values).items():
                tags.setdefault(k, v)
    if namespace:
        tags[NAMESPACE_TAG] = namespace  # the allocation's own namespace, never a label's
    return tags


def _cloud_cost_charge(
    key: str, item: Mapping[str, Any], tag_keys: set[str], where: str
) -> tuple[_Charge, tuple[dt.date, dt.date]]:
    """Return one cloud cost's charge (invoiced cost billed, amortised net cost effective)."""
    props = item.get("properties") or {}
    if not isinstance(props, dict):
        raise IngestError(f"{where}: cloud cost {key!r} has properties that are not an object")
    days = _days(item.get("window") or {}, f"cloud cost {key!r}", where)
    billed = _metric(item, ("invoicedCost", "netCost", "listCost"), key, where)
    if billed is None:
        raise IngestError(f"{where}: cloud cost {key!r} has no invoicedCost, netCost or listCost")
    effective = _metric(item, ("amortizedNetCost", "amortizedCost"), key, where)
    provider = str(props.get("provider") or "") or "OpenCost"
    account = str(props.get("invoiceEntityID") or props.get("accountID") or "") or provider
    labels = props.get("labels")
    charge = _Charge(
        day=days[0],
        provider=provider,
        billing_account=account,
        sub_account=str(props.get("accountID") or ""),
        service=str(props.get("service") or "") or f"{provider} (OpenCost cloud costs)",
        service_category=str(props.get("category") or ""),
        usage_type="",
        region=str(props.get("regionID") or ""),
        resource_id=str(props.get("providerID") or ""),
        tags=tags_json(normalize_tags(labels if isinstance(labels, dict) else {}), tag_keys),
        idle=False,
        billed=_places(billed),
        effective=_places(billed if effective is None else effective),
        quantity=Decimal(0),
        unit="",
    )
    return charge, days


def _metric(
    item: Mapping[str, Any], names: tuple[str, ...], key: str, where: str
) -> Decimal | None:
    for name in names:
        metric = item.get(name)
        if isinstance(metric, dict) and metric.get("cost") is not None:
            return _amount(metric["cost"], where, f"cloud cost {key!r}", name)
    return None


def _gpu_hours(allocation: Mapping[str, Any], name: str, where: str) -> Decimal:
    """Return gpuHours, else gpuCount x minutes / 60 (zero when neither is given)."""
    subject = f"allocation {name!r}"
    hours = _amount(allocation.get("gpuHours"), where, subject, "gpuHours")
    if hours is not None:
        return hours
    count = _amount(allocation.get("gpuCount"), where, subject, "gpuCount")
    minutes = _amount(allocation.get("minutes"), where, subject, "minutes")
    if count is None or minutes is None:
        return Decimal(0)
    return count * minutes / 60


def _amount(value: Any, where: str, subject: str, field: str) -> Decimal | None:
    """Return a JSON number as Decimal (None when null); IngestError names a bad one."""
    if value is None:
        return None
    if type(value) is Decimal and value.is_finite():
        return value  # what parse_float gives: the common case, kept fast
    if isinstance(value, int | str) and not isinstance(value, bool):
        try:
            amount = Decimal(str(value))
        except InvalidOperation:
            amount = None
        if amount is not None and amount.is_finite():
            return amount
    raise IngestError(f"{where}: {subject} {field} is not a number ({str(value)[:40]!r})")


def _places(amount: Decimal) -> Decimal:
    """Round to the ledger's 10 places, half-even (exact for OpenCost's 5-place amounts)."""
    return amount.quantize(_PLACES)


def _days(window: Mapping[str, Any], what: str, where: str) -> tuple[dt.date, dt.date]:
    """Return [first day, day after the last) of a window, in the window's own time zone."""
    try:
        span = _window_days(str(window["start"]), str(window["end"]))
    except (KeyError, TypeError, ValueError):
        raise IngestError(f"{where}: {what} has no valid window start and end") from None
    if span is None:
        raise IngestError(f"{where}: {what} ends before it starts")
    return span


@functools.lru_cache(maxsize=1024)
def _window_days(start_text: str, end_text: str) -> tuple[dt.date, dt.date] | None:
    """Parse a window (allocations of one set share it); None when it ends before it starts."""
    start = dt.datetime.fromisoformat(start_text.replace("Z", "+00:00"))
    end = dt.datetime.fromisoformat(end_text.replace("Z", "+00:00"))
    if end < start:
        return None
    # a window ending at midnight ends with the day before; any later time counts its day
    after = end.date() if end.time() == dt.time(0) else end.date() + dt.timedelta(days=1)
    return start.date(), max(after, start.date() + dt.timedelta(days=1))


def _widen(
    spans: dict[tuple[str, str], tuple[dt.date, dt.date]],
    key: tuple[str, str],
    days: tuple[dt.date, dt.date],
) -> None:
    old = spans.get(key)
    spans[key] = days if old is None else (min(old[0], days[0]), max(old[1], days[1]))


def _scopes(spans: dict[tuple[str, str], tuple[dt.date, dt.date]]) -> list[ReplaceScope]:
    """Each (provider, account) replaces every day the answer covered, from first to last."""
    first = min((s for s, _e in spans.values()), default=None)
    last = max((e for _s, e in spans.values()), default=None)
    if first is None or last is None:
        return []
    return [
        ReplaceScope(provider, account, "day", first, last) for provider, account in sorted(spans)
    ]
