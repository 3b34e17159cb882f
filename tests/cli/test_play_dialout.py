"""``arena play`` seats bots that dial out (``connect``, ``connect:ID``) through a gateway of its
own: every bot here is a real process (``arena bots connect``, tests/dialout_bot.py, the
starters of ``starters/`` built by tests/starter_builds.py) connecting to ``arena play``, itself
a real process, over real WebSocket connections on 127.0.0.1."""

from __future__ import annotations

import asyncio
import datetime
import os
import re
import shlex
import signal
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.matchlog import read_log
from tests.helpers import wait_until
from tests.starter_builds import HEALTH_NAMES, STARTERS, command, skip_unless

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
DIALOUT_BOT = REPO / "tests" / "dialout_bot.py"
#: Seconds one ``arena play`` run may take before the test fails (a hang guard).
PLAY_TIMEOUT_S = 300.0
#: Options making every decision kind of each rule set come up (LR-5 give, LR-6 discard).
OPTIONS = {
    "million_doubt": "{}",
    "trump_millionaire": '{"target_score": 20, "seven_pass": true, "ten_discard": true}',
    "jdf": '{"seven_pass": true, "ten_discard": true}',
}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_BOT_") and k != "ARENA_GATEWAY_URL"}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _shell(argv: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)


PY_BOT = _shell([sys.executable, "-m", "daifugo_arena.cli", "bots", "connect"])


def arena_play(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "daifugo_arena.cli", "play", "-q", *args],
        cwd=REPO,
        env=env or _env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PLAY_TIMEOUT_S,
    )


def table(output: str) -> dict[str, list[str]]:
    """The rows of the results table: bot -> [seat-games, wins, win rate, mean score, faults]."""
    rows = {}
    for line in output.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 6 and cells[1].isdigit():
            rows[cells[0]] = cells[1:]
    return rows


