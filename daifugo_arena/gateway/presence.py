"""The connections' presence (:class:`Presence`): their leases in Redis (the caps per bot and
per account), taken at the welcome, renewed every ``renew_s`` while the bot may still connect
with the secret the connection proved, released at the end (its requests then go back, or get
its fault)."""

from __future__ import annotations

import asyncio
import hmac
import logging
import time

import redis

from arena import relay
from arena.leases import LeaseSet, renew_many
from arena.usecases.bots import Credentials
from bots_sdk import wire
from daifugo_arena.gateway.answers import Answers
from daifugo_arena.gateway.connection import Connection
from daifugo_arena.gateway.credentials import CredentialsReader
from daifugo_arena.gateway.hub import Hub

log = logging.getLogger("arena.gateway")

#: Why :meth:`Presence.renew` closes a connection, by close code.
CLOSE_REASONS = {
    wire.CLOSE_BOT_GONE: "the bot was deleted or now has a URL",
    wire.CLOSE_AUTH_FAILED: "the secret this connection proved is no longer valid",
}


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def proof_stands(conn: Connection, grace_until: float | None, now: float) -> bool:
    """Whether the secret ``conn`` proved is still valid, judged without reading the secrets:
    the bot's secrets were not rotated since ``conn.creds`` were read (its ``grace_until`` is
    the same), and ``conn`` proved the current secret, or the previous one whose grace runs
    still at ``now`` (Unix seconds). False: its credentials must be read to judge it."""
    creds = conn.creds
    if grace_until != creds.grace_until or not creds.secrets:
        return False
    if _same(conn.secret, creds.secrets[0]):
        return True
    return grace_until is not None and now < grace_until and any(_same(conn.secret, s) for s in creds.secrets[1:])


def verdict(conn: Connection, creds: Credentials | None) -> int | None:
    """The close code of ``conn`` given its bot's credentials as read now: 4410 (deleted, or
    now called at a URL), 4401 (the secret it proved is no longer valid), or None: it stays
    (and is judged against these credentials from now on)."""
    if creds is None or creds.transport != "connect":
        return wire.CLOSE_BOT_GONE
    if not any(_same(conn.secret, s) for s in creds.secrets):
        return wire.CLOSE_AUTH_FAILED
    conn.creds = creds
    return None


