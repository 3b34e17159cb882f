"""A bot's health endpoint that drips its answer cannot hold a worker: the whole exchange,
headers included, ends at the check's deadline (arena.conformance.health_check)."""

from __future__ import annotations

import socket
import threading

import pytest

from arena.conformance import health_check


def _dripping_server(phase: str) -> tuple[socket.socket, threading.Event]:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(5)
    stop = threading.Event()

    def serve() -> None:
        conn, _ = srv.accept()
        conn.recv(4096)
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n"
        try:
            if phase == "headers":  # one header byte every 0.3 s, never the end of the headers
                for b in head:
                    if stop.wait(0.3):
                        break
                    conn.sendall(bytes([b]))
            else:  # complete headers, then one body byte every 0.3 s
                conn.sendall(head + b"\r\n")
                while not stop.wait(0.3):
                    conn.sendall(b" ")
        except OSError:
            pass
        finally:
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return srv, stop


@pytest.mark.parametrize("phase", ["headers", "body"])
def test_a_dripping_health_answer_is_cut_at_the_deadline(phase):
    srv, stop = _dripping_server(phase)
    result: dict = {}
    t = threading.Thread(
        target=lambda: result.update(
            health_check(f"http://127.0.0.1:{srv.getsockname()[1]}/", timeout_s=1.0, allow_private=True)
        ),
        daemon=True,
    )
    try:
        t.start()
        t.join(30)  # a hang check, not a timing goal: the drip alone would last minutes
        assert not t.is_alive(), "the health check is still waiting for a dripping bot"
        assert result["ok"] is False and result["error"] == "no complete answer within 1 s"
    finally:
        stop.set()
        srv.close()
