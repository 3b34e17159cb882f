// A Daifugo Arena bot in Node.js that dials out to the arena's gateway (docs/protocol.md,
// "Bots that dial out"). It opens no port: it connects, proves it holds its signing secret,
// then answers every decision request with a random legal action.
//
//   ARENA_BOT_ID=12 ARENA_GATEWAY_URL=wss://arena.example/v1/bots ARENA_BOT_SECRET=... node bot.js
//
// Replace chooseAction() with your strategy; the rest is the transport.
"use strict";

const crypto = require("node:crypto");
const WebSocket = require("ws");

const NAME = "node-starter";
const PROTOCOL = 1;
const MAX_FRAME_BYTES = 64 * 1024 + 512; // the gateway closes a connection on a larger frame (1009)
// Reconnection: at once after a connection that served drops (a gateway restarted: the arena
// waits 15 s for the bot and charges it nothing for its own outage), then an exponential
// backoff with jitter after each failed attempt, 0.5 s doubling up to 10 s.
const BACKOFF_INITIAL_MS = 500;
const BACKOFF_MAX_MS = 10000;
// A connection that served at least this long before it dropped is opened again at once.
const SERVED_MS = 1000;
// A ping every 5 s, to be answered before the next: a gateway that froze or a network gone
// silent (no close ever comes) is noticed within 10 s and the connection opened again, within
// the arena's 15 s wait for a reconnection, so no request is lost.
const KEEPALIVE_MS = 5000;
const HANDSHAKE_TIMEOUT_MS = 10000;
// Close codes after which connecting again can never succeed.
const FATAL = {
  4401: "authentication failed (unknown bot or wrong signature): check ARENA_BOT_ID and ARENA_BOT_SECRET",
  4403: "this bot is registered with a URL: the arena calls it, it must not connect",
  4410: "the bot was deleted",
};

function config() {
  const secret = (process.env.ARENA_BOT_SECRET || "").trim();
  const botId = Number.parseInt(process.env.ARENA_BOT_ID || "", 10);
  let url = (process.env.ARENA_GATEWAY_URL || "").trim();
  const missing = [];
  if (!secret) missing.push("ARENA_BOT_SECRET (the signing secret given at registration)");
  if (!Number.isInteger(botId) || botId < 1) missing.push("ARENA_BOT_ID (the bot's id, a positive integer)");
  if (!/^wss?:\/\/[^/]+/.test(url)) missing.push("ARENA_GATEWAY_URL (ws:// or wss://)");
  if (missing.length) {
    console.error("set " + missing.join(", "));
    process.exit(2);
  }
  if (/^wss?:\/\/[^/]+\/?$/.test(url)) url = url.replace(/\/?$/, "/v1/bots");
  return { secret, botId, url };
}

// The answer to a challenge: HMAC-SHA256 of "<ts>.<nonce>" keyed with the secret's text (UTF-8).
function authFrame(botId, secret, nonce) {
  const ts = String(Math.floor(Date.now() / 1000));
  const mac = crypto.createHmac("sha256", Buffer.from(secret, "utf8")).update(`${ts}.${nonce}`).digest("hex");
  return JSON.stringify({ type: "auth", bot_id: botId, ts, signature: "sha256=" + mac });
}

function randomInt(lo, hi) {
  // an integer in [lo, hi]
  return lo + Math.floor(Math.random() * (hi - lo + 1));
}

// A random legal action for a decision request (docs/protocol.md, "Decision request").
function chooseAction(req) {
  const kind = req.decision.kind;
  if (Array.isArray(req.legal_actions) && req.legal_actions.length > 0) {
    // play, doubt, exchange, rate: every legal answer is listed, send one back as it is
    return req.legal_actions[randomInt(0, req.legal_actions.length - 1)];
  }
  // penalty, give, discard: min..max cards of choice.from
  const choice = req.choice || { from: [], min: 0, max: 0 };
  const pool = [...choice.from];
  for (let i = pool.length - 1; i > 0; i--) {
    const j = randomInt(0, i);
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  const count = randomInt(choice.min, Math.min(choice.max, pool.length));
  return { type: kind, cards: pool.slice(0, count) };
}

function onFrame(ws, frame) {
  if (frame.type === "health") {
    send(ws, frame.id, { name: NAME, protocol: PROTOCOL, protocols: [PROTOCOL] });
  } else if (frame.type === "request") {
    let body;
    try {
      body = chooseAction(frame.body);
    } catch (err) {
      // answered at once: the arena records a fault now instead of waiting out the bank
      body = { error: String(err).slice(0, 500) };
    }
    send(ws, frame.id, body);
  } else if (frame.type === "notice") {
    // match_start / match_end: nothing to answer
  }
}

function send(ws, id, body) {
  if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ id, body }));
}

function run() {
  const { secret, botId, url } = config();
  let attempt = 0;
  let stopping = false;

  function connectOnce() {
    let welcomed = false;
    let welcomedAt = 0;
    const ws = new WebSocket(url, {
      maxPayload: MAX_FRAME_BYTES,
      perMessageDeflate: false,
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
    });
    current = ws;
    let answered = true;
    let keepalive = null;
    ws.on("open", () => {
      keepalive = setInterval(() => {
        if (!answered) {
          console.error("no pong from the gateway: dropping the connection");
          ws.terminate(); // "close" follows: reconnect
          return;
        }
        answered = false;
        ws.ping();
      }, KEEPALIVE_MS);
    });
    ws.on("pong", () => {
      answered = true;
    });
    ws.on("message", (data, isBinary) => {
      let frame;
      try {
        frame = JSON.parse(isBinary ? "" : data.toString("utf8"));
      } catch {
        return;
      }
      if (!welcomed) {
        if (frame.type === "challenge") {
          ws.send(authFrame(botId, secret, frame.nonce));
        } else if (frame.type === "welcome") {
          welcomed = true;
          welcomedAt = Date.now();
          answered = false; // the first keep-alive ping at once, then every 5 s
          ws.ping();
          attempt = 0;
          console.log(`connected to ${url} as ${frame.name} (bot ${frame.bot_id})`);
        }
        return;
      }
      onFrame(ws, frame);
    });
    ws.on("error", (err) => console.error(`connection error: ${err.message}`));
    ws.on("close", (code, reason) => {
      clearInterval(keepalive);
      if (stopping) return;
      if (FATAL[code]) {
        console.error(`the gateway closed the connection with ${code}: ${FATAL[code]}; not reconnecting`);
        process.exit(1);
      }
      let delay = 0;
      if (!welcomed || Date.now() - welcomedAt < SERVED_MS) {
        // exponential backoff with jitter: half to all of 0.5 s, 1 s, 2 s ... 10 s
        const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_INITIAL_MS * 2 ** Math.min(attempt, 16));
        delay = ceiling / 2 + Math.random() * (ceiling / 2);
        attempt += 1;
      }
      console.error(`disconnected (${code}${reason.length ? " " + reason : ""}); reconnecting in ${(delay / 1000).toFixed(1)} s`);
      setTimeout(connectOnce, delay);
    });
    return ws;
  }

  let current = null;
  connectOnce();
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.on(signal, () => {
      stopping = true;
      if (current) current.close(1000, "the bot stops");
      process.exit(0);
    });
  }
}

if (require.main === module) run();

module.exports = { authFrame, chooseAction };
