"""infra/docker-compose.yml and infra/Dockerfile, checked without Docker (no engine runs on
these machines): YAML structure, service commands parsed by the real CLI, environment read by
the real Settings, start order, and the Dockerfile's COPY sources."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from arena.config import Settings
from arena.db.session import normalize_url

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "infra" / "docker-compose.yml"
DOCKERFILE = REPO / "infra" / "Dockerfile"
ARENA_SERVICES = ("migrate", "api", "worker", "gateway", "beat", "flower")


def _interpolate(value: str) -> str:
    """Compose's ``${VAR:-default}`` with every variable unset."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", value)


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_services_and_volumes(compose):
    assert set(compose["services"]) == {"postgres", "redis", "proxy", *ARENA_SERVICES}
    assert set(compose["volumes"]) == {"pgdata", "redisdata", "arenadata"}
    assert compose["services"]["postgres"]["image"].startswith("postgres:15")
    assert compose["services"]["redis"]["image"].startswith("redis:")
    for name in ("postgres", "redis"):
        assert compose["services"][name]["healthcheck"]["test"], name


def test_arena_services_build_one_image_from_the_repo(compose):
    for name in ARENA_SERVICES:
        svc = compose["services"][name]
        assert svc["image"] == "daifugo-arena:latest", name
        context = (COMPOSE.parent / svc["build"]["context"]).resolve()
        assert context == REPO, name
        assert (context / svc["build"]["dockerfile"]).resolve() == DOCKERFILE, name


def test_environment_is_read_by_settings(compose):
    pg = compose["services"]["postgres"]["environment"]
    for name in ARENA_SERVICES:
        env = {k: _interpolate(str(v)) for k, v in compose["services"][name]["environment"].items()}
        settings = Settings.from_env(env)
        assert settings.database_url == normalize_url(settings.database_url)  # psycopg 3 driver
        assert settings.database_url == (
            f"postgresql+psycopg://{pg['POSTGRES_USER']}:{_interpolate(pg['POSTGRES_PASSWORD'])}"
            f"@postgres:5432/{pg['POSTGRES_DB']}"
        )
        assert settings.broker_url == "redis://redis:6379/0"
        assert settings.celery_eager is False and settings.allow_private_bot_urls is False


def _cli_context(args: list[str]):
    """Parse ``arena ARGS`` with the real click commands (raises click errors if wrong)."""
    import click

    from daifugo_arena.cli import main

    ctx = click.Context(main)
    cmd: click.Command = main
    rest = list(args)
    while isinstance(cmd, click.Group):
        name, *rest = rest
        sub_cmd = cmd.get_command(ctx, name)
        assert sub_cmd is not None, name
        ctx = click.Context(sub_cmd, info_name=name, parent=ctx)
        cmd = sub_cmd
    sub = cmd.make_context(cmd.name, rest, parent=ctx.parent)
    return cmd, sub


