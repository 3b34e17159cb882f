// A Daifugo Arena bot in C++17 that dials out to the arena's gateway (docs/protocol.md,
// "Bots that dial out"). Debian packages only: websocketpp with standalone asio (header-only),
// nlohmann-json, OpenSSL (HMAC, and TLS for wss://). It opens no port: it connects, proves it
// holds its signing secret, then answers every decision request with a random legal action.
//
//   make                       # or the g++ line of the Makefile
//   ARENA_BOT_ID=12 ARENA_GATEWAY_URL=wss://arena.example/v1/bots ARENA_BOT_SECRET=... ./bot
//
// Replace choose_action() with your strategy; the rest is the transport.
#define ASIO_STANDALONE
#include <websocketpp/client.hpp>
#include <websocketpp/config/asio_client.hpp>
#include <websocketpp/config/asio_no_tls_client.hpp>

#include <nlohmann/json.hpp>
#include <openssl/hmac.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <thread>

using json = nlohmann::json;

namespace {

const char* NAME = "cpp-starter";
const int PROTOCOL = 1;
const long BACKOFF_INITIAL_MS = 500;
const long BACKOFF_MAX_MS = 30000;
// A ping every 5 s, to be answered before the next: a gateway that froze or a network gone
// silent (no close ever comes) is noticed within 10 s and the connection opened again, within
// the arena's 15 s wait for a reconnection, so no request is lost.
const long KEEPALIVE_MS = 5000;
// Close codes after which connecting again can never succeed.
const std::map<int, std::string> FATAL = {
    {4401, "authentication failed (unknown bot or wrong signature): check ARENA_BOT_ID and ARENA_BOT_SECRET"},
    {4403, "this bot is registered with a URL: the arena calls it, it must not connect"},
    {4410, "the bot was deleted"},
};

std::mt19937_64 rng{std::random_device{}()};

int random_int(int lo, int hi) {  // an integer in [lo, hi]
    return std::uniform_int_distribution<int>(lo, hi)(rng);
}

// -- the strategy: replace this ------------------------------------------------------------------
// A random legal action for a decision request (docs/protocol.md, "Decision request").
json choose_action(const json& req) {
    const std::string kind = req.at("decision").at("kind").get<std::string>();
    const json& legal = req.at("legal_actions");
    if (legal.is_array() && !legal.empty()) {
        // play, doubt, exchange, rate: every legal answer is listed, send one back as it is
        return legal.at(random_int(0, static_cast<int>(legal.size()) - 1));
    }
    // penalty, give, discard: min..max cards of choice.from
    const json& choice = req.at("choice");
    std::vector<std::string> pool = choice.at("from").get<std::vector<std::string>>();
    std::shuffle(pool.begin(), pool.end(), rng);
    int lo = choice.at("min").get<int>();
    int hi = std::min(choice.at("max").get<int>(), static_cast<int>(pool.size()));
    pool.resize(random_int(lo, std::max(lo, hi)));
    return json{{"type", kind}, {"cards", pool}};
}

// -- the transport -------------------------------------------------------------------------------
struct Config {
    long bot_id = 0;
    std::string secret;
    std::string url;
};

std::string env(const char* name) {
    const char* v = std::getenv(name);
    std::string s = v ? v : "";
    s.erase(0, s.find_first_not_of(" \t\r\n"));
    s.erase(s.find_last_not_of(" \t\r\n") + 1);
    return s;
}

Config config() {
    Config c;
    c.secret = env("ARENA_BOT_SECRET");
    c.url = env("ARENA_GATEWAY_URL");
    try {
        c.bot_id = std::stol(env("ARENA_BOT_ID"));
    } catch (...) {
        c.bot_id = 0;
    }
    std::string missing;
    if (c.secret.empty()) missing += ", ARENA_BOT_SECRET (the signing secret given at registration)";
    if (c.bot_id < 1) missing += ", ARENA_BOT_ID (the bot's id, a positive integer)";
    if (!std::regex_search(c.url, std::regex("^wss?://[^/]+"))) missing += ", ARENA_GATEWAY_URL (ws:// or wss://)";
    if (!missing.empty()) {
        std::cerr << "set " << missing.substr(2) << std::endl;
        std::exit(2);
    }
    if (std::regex_match(c.url, std::regex("^wss?://[^/]+/?$"))) {
        if (c.url.back() == '/') c.url.pop_back();
        c.url += "/v1/bots";
    }
    return c;
}

// The answer to a challenge: HMAC-SHA256 of "<ts>.<nonce>" keyed with the secret's text (UTF-8).
std::string auth_frame(const Config& c, const std::string& nonce) {
    const std::string ts = std::to_string(static_cast<long long>(std::time(nullptr)));
    const std::string message = ts + "." + nonce;
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    HMAC(EVP_sha256(), c.secret.data(), static_cast<int>(c.secret.size()),
         reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len);
    std::string hex = "sha256=";
    char byte[3];
    for (unsigned int i = 0; i < len; i++) {
        std::snprintf(byte, sizeof byte, "%02x", mac[i]);
        hex += byte;
    }
    return json{{"type", "auth"}, {"bot_id", c.bot_id}, {"ts", ts}, {"signature", hex}}.dump();
}

// One connection, from the handshake to its end: run() returns its close code (1006: it dropped
// without a close). Config: websocketpp::config::asio_client (ws://) or asio_tls_client (wss://).
template <typename WsConfig>
class Session {
  public:
    explicit Session(const Config& cfg) : cfg_(cfg) {}

