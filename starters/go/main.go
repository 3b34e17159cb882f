// A Daifugo Arena bot in Go that dials out to the arena's gateway (docs/protocol.md, "Bots that
// dial out"). The standard library and gorilla/websocket (Debian: golang-github-gorilla-websocket-dev).
// It opens no port: it connects, proves it holds its signing secret, then answers every decision
// request with a random legal action.
//
//	GOPATH=/usr/share/gocode GO111MODULE=off go build -o bot .
//	ARENA_BOT_ID=12 ARENA_GATEWAY_URL=wss://arena.example/v1/bots ARENA_BOT_SECRET=... ./bot
//
// Replace chooseAction() with your strategy; the rest is the transport.
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

const (
	name             = "go-starter"
	protocol         = 1
	backoffInitialMs = 500
	backoffMaxMs     = 30000
	// A ping every 5 s, to be answered before the next: a gateway that froze or a network gone
	// silent (no close ever comes) is noticed within 10 s and the connection opened again, within
	// the arena's 15 s wait for a reconnection, so no request is lost.
	keepalive        = 5 * time.Second
	handshakeTimeout = 10 * time.Second
	maxFrameBytes    = 64*1024 + 512 // the gateway closes a connection on a larger frame (1009)
)

// Close codes after which connecting again can never succeed.
var fatal = map[int]string{
	4401: "authentication failed (unknown bot or wrong signature): check ARENA_BOT_ID and ARENA_BOT_SECRET",
	4403: "this bot is registered with a URL: the arena calls it, it must not connect",
	4410: "the bot was deleted",
}

// -- the strategy: replace this ---------------------------------------------------------------

// Request is the part of a decision request (docs/protocol.md, "Decision request") this bot reads;
// add the fields your strategy needs (observation, time, banks_ms...).
type Request struct {
	MatchID  string `json:"match_id"`
	Seat     int    `json:"seat"`
	Decision struct {
		Kind string `json:"kind"`
	} `json:"decision"`
	LegalActions []json.RawMessage `json:"legal_actions"`
	Choice       *struct {
		From []string `json:"from"`
		Min  int      `json:"min"`
		Max  int      `json:"max"`
	} `json:"choice"`
}

var rngLock sync.Mutex
var rng = rand.New(rand.NewSource(time.Now().UnixNano()))

func randomInt(lo, hi int) int { // an integer in [lo, hi]
	rngLock.Lock()
	defer rngLock.Unlock()
	return lo + rng.Intn(hi-lo+1)
}

// chooseAction returns a random legal action.
func chooseAction(req *Request) (interface{}, error) {
	if len(req.LegalActions) > 0 {
		// play, doubt, exchange, rate: every legal answer is listed, send one back as it is
		return req.LegalActions[randomInt(0, len(req.LegalActions)-1)], nil
	}
	// penalty, give, discard: min..max cards of choice.from
	if req.Choice == nil {
		return nil, errors.New("no legal_actions and no choice")
	}
	pool := append([]string(nil), req.Choice.From...)
	for i := len(pool) - 1; i > 0; i-- {
		j := randomInt(0, i)
		pool[i], pool[j] = pool[j], pool[i]
	}
	hi := req.Choice.Max
	if hi > len(pool) {
		hi = len(pool)
	}
	if hi < req.Choice.Min {
		hi = req.Choice.Min
	}
	return map[string]interface{}{"type": req.Decision.Kind, "cards": pool[:randomInt(req.Choice.Min, hi)]}, nil
}

// -- the transport ----------------------------------------------------------------------------

type config struct {
	botID  int64
	secret string
	url    string
}

func loadConfig() config {
	c := config{
		secret: strings.TrimSpace(os.Getenv("ARENA_BOT_SECRET")),
		url:    strings.TrimSpace(os.Getenv("ARENA_GATEWAY_URL")),
	}
	c.botID, _ = strconv.ParseInt(strings.TrimSpace(os.Getenv("ARENA_BOT_ID")), 10, 64)
	var missing []string
	if c.secret == "" {
		missing = append(missing, "ARENA_BOT_SECRET (the signing secret given at registration)")
	}
	if c.botID < 1 {
		missing = append(missing, "ARENA_BOT_ID (the bot's id, a positive integer)")
	}
	if !regexp.MustCompile(`^wss?://[^/]+`).MatchString(c.url) {
		missing = append(missing, "ARENA_GATEWAY_URL (ws:// or wss://)")
	}
	if len(missing) > 0 {
		fmt.Fprintln(os.Stderr, "set "+strings.Join(missing, ", "))
		os.Exit(2)
	}
	if regexp.MustCompile(`^wss?://[^/]+/?$`).MatchString(c.url) {
		c.url = strings.TrimSuffix(c.url, "/") + "/v1/bots"
	}
	return c
}