def test_migrate_job_runs_first(compose):
    svc = compose["services"]
    assert svc["migrate"]["command"] == ["arena", "db", "upgrade"]
    assert svc["migrate"]["restart"] == "no"
    assert svc["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in ("api", "worker"):
        assert svc[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert svc[name]["depends_on"]["redis"]["condition"] == "service_healthy"
    cmd, ctx = _cli_context(svc["migrate"]["command"][1:])
    assert cmd.name == "upgrade" and ctx.params["revision"] == "head"


def test_api_runs_gunicorn_on_all_interfaces(compose):
    api = compose["services"]["api"]
    assert api["command"][:2] == ["arena", "api"]
    cmd, ctx = _cli_context(api["command"][1:])
    assert ctx.params["host"] == "0.0.0.0" and ctx.params["port"] == 8000
    assert ctx.params["dev"] is False  # gunicorn, not the Flask dev server
    assert ctx.params["upgrade"] is False  # the migrate job did it
    assert ctx.params["workers"] >= 2
    assert "ports" not in api and api["expose"] == ["8000"]  # reached through the proxy only
    assert api["environment"]["ARENA_PROXY_HOPS"] == "1"
    assert api["environment"]["ARENA_BROKER_URL"] == "redis://redis:6379/0"  # rate limits' Redis


def test_nginx_buffers_in_front_of_the_api(compose):
    proxy = compose["services"]["proxy"]
    assert proxy["image"].startswith("nginx:")
    assert "8000:8000" in proxy["ports"] and proxy["depends_on"] == ["api", "gateway"]
    source, target = proxy["volumes"][0].split(":")[:2]
    assert target == "/etc/nginx/nginx.conf"
    conf = (Path(__file__).resolve().parents[2] / "infra" / source.removeprefix("./")).read_text()
    for directive in (
        "proxy_pass http://arena_api;",
        "server api:8000;",
        "proxy_request_buffering on;",
        "proxy_buffering on;",
        "client_header_timeout 10s;",
        "client_body_timeout 10s;",
        "client_max_body_size 1m;",
        "X-Forwarded-For $proxy_add_x_forwarded_for;",
        # bots that dial out: the WebSocket upgrade to the gateways
        "location = /v1/bots {",
        "server gateway:8765;",
        "proxy_set_header Upgrade $http_upgrade;",
        'proxy_set_header Connection "upgrade";',
    ):
        assert directive in conf, directive
    assert conf.count("{") == conf.count("}")
    assert compose["services"]["gateway"]["command"][:2] == ["arena", "gateway"]


def test_every_arena_container_shares_the_data_folder(compose):
    """The key file that encrypts the bots' secrets (ARENA_DATA_DIR, unless
    ARENA_ENCRYPTION_KEYS is set) is one file: the API encrypts, the workers and the gateways
    decrypt with it."""
    for name in ARENA_SERVICES:
        svc = compose["services"][name]
        data_dir = Settings.from_env({k: _interpolate(str(v)) for k, v in svc["environment"].items()}).data_dir
        assert f"arenadata:{data_dir}" in svc["volumes"], name


def _location(conf: str, path: str) -> str:
    return conf.split(f"location = {path} {{", 1)[1].split("}", 1)[0]


def test_the_gateway_serves_bots_that_dial_out_behind_the_proxy(compose):
    from bots_sdk import wire

    gw = compose["services"]["gateway"]
    cmd, ctx = _cli_context(gw["command"][1:])  # parsed by the real CLI
    assert cmd.name == "gateway" and ctx.params["host"] == "0.0.0.0"
    port = ctx.params["port"]
    assert gw["expose"] == [str(port)] and "ports" not in gw  # reached through the proxy only
    assert gw["depends_on"]["redis"]["condition"] == "service_healthy"
    assert gw["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert f"http://127.0.0.1:{port}/health" in " ".join(gw["healthcheck"]["test"])
    assert gw["ulimits"]["nofile"]["soft"] >= ctx.params["max_connections"] + 1000
    conf = (REPO / "infra" / "nginx.conf").read_text()
    assert f"server gateway:{port};" in conf
    ws = _location(conf, wire.PATH)
    assert "proxy_pass http://arena_gateway;" in ws and "proxy_http_version 1.1;" in ws
    read_timeout = int(re.search(r"proxy_read_timeout (\d+)s;", ws).group(1))
    assert read_timeout > 20  # over the gateway's ping interval: an idle bot is not cut off
    # nginx holds two connections per bot (the bot's and its gateway's), each a descriptor
    rlimit = int(re.search(r"worker_rlimit_nofile (\d+);", conf).group(1))
    worker_connections = int(re.search(r"worker_connections (\d+);", conf).group(1))
    assert worker_connections // 2 >= 8000 and rlimit >= worker_connections
    assert compose["services"]["proxy"]["ulimits"]["nofile"]["hard"] >= rlimit
    # the address every arena service gives bots: the proxy's published port, the gateway path
    published = {p.split(":")[-1] for p in compose["services"]["proxy"]["ports"]}
    for name in ARENA_SERVICES:
        env = {k: _interpolate(str(v)) for k, v in compose["services"][name]["environment"].items()}
        url = Settings.from_env(env).gateway_url
        assert re.fullmatch(rf"wss?://[^/:]+:(\d+){wire.PATH}", url), (name, url)
        assert url.rsplit(":", 1)[1].split("/")[0] in published, (name, url)


def test_workers_consume_the_match_queue(compose):
    from arena.queue import CHECK_QUEUE, LADDER_QUEUE, PRIORITY_QUEUE, QUEUE, WEBHOOK_QUEUE
    from daifugo_arena.cli.worker import CHECK_QUEUES, WORKER_QUEUES

    worker = compose["services"]["worker"]
    command = worker["command"]
    assert command[:2] == ["arena", "worker"]
    _cmd, ctx = _cli_context(command[1:])  # parsed by the real CLI
    assert ctx.params["queues"].split(",") == list(WORKER_QUEUES) == [PRIORITY_QUEUE, QUEUE, LADDER_QUEUE]
    assert ctx.params["pool"] == "threads" and ctx.params["processes"] * ctx.params["concurrency"] >= 32
    # the bot checks: a process of their own in each container, a few threads (issue 24); the
    # owners' webhooks there too, first (issue 42)
    assert CHECK_QUEUES == (WEBHOOK_QUEUE, CHECK_QUEUE) and 1 <= ctx.params["checks"] <= 8
    # each worker process's pool (kept open, plus a burst) fits PostgreSQL with room for the API
    from arena.db.session import POOL_OVERFLOW, POOL_SIZE

    replicas = int(_interpolate(str(worker["deploy"]["replicas"])))
    pg_command = compose["services"]["postgres"]["command"]
    max_connections = int(pg_command[pg_command.index("-c") + 1].split("=")[1])
    # ... and the check process's pool (arena.db.session.shared_sessions: the same 10 + 5 at most)
    assert replicas * (ctx.params["processes"] * (POOL_SIZE + POOL_OVERFLOW) + 15) + 50 <= max_connections
    beat = compose["services"]["beat"]
    assert beat["command"][:2] == ["arena", "beat"] and beat["deploy"]["replicas"] == 1
    assert replicas >= 1
    import worker.celery_app as celery_app  # the -A target imports

    assert celery_app.app.main == "arena"
    flower = compose["services"]["flower"]["command"]
    assert flower[:2] == ["sh", "-c"] and "exec celery -A worker.celery_app flower " in flower[2]


def test_dockerfile_copies_every_package():
    text = DOCKERFILE.read_text()
    assert text.startswith("#") and "FROM python:3.11" in text
    sources = []
    for line in text.splitlines():
        if line.startswith("COPY ") and not line.startswith("COPY --from="):
            *srcs, _dest = line.split()[1:]
            sources += srcs
    for src in sources:
        assert (REPO / src).exists(), src
    include = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {p.rstrip("*") for p in include}
    assert packages <= set(sources), packages - set(sources)
    assert {"pyproject.toml", "setup.py", "infra/build_backend.py"} <= set(sources)  # the build and its backend
    # the engine compiled into a wheel (first stage), installed with the service's extra (second)
    assert "RUN ARENA_ENGINE_BUILD=compiled pip wheel " in text and "COPY --from=build /wheels /wheels" in text
    assert re.search(r'pip install [^\n]*"\$\(ls /wheels/daifugo_arena-\*\.whl\)\[server\]" [^\n]*"flower', text)
    assert "ARENA_ENGINE=compiled" in text


@pytest.mark.skipif(shutil.which("docker") is None, reason="no docker client")
def test_docker_compose_config_when_available():
    """``docker compose config`` validates without an engine, when the compose plugin exists."""
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip("docker client without the compose plugin")
    done = subprocess.run(["docker", "compose", "-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_only_the_proxy_is_published_on_every_interface(compose):
    """The attacker of issue 29 read worker names, hosts, pids, queues and the broker's host
    from Flower, published on 0.0.0.0:5555 without authentication. Only the proxy's port is
    reachable from other hosts; anything else published binds this host's loopback."""
    published = {}
    for name, svc in compose["services"].items():
        for port in svc.get("ports", []):
            published.setdefault(name, []).append(str(port))
    assert published.pop("proxy") == ["8000:8000"]
    assert published == {"flower": ["127.0.0.1:5555:5555"]}


def _flower_script(compose) -> str:
    """The flower service's shell script as the container runs it (compose's ``$$`` is ``$``)."""
    return compose["services"]["flower"]["command"][2].replace("$$", "$")


@pytest.mark.parametrize("content", [None, "", "\n", "admin\n", ":secret\n", "admin:\n"])
def test_flower_does_not_start_without_a_user_and_password(compose, tmp_path, content):
    """Flower runs only with ``--profile monitor`` and only with the basic-auth secret: no
    file, an empty one or one without ``user:password`` on its first line stops it before
    celery starts (fail closed, never an open Flower)."""
    assert compose["services"]["flower"]["profiles"] == ["monitor"]
    assert compose["services"]["flower"]["secrets"] == ["flower_basic_auth"]
    assert compose["secrets"]["flower_basic_auth"] == {"file": "./secrets/flower-basic-auth"}
    secret = tmp_path / "flower-basic-auth"
    if content is not None:
        secret.write_text(content)
    done = _run_flower(compose, tmp_path, secret)
    assert done.returncode == 1 and "not started" in done.stderr
    assert not (tmp_path / "celery-ran").exists()


def test_flower_starts_with_the_secret_as_its_basic_auth(compose, tmp_path):
    secret = tmp_path / "flower-basic-auth"
    secret.write_text("boss:correct horse battery\nignored second line\n")
    done = _run_flower(compose, tmp_path, secret)
    assert done.returncode == 0, done.stderr
    argv, auth = (tmp_path / "celery-ran").read_text().split("\n", 1)
    assert argv == "-A worker.celery_app flower --address=0.0.0.0 --port=5555"
    assert auth == "boss:correct horse battery\n"  # FLOWER_BASIC_AUTH: never on the command line


def _run_flower(compose, tmp_path: Path, secret: Path) -> subprocess.CompletedProcess:
    """Run the service's script with ``sh`` and a stand-in ``celery`` that records its
    arguments and ``FLOWER_BASIC_AUTH`` (Flower reads its options from ``FLOWER_*``)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    stub = bin_dir / "celery"
    stub.write_text(f'#!/bin/sh\nprintf "%s\\n%s\\n" "$*" "$FLOWER_BASIC_AUTH" > {tmp_path / "celery-ran"}\n')
    stub.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "FLOWER_BASIC_AUTH_FILE": str(secret)}
    assert compose["services"]["flower"]["environment"]["FLOWER_BASIC_AUTH_FILE"] == "/run/secrets/flower_basic_auth"
    return subprocess.run(["sh", "-c", _flower_script(compose)], env=env, capture_output=True, text=True, timeout=30)