    bool welcomed() const { return welcomed_; }

    int run() {
        client_.clear_access_channels(websocketpp::log::alevel::all);
        client_.clear_error_channels(websocketpp::log::elevel::all);
        client_.init_asio();
        setup_tls(client_);
        client_.set_message_handler([this](websocketpp::connection_hdl hdl, typename Client::message_ptr msg) {
            try {
                on_frame(hdl, json::parse(msg->get_payload()));
            } catch (const std::exception& e) {
                std::cerr << "frame not understood: " << e.what() << std::endl;
            }
        });
        client_.set_open_handler([this](websocketpp::connection_hdl hdl) { keepalive(hdl); });
        client_.set_pong_handler([this](websocketpp::connection_hdl, std::string) {
            answered_ = true;
            return;
        });
        client_.set_close_handler([this](websocketpp::connection_hdl hdl) {
            auto con = client_.get_con_from_hdl(hdl);
            code_ = con->get_remote_close_code();
            if (!con->get_remote_close_reason().empty())
                std::cerr << "closed by the gateway: " << code_ << " " << con->get_remote_close_reason() << std::endl;
            stop_timer();
        });
        client_.set_fail_handler([this](websocketpp::connection_hdl hdl) {
            std::cerr << "connection error: " << client_.get_con_from_hdl(hdl)->get_ec().message() << std::endl;
            code_ = 1006;
            stop_timer();
        });
        websocketpp::lib::error_code ec;
        auto con = client_.get_connection(cfg_.url, ec);
        if (ec) {
            std::cerr << "connection error: " << ec.message() << std::endl;
            return 1006;
        }
        client_.connect(con);
        client_.run();  // until the connection ends (or the keepalive stops the loop)
        return code_;
    }

  private:
    using Client = websocketpp::client<WsConfig>;

    void setup_tls(websocketpp::client<websocketpp::config::asio_client>&) {}

    void setup_tls(websocketpp::client<websocketpp::config::asio_tls_client>& c) {
        c.set_tls_init_handler([this](websocketpp::connection_hdl) {
            auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
            ctx->set_default_verify_paths();
            ctx->set_verify_mode(asio::ssl::verify_peer);
            std::smatch host;
            std::regex_search(cfg_.url, host, std::regex("^wss://([^/:]+)"));
            ctx->set_verify_callback(asio::ssl::host_name_verification(host[1].str()));
            return ctx;
        });
    }

