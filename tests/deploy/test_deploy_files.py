"""The deployment files (Dockerfile, compose.yaml, the systemd unit, docs/deploy.md) hold together.

Nothing here needs Docker: the files are parsed, and every command they run is put through
mlcost's own argument parser. `docker compose config` and `systemd-analyze verify` run as well
where they exist.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import make_url

from bot.cli import build_parser
from bot.config import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
COMPOSE = ROOT / "compose.yaml"
UNIT = ROOT / "deploy" / "mlcost.service"
SYSUSERS = ROOT / "deploy" / "mlcost.sysusers"
DOC = ROOT / "docs" / "deploy.md"

SETTING_NAMES = {str(f.validation_alias) for f in Settings.setting_fields().values()}
SECRET_NAME = re.compile(r"PASSWORD|SECRET|TOKEN|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL")
INTERPOLATION = re.compile(r"\$\{(\w+)[^}]*\}")


def mlcost_accepts(argv: list[str]) -> Any:
    """Parse argv (without the program name) with the real CLI parser; fail the test if refused."""
    try:
        return build_parser().parse_args(argv)
    except SystemExit:
        pytest.fail(f"`mlcost {shlex.join(argv)}` is not a valid mlcost command line")


# ---- Dockerfile -------------------------------------------------------------------------------


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [args for kw, args in self.instructions if kw == keyword]

    def last(self, keyword: str) -> str | None:
        found = self.all(keyword)
        return found[-1] if found else None


def parse_dockerfile(text: str) -> list[Stage]:
    """Split a Dockerfile into stages of (INSTRUCTION, arguments), continuations joined."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#") or (not pending and not line):
            continue  # comments (and parser directives) vanish, inside continuations too
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, args = (pending + line).strip().partition(" ")
        instructions.append((keyword.upper(), args.strip()))
        pending = ""
    assert not pending, "the Dockerfile ends inside a line continuation"

    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for keyword, args in instructions:
        if keyword == "FROM":
            words = args.split()
            base = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: global_args[m[1] or m[2]], words[0])
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base=base, name=name))
        elif not stages:
            assert keyword == "ARG", f"{keyword} before the first FROM"
            key, _, default = args.partition("=")
            global_args[key] = default
        else:
            stages[-1].instructions.append((keyword, args))
    return stages


def exec_form(args: str) -> list[str]:
    """Return a JSON (exec form) argument list; fail on shell form."""
    try:
        value = json.loads(args)
    except json.JSONDecodeError:
        pytest.fail(f"not exec form (a JSON list): {args}")
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), args
    return value


def healthcheck_command(stage: Stage) -> list[str]:
    args = stage.last("HEALTHCHECK")
    assert args is not None, "no HEALTHCHECK in the runtime stage"
    options, _, command = args.partition("CMD ")
    assert all(o.startswith("--") for o in options.split()), options
    return exec_form(command)


@pytest.fixture(scope="module")
def stages() -> list[Stage]:
    return parse_dockerfile(DOCKERFILE.read_text())


def test_the_dockerfile_parser_reads_continuations_comments_and_stages() -> None:
    stages = parse_dockerfile(
        "# syntax=docker/dockerfile:1\nARG IMG=python:3.11-slim\nFROM ${IMG} AS build\n"
        "RUN a \\\n  # a comment inside\n  && b\nFROM $IMG\nUSER 1:1\n"
    )
    assert [(s.base, s.name) for s in stages] == [
        ("python:3.11-slim", "build"),
        ("python:3.11-slim", None),
    ]
    assert stages[0].instructions == [("RUN", "a  && b")]
    assert stages[1].last("USER") == "1:1"


def test_a_wheel_is_built_in_one_stage_and_only_the_venv_reaches_the_slim_runtime(
    stages: list[Stage],
) -> None:
    assert len(stages) >= 2
    assert {s.base for s in stages} == {"python:3.11-slim"}
    build, runtime = stages[0], stages[-1]
    copied = " ".join(build.all("COPY"))
    assert "pyproject.toml" in copied
    assert any("pip wheel" in run and " ." in run for run in build.all("RUN"))
    assert any("pip install" in run and ".whl" in run for run in build.all("RUN"))
    # the runtime takes the venv from the build stage and nothing from the build context
    runtime_copies = runtime.all("COPY")
    assert runtime_copies and all(c.startswith(f"--from={build.name} ") for c in runtime_copies)
    assert any(c.split()[1] == "/opt/venv" for c in runtime_copies)
    assert not runtime.all("ADD")


