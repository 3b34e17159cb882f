// A Daifugo Arena bot in Java 17 that dials out to the arena's gateway (docs/protocol.md,
// "Bots that dial out"). JDK only: java.net.http.WebSocket, javax.crypto.Mac, and Json.java.
// It opens no port: it connects, proves it holds its signing secret, then answers every
// decision request with a random legal action.
//
//   javac -d build Bot.java Json.java
//   ARENA_BOT_ID=12 ARENA_GATEWAY_URL=wss://arena.example/v1/bots ARENA_BOT_SECRET=... java -cp build Bot
//
// Replace chooseAction() with your strategy; the rest is the transport.
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

public final class Bot {
    static final String NAME = "java-starter";
    static final int PROTOCOL = 1;
    static final long BACKOFF_INITIAL_MS = 500;
    static final long BACKOFF_MAX_MS = 30_000;
    // A ping every 5 s, to be answered before the next: a gateway that froze or a network gone
    // silent (no close ever comes) is noticed within 10 s and the connection opened again,
    // within the arena's 15 s wait for a reconnection, so no request is lost.
    static final long KEEPALIVE_MS = 5_000;
    static final Duration HANDSHAKE_TIMEOUT = Duration.ofSeconds(10);
    /** Decisions computed at once (several matches may ask on one connection). */
    static final int THREADS = 4;
    /** Close codes after which connecting again can never succeed. */
    static final Map<Integer, String> FATAL = Map.of(
            4401, "authentication failed (unknown bot or wrong signature): check ARENA_BOT_ID and ARENA_BOT_SECRET",
            4403, "this bot is registered with a URL: the arena calls it, it must not connect",
            4410, "the bot was deleted");

    // -- the strategy: replace this -----------------------------------------------------------
    /** A random legal action for a decision request (docs/protocol.md, "Decision request"). */
    @SuppressWarnings("unchecked")
    static Object chooseAction(Map<String, Object> req) {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        String kind = (String) ((Map<String, Object>) req.get("decision")).get("kind");
        Object legal = req.get("legal_actions");
        if (legal instanceof List && !((List<Object>) legal).isEmpty()) {
            // play, doubt, exchange, rate: every legal answer is listed, send one back as it is
            List<Object> actions = (List<Object>) legal;
            return actions.get(rnd.nextInt(actions.size()));
        }
        // penalty, give, discard: min..max cards of choice.from
        Map<String, Object> choice = (Map<String, Object>) req.get("choice");
        List<Object> pool = new ArrayList<>((List<Object>) choice.get("from"));
        Collections.shuffle(pool, rnd);
        int min = ((Number) choice.get("min")).intValue();
        int max = Math.min(((Number) choice.get("max")).intValue(), pool.size());
        int count = min + rnd.nextInt(Math.max(1, max - min + 1));
        Map<String, Object> action = new LinkedHashMap<>();
        action.put("type", kind);
        action.put("cards", new ArrayList<>(pool.subList(0, count)));
        return action;
    }

    // -- the transport ---------------------------------------------------------------------------
    record Config(long botId, String secret, URI url) {}

    static Config config() {
        String secret = System.getenv().getOrDefault("ARENA_BOT_SECRET", "").trim();
        String id = System.getenv().getOrDefault("ARENA_BOT_ID", "").trim();
        String url = System.getenv().getOrDefault("ARENA_GATEWAY_URL", "").trim();
        List<String> missing = new ArrayList<>();
        if (secret.isEmpty()) missing.add("ARENA_BOT_SECRET (the signing secret given at registration)");
        long botId = 0;
        try {
            botId = Long.parseLong(id);
        } catch (NumberFormatException e) {
            // reported below
        }
        if (botId < 1) missing.add("ARENA_BOT_ID (the bot's id, a positive integer)");
        if (!url.matches("^wss?://[^/]+.*")) missing.add("ARENA_GATEWAY_URL (ws:// or wss://)");
        if (!missing.isEmpty()) {
            System.err.println("set " + String.join(", ", missing));
            System.exit(2);
        }
        if (url.matches("^wss?://[^/]+/?$")) url = url.replaceAll("/?$", "/v1/bots");
        return new Config(botId, secret, URI.create(url));
    }

    /** The answer to a challenge: HMAC-SHA256 of "ts.nonce" keyed with the secret's text (UTF-8). */
    static String authFrame(long botId, String secret, String nonce) throws Exception {
        String ts = Long.toString(System.currentTimeMillis() / 1000);
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
        byte[] digest = mac.doFinal((ts + "." + nonce).getBytes(StandardCharsets.UTF_8));
        StringBuilder hex = new StringBuilder("sha256=");
        for (byte b : digest) hex.append(String.format("%02x", b & 0xff));
        Map<String, Object> frame = new LinkedHashMap<>();
        frame.put("type", "auth");
        frame.put("bot_id", botId);
        frame.put("ts", ts);
        frame.put("signature", hex.toString());
        return Json.write(frame);
    }

    /** One connection, from the handshake to its end; {@link #run} returns its close code. */
    static final class Session implements WebSocket.Listener {
        final Config cfg;
        final ExecutorService decisions;
        final ScheduledExecutorService timer;
        final CompletableFuture<Integer> ended = new CompletableFuture<>();
        final StringBuilder text = new StringBuilder();
        final Object sendLock = new Object();
        volatile boolean welcomed = false;
        volatile boolean answered = true;
        volatile WebSocket ws;
        ScheduledFuture<?> keepalive;