def test_two_programs_that_dial_out_play_and_their_logs_verify(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    out = arena_play(
        "--ruleset", "jdf", "--games", "2", "--seed", "4", "--logs", str(logs),
        "--run", f"{PY_BOT} random", "--run", f"{PY_BOT} greedy",
        "connect", "connect:2",
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert "connect: connected (bot 1, 'random')" in out.stdout
    assert "connect:2: connected (bot 2, 'greedy')" in out.stdout
    rows = table(out.stdout)
    assert set(rows) == {"connect", "connect:2"} and rows["connect"][0] == rows["connect:2"][0] == "4"
    assert rows["connect"][4] == rows["connect:2"][4] == "0", out.stdout
    assert "warning:" not in out.stdout
    log = read_log(logs / "match-0000.json.gz")
    assert [p["kind"] for p in log["players"]] == ["connect"] * 4 and log["faults"] == []
    verified = subprocess.run(
        [sys.executable, "-m", "daifugo_arena.cli", "logs", "verify", str(logs)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert verified.returncode == 0 and "2 verified, 0 failed" in verified.stdout, verified.stdout


def test_a_bot_started_in_another_terminal_connects_with_the_printed_variables(tmp_path: Path) -> None:
    env = {**_env(), "ARENA_BOT_SECRET": "my-local-secret"}
    play = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "daifugo_arena.cli",
            "play",
            "-q",
            "--games",
            "2",
            "--gateway-port",
            "0",
            "connect",
            "greedy",
        ],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    bot = None
    try:
        assert play.stdout is not None
        lines = []
        while "waiting for your bot" not in (line := play.stdout.readline()):
            assert line, "".join(lines)
            lines.append(line)
        # "connect: waiting for your bot to connect; start it with ARENA_GATEWAY_URL=... ARENA_BOT_ID=1
        # ARENA_BOT_SECRET=$ARENA_BOT_SECRET" (the secret given in the environment is not printed)
        told = dict(re.findall(r"(ARENA_[A-Z_]+)=(\S+)", line))
        assert told["ARENA_BOT_ID"] == "1" and told["ARENA_BOT_SECRET"] == "$ARENA_BOT_SECRET"  # not printed
        assert told["ARENA_GATEWAY_URL"].startswith("ws://127.0.0.1:")
        bot_env = {**_env(), "ARENA_GATEWAY_URL": told["ARENA_GATEWAY_URL"], "ARENA_BOT_ID": "1"}
        bot_env["ARENA_BOT_SECRET"] = "my-local-secret"
        bot = subprocess.Popen(
            [sys.executable, "-m", "daifugo_arena.cli", "bots", "connect", "heuristic"],
            env=bot_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        rest, _ = play.communicate(timeout=PLAY_TIMEOUT_S)
        assert play.returncode == 0, rest
        assert "connect: connected (bot 1, 'heuristic')" in rest and table(rest)["connect"][4] == "0", rest
        assert bot.poll() is None  # started by the user: arena play leaves it running
    finally:
        for p in (play, bot):
            if p is not None and p.poll() is None:
                p.terminate()
                p.wait(30)


def test_a_wrong_secret_is_refused_with_4401_and_said(tmp_path: Path) -> None:
    out = arena_play(
        "--games", "1", "--run", f"env ARENA_BOT_SECRET=not-the-secret {PY_BOT} random", "connect", "greedy"
    )
    assert out.returncode == 1, out.stdout + out.stderr
    said = out.stdout + out.stderr
    assert "stopped (exit status 1) before it connected" in said
    assert "its connections were refused: 4401 authentication failed" in said
    assert "the gateway closed the connection with 4401" in said  # the program's own output, shown


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def test_a_program_that_never_connects_is_stopped_and_said(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    silent = _shell(
        [
            sys.executable,
            "-c",
            f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(600)",
        ]
    )
    out = arena_play("--games", "1", "--connect-wait", "2", "--run", silent, "connect", "greedy")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "connect: no connection of bot 1 within 2 s" in out.stdout + out.stderr
    assert _pid_gone(int(pid_file.read_text()))


def test_sigterm_stops_arena_play_and_the_programs_it_started(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    slow = _shell([sys.executable, str(DIALOUT_BOT), "--think-first", "600", "--pid-file", str(pid_file)])
    play = subprocess.Popen(
        [sys.executable, "-m", "daifugo_arena.cli", "play", "-q", "--games", "1", "--run", slow, "connect", "greedy"],
        cwd=REPO,
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert play.stdout is not None
        while "connect: connected" not in (line := play.stdout.readline()):
            assert line, "arena play ended before the bot connected"
        pid = int(wait_until(lambda: pid_file.exists() and pid_file.read_text(), "the bot's pid written"))
        play.send_signal(signal.SIGTERM)  # mid-match: the bot thinks for 600 s
        assert play.wait(60) == 128 + signal.SIGTERM
        assert _pid_gone(pid)
    finally:
        if play.poll() is None:
            play.kill()
            play.wait(30)


def test_a_bot_that_sends_no_pings_is_named(tmp_path: Path) -> None:
    """Its first decision takes 16 s (of a 60 s bank): the match lasts longer than the protocol's
    silence (15 s) and the bot never pinged."""
    quiet = _shell([sys.executable, str(DIALOUT_BOT), "--no-pings", "--think-first", "16"])
    out = arena_play("--games", "1", "--run", quiet, "connect", "greedy")
    assert out.returncode == 0, out.stdout + out.stderr
    assert table(out.stdout)["connect"][4] == "0"
    assert re.search(r"warning: connect sent no keep-alive ping in \d+ s \(0 in all\)", out.stdout), out.stdout


@pytest.mark.parametrize("lang", [pytest.param(s, marks=skip_unless(s)) for s in STARTERS])
def test_each_starter_plays_every_rule_set_locally(lang: str) -> None:
    """The starter's first test, as its README gives it: arena play with --run, in each rule set
    (the local rules that ask give and discard on): every decision answered legally."""
    run = _shell(command(lang))
    for ruleset, options in OPTIONS.items():
        out = arena_play(
            "--ruleset", ruleset, "--games", "2", "--seed", "7", "--options", options, "--run", run, "connect", "greedy"
        )
        assert out.returncode == 0, out.stdout + out.stderr
        assert f"connect: connected (bot 1, '{HEALTH_NAMES[lang]}')" in out.stdout, out.stdout
        rows = table(out.stdout)
        assert int(rows["connect"][0]) >= 2 and rows["connect"][4] == "0", out.stdout
        assert "first fault" not in out.stdout and "warning:" not in out.stdout, out.stdout


class TlsProxy:
    """A TLS front on 127.0.0.1 (the arena's HTTPS reverse proxy, ``wss://``) passing the bytes
    of each connection to ``target_port``: a certificate for ``localhost`` of a throwaway
    authority, in ``folder`` (``ca.pem``, and ``ca.p12`` for Java's trust store)."""

    def __init__(self, folder: Path, target_port: int):
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256())
        )
        self.ca = folder / "ca.pem"
        self.ca.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path = folder / "key.pem"
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.ca, key_path)
        self.target_port = target_port
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(context, ready), daemon=True)
        self._thread.start()
        assert ready.wait(30)

    def _run(self, context: ssl.SSLContext, ready: threading.Event) -> None:
        async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            finally:
                writer.close()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
            except OSError:
                writer.close()
                return
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer), return_exceptions=True)

        async def main() -> None:
            self._server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            await self._server.serve_forever()

        try:
            self._loop.run_until_complete(main())
        except asyncio.CancelledError:
            pass

    @property
    def url(self) -> str:
        return f"wss://localhost:{self.port}/v1/bots"

    def java_trust_store(self) -> Path:
        """The authority as a PKCS12 trust store (keytool of the JDK), for Java."""
        p12 = self.ca.with_suffix(".p12")
        subprocess.run(
            ["keytool", "-importcert", "-noprompt", "-alias", "arena-test", "-file", str(self.ca),
             "-keystore", str(p12), "-storetype", "PKCS12", "-storepass", "changeit"],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        return p12

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._server.close)
        for task in asyncio.all_tasks(self._loop):
            self._loop.call_soon_threadsafe(task.cancel)
        self._thread.join(30)


@pytest.fixture
def tls_front(tmp_path: Path, free_port) -> Iterator[TlsProxy]:
    proxy = TlsProxy(tmp_path, free_port())
    yield proxy
    proxy.close()


@pytest.mark.parametrize("lang", [pytest.param(s, marks=skip_unless(s)) for s in STARTERS])
def test_each_starter_dials_a_gateway_over_tls_and_checks_its_certificate(lang: str, tls_front: TlsProxy) -> None:
    """As behind the arena's HTTPS reverse proxy: ``wss://``, the gateway's certificate checked
    against the authorities the starter trusts (here a throwaway one), its host name too."""
    cmd = _shell(command(lang))
    if lang == "java":
        store = tls_front.java_trust_store()
        trust = f"JAVA_TOOL_OPTIONS=-Djavax.net.ssl.trustStore={store} -Djavax.net.ssl.trustStorePassword=changeit"
    else:
        trust = f"{'NODE_EXTRA_CA_CERTS' if lang == 'node' else 'SSL_CERT_FILE'}={tls_front.ca}"
    run = f"env {shlex.quote(trust)} ARENA_GATEWAY_URL={tls_front.url} {cmd}"
    out = arena_play("--games", "2", "--gateway-port", str(tls_front.target_port), "--run", run, "connect", "greedy")
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"connect: connected (bot 1, '{HEALTH_NAMES[lang]}')" in out.stdout
    assert table(out.stdout)["connect"][4] == "0", out.stdout
    # not trusting the authority: the handshake fails, the bot never connects
    refused = arena_play(
        "--games", "1", "--connect-wait", "3", "--gateway-port", str(tls_front.target_port),
        "--run", f"env ARENA_GATEWAY_URL={tls_front.url} {cmd}", "connect", "greedy",
    )  # fmt: skip
    assert refused.returncode == 1 and "no connection of bot 1 within 3 s" in refused.stdout + refused.stderr