// authFrame answers a challenge: HMAC-SHA256 of "<ts>.<nonce>" keyed with the secret's text (UTF-8).
func authFrame(c config, nonce string) []byte {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte(c.secret))
	mac.Write([]byte(ts + "." + nonce))
	frame, _ := json.Marshal(map[string]interface{}{
		"type": "auth", "bot_id": c.botID, "ts": ts, "signature": "sha256=" + hex.EncodeToString(mac.Sum(nil)),
	})
	return frame
}

type frame struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Nonce string          `json:"nonce"`
	Name  string          `json:"name"`
	BotID int64           `json:"bot_id"`
	Body  json.RawMessage `json:"body"`
}

// session is one connection, from the handshake to its end.
type session struct {
	conn     *websocket.Conn
	sendLock sync.Mutex // one writer at a time (gorilla/websocket's rule)
	welcomed bool
	pingNow  func()
}

func (s *session) send(v interface{}) {
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	s.sendLock.Lock()
	defer s.sendLock.Unlock()
	s.conn.WriteMessage(websocket.TextMessage, data) // gone: its end is reported by the reader
}

// run connects once and serves the connection until it ends; it returns the close code (1006:
// dropped without a close).
func run(c config) (code int, welcomed bool) {
	dialer := websocket.Dialer{HandshakeTimeout: handshakeTimeout}
	conn, _, err := dialer.Dial(c.url, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "connection error:", err)
		return 1006, false
	}
	defer conn.Close()
	conn.SetReadLimit(maxFrameBytes)
	s := &session{conn: conn}
	var answered sync.Mutex
	pong := true
	conn.SetPongHandler(func(string) error { answered.Lock(); pong = true; answered.Unlock(); return nil })
	s.pingNow = func() { // the first keep-alive ping, once welcomed; then every 5 s
		answered.Lock()
		pong = false
		answered.Unlock()
		conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(keepalive))
	}
	done := make(chan struct{})
	defer close(done)
	go func() { // the keepalive
		ticker := time.NewTicker(keepalive)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				answered.Lock()
				ok := pong
				pong = false
				answered.Unlock()
				if !ok {
					fmt.Fprintln(os.Stderr, "no pong from the gateway: dropping the connection")
					conn.Close() // the reader fails: reconnect
					return
				}
				conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(keepalive))
			}
		}
	}()
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			var closed *websocket.CloseError
			if errors.As(err, &closed) {
				if closed.Text != "" {
					fmt.Fprintf(os.Stderr, "closed by the gateway: %d %s\n", closed.Code, closed.Text)
				}
				return closed.Code, s.welcomed
			}
			fmt.Fprintln(os.Stderr, "connection error:", err)
			return 1006, s.welcomed
		}
		var f frame
		if json.Unmarshal(data, &f) != nil {
			continue
		}
		s.onFrame(c, &f)
	}
}

func (s *session) onFrame(c config, f *frame) {
	if !s.welcomed {
		switch f.Type {
		case "challenge":
			s.sendLock.Lock()
			s.conn.WriteMessage(websocket.TextMessage, authFrame(c, f.Nonce))
			s.sendLock.Unlock()
		case "welcome":
			s.welcomed = true
			s.pingNow()
			fmt.Printf("connected to %s as %s (bot %d)\n", c.url, f.Name, f.BotID)
		}
		return
	}
	switch f.Type {
	case "health":
		s.send(map[string]interface{}{
			"id": f.ID, "body": map[string]interface{}{"name": name, "protocol": protocol, "protocols": []int{protocol}},
		})
	case "request":
		// several matches may ask at once on one connection: each answer goes back when it is ready
		go func(id string, body json.RawMessage) {
			var answer interface{}
			var req Request
			err := json.Unmarshal(body, &req)
			if err == nil {
				answer, err = chooseAction(&req)
			}
			if err != nil {
				// answered at once: the arena records a fault now instead of waiting out the bank
				answer = map[string]string{"error": err.Error()}
			}
			s.send(map[string]interface{}{"id": id, "body": answer})
		}(f.ID, f.Body)
	}
	// "notice" (match_start, match_end) needs no answer; unknown types are ignored
}

func main() {
	c := loadConfig()
	attempt := 0
	for {
		code, welcomed := run(c)
		if why, ok := fatal[code]; ok {
			fmt.Fprintf(os.Stderr, "the gateway closed the connection with %d: %s; not reconnecting\n", code, why)
			os.Exit(1)
		}
		if welcomed {
			attempt = 0
		}
		// exponential backoff with jitter: half to all of 0.5 s, 1 s, 2 s ... 30 s
		shift := attempt
		if shift > 16 {
			shift = 16
		}
		ceiling := backoffInitialMs << shift
		if ceiling > backoffMaxMs {
			ceiling = backoffMaxMs
		}
		delay := ceiling/2 + randomInt(0, ceiling/2)
		attempt++
		fmt.Fprintf(os.Stderr, "disconnected (%d); reconnecting in %.1f s\n", code, float64(delay)/1000)
		time.Sleep(time.Duration(delay) * time.Millisecond)
	}
}