        Session(Config cfg, ExecutorService decisions, ScheduledExecutorService timer) {
            this.cfg = cfg;
            this.decisions = decisions;
            this.timer = timer;
        }

        int run(HttpClient http) {
            try {
                ws = http.newWebSocketBuilder()
                        .connectTimeout(HANDSHAKE_TIMEOUT)
                        .buildAsync(cfg.url(), this)
                        .get(HANDSHAKE_TIMEOUT.toSeconds() + 1, TimeUnit.SECONDS);
            } catch (Exception e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                System.err.println("connection error: " + cause);
                return 1006;
            }
            try {
                return ended.join();
            } finally {
                if (keepalive != null) keepalive.cancel(false);
                ws.abort();
            }
        }

        void send(String frame) {
            synchronized (sendLock) { // one text frame at a time (java.net.http.WebSocket's rule)
                try {
                    ws.sendText(frame, true).join();
                } catch (Exception e) {
                    // the connection is gone: its end is reported by onClose/onError
                }
            }
        }

        @Override
        public void onOpen(WebSocket webSocket) {
            ws = webSocket;
            keepalive = timer.scheduleAtFixedRate(() -> {
                if (!answered) {
                    System.err.println("no pong from the gateway: dropping the connection");
                    ended.complete(1006);
                    return;
                }
                answered = false;
                webSocket.sendPing(ByteBuffer.allocate(0));
            }, KEEPALIVE_MS, KEEPALIVE_MS, TimeUnit.MILLISECONDS);
            webSocket.request(1);
        }

        @Override
        public CompletionStage<?> onPong(WebSocket webSocket, ByteBuffer message) {
            answered = true;
            webSocket.request(1);
            return null;
        }

        @Override
        public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
            text.append(data);
            if (last) {
                String message = text.toString();
                text.setLength(0);
                try {
                    onFrame(message);
                } catch (Exception e) {
                    System.err.println("frame not understood: " + e);
                }
            }
            webSocket.request(1);
            return null;
        }

        @SuppressWarnings("unchecked")
        void onFrame(String message) throws Exception {
            Map<String, Object> frame = (Map<String, Object>) Json.parse(message);
            String type = String.valueOf(frame.get("type"));
            if (!welcomed) {
                if (type.equals("challenge")) {
                    send(authFrame(cfg.botId(), cfg.secret(), String.valueOf(frame.get("nonce"))));
                } else if (type.equals("welcome")) {
                    welcomed = true;
                    answered = false; // the first keep-alive ping at once, then every 5 s
                    ws.sendPing(ByteBuffer.allocate(0));
                    System.out.println("connected to " + cfg.url() + " as " + frame.get("name") + " (bot "
                            + frame.get("bot_id") + ")");
                    System.out.flush();
                }
                return;
            }
            Object id = frame.get("id");
            if (type.equals("health")) {
                Map<String, Object> health = new LinkedHashMap<>();
                health.put("name", NAME);
                health.put("protocol", PROTOCOL);
                health.put("protocols", List.of(PROTOCOL));
                send(answer(id, health));
            } else if (type.equals("request")) {
                Map<String, Object> req = (Map<String, Object>) frame.get("body");
                decisions.submit(() -> { // several matches may ask at once: answer each when ready
                    Object body;
                    try {
                        body = chooseAction(req);
                    } catch (Exception e) {
                        // answered at once: the arena records a fault now instead of waiting out the bank
                        body = Map.of("error", String.valueOf(e));
                    }
                    send(answer(id, body));
                });
            }
            // "notice" (match_start, match_end) needs no answer; unknown types are ignored
        }

        static String answer(Object id, Object body) {
            Map<String, Object> frame = new LinkedHashMap<>();
            frame.put("id", id);
            frame.put("body", body);
            return Json.write(frame);
        }

        @Override
        public CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
            if (!reason.isEmpty()) System.err.println("closed by the gateway: " + statusCode + " " + reason);
            ended.complete(statusCode);
            return null;
        }

        @Override
        public void onError(WebSocket webSocket, Throwable error) {
            System.err.println("connection error: " + error);
            ended.complete(1006);
        }
    }

    public static void main(String[] args) throws Exception {
        Config cfg = config();
        HttpClient http = HttpClient.newBuilder().connectTimeout(HANDSHAKE_TIMEOUT).build();
        ExecutorService decisions = Executors.newFixedThreadPool(THREADS);
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
        int attempt = 0;
        while (true) {
            Session session = new Session(cfg, decisions, timer);
            int code = session.run(http);
            if (FATAL.containsKey(code)) {
                System.err.println("the gateway closed the connection with " + code + ": " + FATAL.get(code)
                        + "; not reconnecting");
                System.exit(1);
            }
            if (session.welcomed) attempt = 0;
            // exponential backoff with jitter: half to all of 0.5 s, 1 s, 2 s ... 30 s
            long ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_INITIAL_MS << Math.min(attempt, 16));
            long delay = ceiling / 2 + ThreadLocalRandom.current().nextLong(ceiling / 2 + 1);
            attempt++;
            System.err.printf("disconnected (%d); reconnecting in %.1f s%n", code, delay / 1000.0);
            Thread.sleep(delay);
        }
    }
}