    void send(websocketpp::connection_hdl hdl, const std::string& text) {
        websocketpp::lib::error_code ec;
        client_.send(hdl, text, websocketpp::frame::opcode::text, ec);  // gone: its end is reported
    }

    void on_frame(websocketpp::connection_hdl hdl, const json& frame) {
        const std::string type = frame.value("type", "");
        if (!welcomed_) {
            if (type == "challenge") {
                send(hdl, auth_frame(cfg_, frame.at("nonce").get<std::string>()));
            } else if (type == "welcome") {
                welcomed_ = true;
                answered_ = false;  // the first keep-alive ping at once, then every 5 s
                websocketpp::lib::error_code sent;
                client_.ping(hdl, "", sent);
                std::cout << "connected to " << cfg_.url << " as " << frame.value("name", "") << " (bot "
                          << frame.value("bot_id", 0L) << ")" << std::endl;
            }
            return;
        }
        if (type == "health") {
            json health = {{"name", NAME}, {"protocol", PROTOCOL}, {"protocols", {PROTOCOL}}};
            send(hdl, json{{"id", frame.at("id")}, {"body", health}}.dump());
        } else if (type == "request") {
            // Answered here, on the connection's thread: a random choice takes no time. A strategy
            // that thinks should run on threads of its own (client_.send is thread-safe): several
            // matches may ask at once on one connection, each answer goes back when it is ready.
            json body;
            try {
                body = choose_action(frame.at("body"));
            } catch (const std::exception& e) {
                // answered at once: the arena records a fault now instead of waiting out the bank
                body = json{{"error", e.what()}};
            }
            send(hdl, json{{"id", frame.at("id")}, {"body", body}}.dump());
        }
        // "notice" (match_start, match_end) needs no answer; unknown types are ignored
    }

    void keepalive(websocketpp::connection_hdl hdl) {
        timer_ = client_.set_timer(KEEPALIVE_MS, [this, hdl](const websocketpp::lib::error_code& ec) {
            if (ec) return;  // cancelled: the connection ended
            if (!answered_) {
                std::cerr << "no pong from the gateway: dropping the connection" << std::endl;
                code_ = 1006;
                client_.stop();  // the loop ends and the socket goes with the client
                return;
            }
            answered_ = false;
            websocketpp::lib::error_code sent;
            client_.ping(hdl, "", sent);
            keepalive(hdl);
        });
    }

    void stop_timer() {
        if (timer_) timer_->cancel();
    }

    Config cfg_;
    Client client_;
    typename Client::timer_ptr timer_;
    bool welcomed_ = false;
    bool answered_ = true;
    int code_ = 1006;
};

template <typename WsConfig>
int connect_once(const Config& cfg, bool& welcomed) {
    Session<WsConfig> session(cfg);
    int code = session.run();
    welcomed = session.welcomed();
    return code;
}

}  // namespace

int main() {
    const Config cfg = config();
    const bool tls = cfg.url.rfind("wss://", 0) == 0;
    int attempt = 0;
    while (true) {
        bool welcomed = false;
        int code = tls ? connect_once<websocketpp::config::asio_tls_client>(cfg, welcomed)
                       : connect_once<websocketpp::config::asio_client>(cfg, welcomed);
        auto fatal = FATAL.find(code);
        if (fatal != FATAL.end()) {
            std::cerr << "the gateway closed the connection with " << code << ": " << fatal->second
                      << "; not reconnecting" << std::endl;
            return 1;
        }
        if (welcomed) attempt = 0;
        // exponential backoff with jitter: half to all of 0.5 s, 1 s, 2 s ... 30 s
        long ceiling = std::min(BACKOFF_MAX_MS, BACKOFF_INITIAL_MS << std::min(attempt, 16));
        long delay = ceiling / 2 + random_int(0, static_cast<int>(ceiling / 2));
        attempt++;
        std::cerr << "disconnected (" << code << "); reconnecting in " << delay / 1000.0 << " s" << std::endl;
        std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    }
}