def test_the_runtime_runs_as_a_fixed_non_root_uid_with_no_build_tools(
    stages: list[Stage],
) -> None:
    runtime = stages[-1]
    user = runtime.last("USER")
    assert user is not None, "the runtime stage has no USER"
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) != 0, f"USER {user} is not a fixed non-root UID"
    runs = " ".join(runtime.all("RUN"))
    assert f"--uid {uid}" in runs and f"--gid {gid or uid}" in runs
    for tool in ("apt-get", "apk ", "gcc", "build-essential", "pip install", "pip wheel"):
        assert tool not in runs, f"the runtime stage runs {tool!r}"
    env = " ".join(runtime.all("ENV"))
    assert "PYTHONUNBUFFERED=1" in env and "/opt/venv/bin" in env


def test_the_image_serves_mlcost_over_http_on_the_exposed_port(stages: list[Stage]) -> None:
    runtime = stages[-1]
    entrypoint = exec_form(runtime.last("ENTRYPOINT") or "")
    cmd = exec_form(runtime.last("CMD") or "")
    assert entrypoint == ["mlcost"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert "mlcost" in scripts  # the console script the wheel installs into /opt/venv/bin
    args = mlcost_accepts(cmd)
    assert args.command == "serve" and not args.socket
    assert runtime.all("EXPOSE") == [str(args.port)]
    health = healthcheck_command(runtime)
    assert health[0] == "python"  # the slim image has no curl or wget
    assert f"http://127.0.0.1:{args.port}/healthz" in " ".join(health)


class _Healthz(BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:
        self.send_response(self.status if self.path == "/healthz" else 404)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def healthz_server() -> Iterator[HTTPServer]:
    handler = type("Handler", (_Healthz,), {})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def test_the_healthcheck_passes_on_200_and_fails_on_503_or_no_answer(
    stages: list[Stage], healthz_server: HTTPServer
) -> None:
    health = healthcheck_command(stages[-1])
    port = healthz_server.server_address[1]
    argv = [sys.executable, *(a.replace("127.0.0.1:3000", f"127.0.0.1:{port}") for a in health[1:])]

    def run() -> int:
        return subprocess.run(argv, capture_output=True, timeout=30).returncode

    assert run() == 0
    healthz_server.RequestHandlerClass.status = 503  # type: ignore[attr-defined]
    assert run() != 0
    healthz_server.shutdown()
    healthz_server.server_close()
    assert run() != 0


def test_no_secret_is_baked_into_the_image(stages: list[Stage]) -> None:
    for stage in stages:
        for keyword, args in stage.instructions:
            if keyword in ("ENV", "ARG", "LABEL"):
                assert not SECRET_NAME.search(args), f"{keyword} {args}"
            if keyword in ("COPY", "ADD"):
                assert ".env" not in args.split(), f"{keyword} {args}"


# ---- .dockerignore ----------------------------------------------------------------------------


def dockerignore_rules() -> list[tuple[re.Pattern[str], bool]]:
    """Return (pattern, excludes) pairs; the last rule matching a path or a parent decides."""
    rules = []
    for raw in (ROOT / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = line.lstrip("!").strip().strip("/")
        regex = ""
        i = 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                regex, i = regex + "(?:.*/)?", i + 3
            elif pattern.startswith("**", i):
                regex, i = regex + ".*", i + 2
            elif pattern[i] == "*":
                regex, i = regex + "[^/]*", i + 1
            elif pattern[i] == "?":
                regex, i = regex + "[^/]", i + 1
            elif pattern[i] == "[":
                end = pattern.index("]", i)
                regex, i = regex + pattern[i : end + 1], end + 1
            else:
                regex, i = regex + re.escape(pattern[i]), i + 1
        rules.append((re.compile(regex), not negated))
    return rules


def excluded_from_context(path: str) -> bool:
    """Whether docker leaves `path` (relative to the repository) out of the build context."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    verdict = False
    for regex, excludes in dockerignore_rules():
        if any(regex.fullmatch(p) for p in prefixes):
            verdict = excludes
    return verdict


def test_dockerignore_keeps_secrets_databases_and_clutter_out_of_the_context() -> None:
    for path in (
        ".env",
        ".venv/bin/python",
        ".git/HEAD",
        "tests/data/focus_sample.csv",
        "mlcost.db",
        "mlcost.db-wal",
        "mlcost-demo/model.png",
        "bot/.env",
        "bot/cli/__pycache__/context.cpython-311.pyc",
        "benchmarks/alerts.py",
    ):
        assert excluded_from_context(path), f"{path} would be sent to the docker build"


def test_dockerignore_lets_through_everything_the_build_copies(stages: list[Stage]) -> None:
    sources: list[str] = []
    for stage in stages:
        for copy in stage.all("COPY"):
            if copy.startswith("--from="):
                continue
            sources += copy.split()[:-1]
    # the wheel needs its readme and every package pyproject.toml lists
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    needed = {project["project"]["readme"], "pyproject.toml"}
    needed |= {p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert needed <= set(sources), f"the build stage does not copy {needed - set(sources)}"
    for source in sources:
        path = ROOT / source
        assert path.exists(), f"COPY {source}: no such file in the repository"
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        for file in files:
            relative = file.relative_to(ROOT).as_posix()
            if "__pycache__" in relative:
                continue
            assert not excluded_from_context(relative), f".dockerignore hides {relative}"


# ---- compose.yaml -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {str(k): str(v) for k, v in env.items()}


def env_files(service: dict[str, Any]) -> list[str]:
    files = service.get("env_file") or []
    files = [files] if isinstance(files, str | dict) else files
    return [f["path"] if isinstance(f, dict) else f for f in files]


def mlcost_services(compose: dict[str, Any], stages: list[Stage]) -> dict[str, list[str]]:
    """Return each service built from the Dockerfile with the argv it runs."""
    runtime = stages[-1]
    found = {}
    for name, service in compose["services"].items():
        if "build" not in service:
            continue
        entrypoint = service.get("entrypoint", exec_form(runtime.last("ENTRYPOINT") or ""))
        command = service.get("command", exec_form(runtime.last("CMD") or ""))
        assert isinstance(entrypoint, list) and isinstance(command, list), name
        found[name] = [*entrypoint, *command]
    return found


def test_compose_runs_postgres_16_on_a_named_volume_with_a_pg_isready_healthcheck(
    compose: dict[str, Any],
) -> None:
    db = compose["services"]["db"]
    assert db["image"] == "postgres:16"
    volume, _, target = db["volumes"][0].partition(":")
    assert target == "/var/lib/postgresql/data"
    assert volume in (compose.get("volumes") or {}), f"{volume} is not a named volume"
    assert "pg_isready" in db["healthcheck"]["test"]


def test_compose_migrates_once_before_serve_starts(
    compose: dict[str, Any], stages: list[Stage]
) -> None:
    commands = mlcost_services(compose, stages)
    migrate = compose["services"]["migrate"]
    assert commands["migrate"][0] == "mlcost"
    up = mlcost_accepts(commands["migrate"][1:])
    assert (up.command, up.db_command) == ("db", "upgrade")
    assert migrate["depends_on"]["db"]["condition"] == "service_healthy"
    assert str(migrate.get("restart", "no")) == "no"

    serve = compose["services"]["serve"]
    args = mlcost_accepts(commands["serve"][1:])
    assert args.command == "serve"
    assert serve["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert serve["depends_on"]["db"]["condition"] == "service_healthy"
    published = [str(p).rsplit(":", 1)[-1] for p in serve["ports"]]
    assert published == [str(args.port)]


def test_compose_takes_secrets_from_dot_env_and_writes_none_itself(
    compose: dict[str, Any], stages: list[Stage]
) -> None:
    assert not re.search(r"xox[bpa]-|xapp-", COMPOSE.read_text())
    db_env = environment(compose["services"]["db"])
    password = INTERPOLATION.fullmatch(db_env["POSTGRES_PASSWORD"])
    assert password, "POSTGRES_PASSWORD is written into compose.yaml"
    for name, service in compose["services"].items():
        for key, value in environment(service).items():
            if SECRET_NAME.search(key):
                assert INTERPOLATION.fullmatch(value), f"{name}: {key} holds a literal value"
            if key.startswith(("MLCOST_", "SLACK_")):
                assert key in SETTING_NAMES, f"{name}: mlcost reads no setting called {key}"
    for name in mlcost_services(compose, stages):
        service = compose["services"][name]
        assert env_files(service) == [".env"], name
        url = make_url(INTERPOLATION.sub(lambda m: f"INTERPOLATED_{m[1]}", service_url(service)))
        url.get_dialect()  # the driver is installed
        assert url.drivername == "postgresql+psycopg"
        assert url.host == "db" and url.port == 5432
        assert url.username == db_env["POSTGRES_USER"] and url.database == db_env["POSTGRES_DB"]
        assert url.password == f"INTERPOLATED_{password[1]}"


def service_url(service: dict[str, Any]) -> str:
    return environment(service)["MLCOST_DATABASE_URL"]


def test_docker_compose_config_accepts_the_file(tmp_path: Path) -> None:
    docker = shutil.which("docker")
    if (
        docker is None
        or subprocess.run([docker, "compose", "version"], capture_output=True).returncode
    ):
        pytest.skip("`docker compose` is not installed here; the structure is checked above")
    for name in ("compose.yaml", "Dockerfile"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / ".env").write_text("POSTGRES_PASSWORD=x\nSLACK_BOT_TOKEN=xoxb-test\n")
    result = subprocess.run(
        [docker, "compose", "config", "-q"], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


# ---- the systemd unit -------------------------------------------------------------------------


def parse_unit(text: str) -> dict[str, list[tuple[str, str]]]:
    """Return each section's (key, value) pairs in order (a key may repeat)."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), [])
            continue
        assert current is not None and "=" in line, f"unexpected line: {line}"
        key, _, value = line.partition("=")
        current.append((key.strip(), value.strip()))
    return sections


@pytest.fixture(scope="module")
def service() -> dict[str, list[str]]:
    pairs = parse_unit(UNIT.read_text())["Service"]
    found: dict[str, list[str]] = {}
    for key, value in pairs:
        found.setdefault(key, []).append(value)
    return found


def test_the_unit_migrates_then_serves_real_mlcost_commands(
    service: dict[str, list[str]],
) -> None:
    (pre,) = service["ExecStartPre"]
    (start,) = service["ExecStart"]
    pre_argv, start_argv = shlex.split(pre), shlex.split(start)
    assert Path(pre_argv[0]).name == Path(start_argv[0]).name == "mlcost"
    assert Path(start_argv[0]).is_absolute()
    up = mlcost_accepts(pre_argv[1:])
    assert (up.command, up.db_command) == ("db", "upgrade")
    assert mlcost_accepts(start_argv[1:]).command == "serve"


def test_the_unit_runs_as_a_dedicated_user_restarts_on_failure_and_is_hardened(
    service: dict[str, list[str]],
) -> None:
    (user,) = service["User"]
    assert user not in ("root", "0")
    entries = [ln.split()[:2] for ln in SYSUSERS.read_text().splitlines() if ln[:1] == "u"]
    assert entries == [["u", user]], "deploy/mlcost.sysusers creates another user"
    assert service["EnvironmentFile"] and service["Restart"] == ["on-failure"]
    assert service["KillSignal"] == ["SIGTERM"] and service["TimeoutStopSec"]
    for key, value in {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "PrivateTmp": "yes",
        "ProtectHome": "yes",
        "CapabilityBoundingSet": "",
    }.items():
        assert service.get(key) == [value], f"{key}={value} missing"


def test_systemd_analyze_verify_accepts_the_unit(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed here")
    # verify checks that the binaries exist: point them at this venv's mlcost
    mlcost = Path(sys.executable).with_name("mlcost")
    assert mlcost.exists()
    unit = tmp_path / "mlcost.service"
    unit.write_text(UNIT.read_text().replace("/opt/mlcost/venv/bin/mlcost", str(mlcost)))
    result = subprocess.run(
        [analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60
    )
    about_unit = [line for line in (result.stdout + result.stderr).splitlines() if "mlcost" in line]
    assert result.returncode == 0 and about_unit == [], result.stdout + result.stderr


# ---- docs/deploy.md ---------------------------------------------------------------------------


def documented_commands(text: str) -> list[tuple[str, list[str]]]:
    """Return (line, mlcost argv) for each line of the doc's shell blocks that runs mlcost."""
    found = []
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    for line in (ln.strip() for block in blocks for ln in block.splitlines()):
        tokens = shlex.split(line, comments=True)
        if tokens[:1] == ["sudo"]:
            tokens = tokens[1:]
        argv: list[str] | None = None
        if tokens[:3] == ["docker", "compose", "run"]:
            rest = skip_options(tokens[3:], {"-v", "--volume", "-e", "--env", "--name", "-w"})
            argv = ["mlcost", *rest[1:]]  # every service built from the Dockerfile runs mlcost
        elif tokens[:2] == ["docker", "run"]:
            rest = skip_options(tokens[2:], {"--env-file", "-p", "-v", "-e", "--name"})
            argv = ["mlcost", *rest[1:]]
        elif tokens[:1] == ["systemd-run"]:
            argv = skip_options(tokens[1:], {"-p", "--property", "-E", "--setenv"})
        elif tokens and (tokens[0] == "mlcost" or tokens[0].endswith("/bin/mlcost")):
            argv = tokens
        if argv is not None:
            found.append((line, argv))
    return found


def skip_options(tokens: list[str], taking_a_value: set[str]) -> list[str]:
    """Drop leading options (and the values of those that take one)."""
    i = 0
    while i < len(tokens) and tokens[i].startswith("-"):
        i += 2 if tokens[i] in taking_a_value else 1
    return tokens[i:]


def test_every_mlcost_command_in_the_deploy_doc_is_real(stages: list[Stage]) -> None:
    commands = documented_commands(DOC.read_text())
    assert len(commands) >= 6, commands
    default_cmd = exec_form(stages[-1].last("CMD") or "")
    for line, argv in commands:
        assert Path(argv[0]).name == "mlcost", line
        mlcost_accepts(argv[1:] or default_cmd)


def test_every_setting_the_deployment_names_is_one_mlcost_reads() -> None:
    for path in (DOC, COMPOSE, UNIT):
        for name in set(re.findall(r"\b(?:MLCOST|SLACK)_[A-Z_]+\b", path.read_text())):
            assert name in SETTING_NAMES, f"{path.name} names {name}, which mlcost never reads"


def test_the_doc_states_the_real_body_limit_and_the_proxy_limit_matches_it() -> None:
    text = DOC.read_text()
    limit = Settings.setting_fields()["max_body_bytes"].default
    assert "MLCOST_MAX_BODY_BYTES" in text and f"{limit} bytes" in text
    for pattern in (r"client_max_body_size (\d+)m", r"max_size (\d+)MiB"):  # nginx, Caddy
        sizes = re.findall(pattern, text)
        assert sizes and {int(n) * 1024 * 1024 for n in sizes} == {limit}, pattern


def aws_calls_in_code() -> set[str]:
    """Return the IAM action of every AWS API operation bot/ calls on a client it makes."""
    import botocore.session
    from botocore import xform_name

    # bot/demo/ builds its simulated account under moto (never real AWS): no permission needed
    demo = ROOT / "bot" / "demo"
    source = "\n".join(p.read_text() for p in (ROOT / "bot").rglob("*.py") if demo not in p.parents)
    services = set(re.findall(r"\baws(?:_client)?\(\s*\"([a-z0-9-]+)\"", source))
    assert {"ce", "s3", "athena", "cloudwatch", "sagemaker"} <= services
    # A client is a lower-case name (`client`, `self.client`, `cloudwatch`): not `re` or a
    # compiled `_PATTERN_RE`, whose .search( is no call to SageMaker's Search.
    called = set(re.findall(r"(?<![\w.])(?!re\.)[a-z_][a-z0-9_.]*\.([a-z_]\w*)\(", source))
    called |= set(re.findall(r"get_paginator\(\s*\"(\w+)\"", source))
    # a client method handed to a helper with its AWS parameters: `calls(..., ec2.stop_instances,
    # InstanceIds=ids)`
    called |= set(re.findall(r"\.([a-z][a-z0-9_]*),\s*[A-Z]\w*=", source))
    session = botocore.session.get_session()
    actions = set()
    for service in services:
        for operation in session.get_service_model(service).operation_names:
            if xform_name(operation) in called:
                actions.add(f"{service}:{IAM_ACTION.get(operation, operation)}")
    if "download_file" in called:  # s3transfer: HeadObject, then GetObject
        actions.add("s3:GetObject")
    return actions - NAME_ALIKES


# operations of one service matched only by the name of another's that bot/ calls
NAME_ALIKES = {"sagemaker:ListClusters"}  # eks list_clusters, not SageMaker HyperPod's


# operations authorised by an IAM action of another name
IAM_ACTION = {
    "ListObjectsV2": "ListBucket",
    "HeadObject": "GetObject",
    "GetBucketLifecycleConfiguration": "GetLifecycleConfiguration",
}


def test_the_doc_lists_every_aws_permission_the_code_needs() -> None:
    actions = aws_calls_in_code()
    assert "ce:GetCostAndUsage" in actions and "athena:StartQueryExecution" in actions
    text = DOC.read_text()
    assert [a for a in sorted(actions) if f"`{a}`" not in text] == []