class Presence:
    """Holds, renews and releases the connections' leases."""

    def __init__(self, hub: Hub, reader: CredentialsReader, answers: Answers):
        self.hub, self.reader, self.answers = hub, reader, answers

    def _leases(self, conn: Connection) -> tuple[LeaseSet, LeaseSet]:
        cfg = self.hub.config
        return (
            LeaseSet(self.hub.sync, relay.conns_key(conn.bot_id), cfg.max_per_bot),
            LeaseSet(self.hub.sync, relay.account_key(conn.creds.owner_id), cfg.max_per_account),
        )

    async def register(self, conn: Connection) -> str | None:
        """Take the connection's leases (per bot, per account) and hold it; the refusal, or None."""
        bot_set, account_set = self._leases(conn)
        cfg, hub = self.hub.config, self.hub

        def take() -> str | None:
            if not bot_set.take(conn.member, relay.LEASE_S):
                return f"this bot already has {cfg.max_per_bot} connections"
            if not account_set.take(conn.member, relay.LEASE_S):
                bot_set.release(conn.member)
                return f"this account's bots already have {cfg.max_per_account} connections"
            try:  # the bot is back: an earlier outage no longer covers its absence
                hub.sync.eval(relay.MARK_BACK, 1, relay.back_key(conn.bot_id), relay.BACK_TTL_S, hub.id)
            except redis.RedisError as exc:
                log.warning("return of bot %s not recorded: %s", conn.bot_id, exc)
            return None

        try:
            why = await asyncio.to_thread(take)
        except redis.RedisError as exc:
            log.warning("presence not recorded: %s", exc)
            return "the arena cannot record the connection now: try again"
        if why is None:
            first = conn.bot_id not in hub.bots
            hub.bots.setdefault(conn.bot_id, []).append(conn)
            if first:  # requests that waited for it: after its leases, so no push is missed
                await hub.ring_self(conn.bot_id)
        return why

    async def unregister(self, conn: Connection) -> None:
        """``conn`` ended: its requests in flight get its fault (:attr:`Connection.violation`),
        or go back to the front of its bot's list; its leases are released."""
        conns = self.hub.bots.get(conn.bot_id, [])
        if conn in conns:
            conns.remove(conn)
        if not conns:
            self.hub.bots.pop(conn.bot_id, None)
        pending, conn.pending = conn.pending, {}
        try:
            if conn.violation is not None:
                fault = relay.fault_item(*conn.violation)
                for rid, (deadline, _) in pending.items():
                    self.answers.queue(rid, fault, deadline)
            else:  # back to the front of the bot's list, for another connection or its return
                now = time.time()
                back = [env for deadline, env in pending.values() if deadline > now]
                if back:  # and ring the gateways of its other connections (this one's too)
                    await self.hub.r.eval(relay.PUSH_AND_RING, *relay.push_args(conn.bot_id, back, front=True))
        except redis.RedisError as exc:
            log.warning("requests of a closed connection not given back: %s", exc)
        bot_set, account_set = self._leases(conn)

        def release() -> None:
            bot_set.release(conn.member)
            account_set.release(conn.member)

        try:
            await asyncio.to_thread(release)
        except redis.RedisError:
            pass  # the leases end by themselves

    async def renew_loop(self) -> None:
        """:meth:`renew` every ``renew_s`` seconds, on a task of its own: a database that
        stops answering delays the renewals, never the alive key (a gateway whose alive key
        lapses is taken for dead: the workers queue its requests again)."""
        while not self.hub.stopping:
            await asyncio.sleep(self.hub.config.renew_s)
            try:
                await self.renew()
            except Exception:  # never end the renewals
                log.exception("renewal failed")

    async def renew(self) -> None:
        """Renew every connection's presence (one round trip for all); close the connections of
        bots deleted or changed to a URL (4410), and those that proved a secret no longer valid
        (4401: rotated twice, or the grace of a rotation over; a thief holding a leaked secret
        must not keep playing as the bot on a connection it opened before).

        With :data:`daifugo_arena.gateway.credentials.StillConnectFn`, the database is asked once for every
        bot held; a bot's credentials are read only for a connection whose proof that answer
        cannot judge: its bot's secrets were rotated since they were read. Without it, each
        bot's credentials are read. When the database does not answer, the connections it
        would judge are kept as they are (not the bots' fault), and their presence is renewed
        all the same."""
        hub = self.hub
        ids = list(hub.bots)
        if not ids:
            return
        leases: list[tuple[str, str]] = []
        for c in await self._judge(ids):
            if c not in hub.bots.get(c.bot_id, ()):
                continue  # closed meanwhile: a lease renewed now would outlive it
            leases += [(relay.conns_key(c.bot_id), c.member), (relay.account_key(c.creds.owner_id), c.member)]

        def renew() -> None:  # one round trip for all; a lease that ended (Redis lost it) is held again
            renewed = renew_many(hub.sync, leases, relay.LEASE_S)
            lost = [lease for lease, ok in zip(leases, renewed) if not ok]
            if lost:
                pipe = hub.sync.pipeline(transaction=False)
                for key, m in lost:
                    pipe.zadd(key, {m: time.time() + relay.LEASE_S})
                pipe.execute()

        if not leases:
            return
        try:
            await asyncio.to_thread(renew)
        except (redis.RedisError, OSError) as exc:
            log.warning("presence not renewed: %s", exc)

    async def _judge(self, ids: list[int]) -> list[Connection]:
        """The connections of the bots ``ids`` that stay (:meth:`renew`); the others are closed."""
        bots = self.hub.bots
        stamps: dict[int, float | None] | None = None
        if self.reader.still_connect is not None:
            stamps = await self.reader.connect_bots(ids)
            if stamps is None:  # the database does not answer: every connection stays as it is
                return [c for b in ids for c in bots.get(b, [])]
        now = time.time()
        readable = True  # no more reads once one failed
        keep: list[Connection] = []
        for bot_id in ids:
            conns = list(bots.get(bot_id, []))
            if stamps is not None:
                if bot_id not in stamps:
                    for c in conns:
                        self._close(c, wire.CLOSE_BOT_GONE)
                    continue
                stands = [c for c in conns if proof_stands(c, stamps[bot_id], now)]
                keep += stands
                conns = [c for c in conns if c not in stands]
            if not conns:
                continue
            creds: Credentials | None = None
            if readable:
                try:
                    creds = await self.reader.read(bot_id, fresh=stamps is not None)
                except Exception as exc:
                    readable = False
                    log.warning("credentials unreadable (%s): connections kept as they are", exc)
            if not readable:
                keep += conns
                continue
            for c in conns:
                code = verdict(c, creds)
                if code is None:
                    keep.append(c)
                else:
                    self._close(c, code)
        return keep

    def _close(self, conn: Connection, code: int) -> None:
        """Close ``conn`` for :meth:`renew` (its requests go back to its bot's list)."""
        why = CLOSE_REASONS.get(code, "closed")
        self.hub.background(conn.ws.close(code, why))
