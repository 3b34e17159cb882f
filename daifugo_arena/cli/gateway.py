"""``arena gateway``: the process holding the connections of bots that dial out
(:class:`daifugo_arena.gateway.server.Gateway`; docs/operations.md, "Gateways"). Registered in
daifugo_arena.cli.COMMANDS."""

from __future__ import annotations

import asyncio
import logging
import signal

import click

from arena.config import Settings
from arena.db.session import shared_sessions
from arena.usecases.bots import Credentials, connect_bots, credentials
from bots_sdk.server import connections_allowed
from daifugo_arena.gateway.config import GatewayConfig
from daifugo_arena.gateway.server import Gateway

#: Files a gateway keeps open beside its connections (Redis, the database, logs, the listener).
FILE_RESERVE = 100


@click.command("gateway")
@click.option("--host", default="127.0.0.1", show_default=True, help="address to listen on")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="0: any free port")
@click.option("--max-connections", default=20_000, show_default=True, type=click.IntRange(1, 1_000_000))
def gateway(host: str, port: int, max_connections: int) -> None:
    """Serve bots that dial out on ws://HOST:PORT/v1/bots until SIGTERM or SIGINT.

    Reads ARENA_DATABASE_URL (the bots' secrets), ARENA_BROKER_URL (the Redis the workers
    use) and ARENA_PROXY_HOPS (trusted proxies: the client address of the per-address cap
    comes from their X-Forwarded-For); prints one line "gateway <id> listening on
    ws://HOST:PORT/v1/bots" once ready. Each connection is an open file: the soft limit
    (ulimit -n) is raised as far as the hard one allows, and --max-connections lowered to fit
    it, with a warning."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # a line per connection opened and closed is work a stranger's connection rate would set
    logging.getLogger("websockets.server").setLevel(logging.WARNING)
    allowed = connections_allowed(max_connections, FILE_RESERVE)
    if allowed < max_connections:
        click.echo(
            f"warning: the limit of open files allows {allowed} connections, not {max_connections}:"
            " raise it (ulimit -n, LimitNOFILE)",
            err=True,
        )
        max_connections = allowed
    settings = Settings.from_env()
    factory = shared_sessions(settings.database_url)

    def read(bot_id: int) -> Credentials | None:
        with factory() as session:
            return credentials(session, bot_id)

    def still_connect(bot_ids: list[int]) -> dict[int, float | None]:
        with factory() as session:
            return connect_bots(session, bot_ids)

    config = GatewayConfig(
        host=host,
        port=port,
        max_per_bot=settings.gateway_max_per_bot,
        max_per_account=settings.gateway_max_per_account,
        max_connections=max_connections,
        proxy_hops=settings.proxy_hops,
    )
    gw = Gateway(settings.broker_url, read, config, still_connect=still_connect)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)

        def ready(bound: int) -> None:
            click.echo(f"gateway {gw.id} listening on ws://{host}:{bound}/v1/bots")

        await gw.run(stop, ready)

    asyncio.run(main())
