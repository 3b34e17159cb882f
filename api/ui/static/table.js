/* Daifugo Arena: a person's seat at a table (/ui/tables/<id>; api/ui/tables.py, docs/tables.md).
 * Plain JavaScript, no build step.
 *
 * Frames (arena/tables.py) come from the seat's stream (server-sent events), or, when the
 * stream is refused, from polling seat.json every second: "request" (the decision request a
 * bot in the seat would get: its observation, legal actions or choice, its clock), "view"
 * (the seat's own observation after each decision of the match), "refused" (the engine
 * refused a try: its reason and rule id), "accepted", "timeout", "notice", "over"; the
 * stream's "end" event: the page loads itself again (the result).
 *
 * Every decision kind has buttons, and keys (#keys-help): the hand's cards are buttons (← →
 * move, Space or Enter selects, F face down in Million Doubt), P play, S pass, D doubt,
 * T through, Y / N exchange, 1-9 rate, G give / discard / penalty, Esc clears. A class table
 * still waiting for its start loads itself again when what it shows changes (followWaiting). */
(function () {
  "use strict";
  var dataEl = document.getElementById("table-data");
  if (!dataEl) {
    if (document.getElementById("seated") || document.getElementById("free-seats")) followWaiting();
    return;
  }

  /* A class table waiting for its start: re-read the page every few seconds and load it again
   * only when what it shows changed (a seat taken, the start), never while a form of the page
   * (Start, Cancel) is being sent: a blind reload would abort the organizer's click. */
  function followWaiting() {
    var leaving = false;
    document.addEventListener("submit", function () { leaving = true; }, true);
    window.addEventListener("pagehide", function () { leaving = true; });
    function state(doc) {
      var free = doc.getElementById("free-seats");
      return [!!doc.getElementById("table-data"), !!doc.getElementById("running"), !!doc.getElementById("seated"),
        !!doc.getElementById("take-seat"), free ? free.getAttribute("data-free") : "-"].join("|");
    }
    var shown = state(document);
    function again() { if (!leaving) window.setTimeout(look, 3000); }
    function look() {
      if (leaving) return;
      if (!window.fetch || !window.DOMParser) { window.location.reload(); return; }
      fetch(window.location.href, { credentials: "same-origin", cache: "no-store" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (leaving) return;
          if (html !== null && state(new DOMParser().parseFromString(html, "text/html")) !== shown) {
            window.location.reload();
          } else {
            again();
          }
        })
        .catch(again);
    }
    again();
  }
  var D = JSON.parse(dataEl.textContent);
  var I18N = {};
  try { I18N = JSON.parse((document.getElementById("i18n") || {}).textContent || "{}"); } catch (e) { I18N = {}; }
  function T(msg, params) {
    var s = I18N[msg] || msg;
    if (params) s = s.replace(/\{(\w+)\}/g, function (m, k) { return params[k] !== undefined ? params[k] : m; });
    return s;
  }
  var SUITS = { S: "♠", H: "♥", D: "♦", C: "♣" };
  var RANKS = { T: "10" };
  var ORDER = "3456789TJQKA2";
  var game = document.getElementById("game");
  var S = {
    obs: null, req: null, rid: null, reqAt: 0, seat: null, seats: null, banks: null, bankAt: 0,
    selected: [], down: {}, fieldSel: [], reading: null, sending: false, over: false, focus: 0,
    refusal: null, notice: null, gameIndex: 0, games: null, lastVersion: "", mine: {}
  };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function cardText(code) { return code === "JK" ? T("Joker") : (RANKS[code[0]] || code[0]) + SUITS[code[1]]; }
  function cardsText(cards) { return (cards || []).map(cardText).join(" "); }
  // the engine's reasons name cards by code ("3D JD is not a legal form"): shown as the page shows cards
  function codesText(text) {
    return String(text).replace(/\b(?:[2-9TJQKA][SHDC]|JK)\b/g, function (code) { return cardText(code); });
  }
  function face(c, code) {
    c.setAttribute("data-card", code);
    if (code === "JK") { c.className += " joker"; c.appendChild(el("b", null, "JK")); c.appendChild(el("i", null, "★")); }
    else {
      var suit = code[1];
      c.className += (suit === "H" || suit === "D") ? " red" : " black";
      c.appendChild(el("b", null, RANKS[code[0]] || code[0]));
      c.appendChild(el("i", null, SUITS[suit]));
    }
    return c;
  }
  function back(title) {
    var c = el("span", "c back hidden");
    c.setAttribute("data-hidden", "1");
    c.title = title || T("hidden card");
    return c;
  }
  function seconds(ms) {
    var s = Math.max(0, Math.ceil(ms / 1000));
    return Math.floor(s / 60) + ":" + ("0" + (s % 60)).slice(-2);
  }

  /* -- who sits where ------------------------------------------------------------------------ */
  function nSeats() { return S.obs ? S.obs.seats : D.players.length; }
  function playerAt(seat) {
    if (S.seats) return S.seats[seat];
    if (nSeats() === 2 && S.seat !== null) return seat === S.seat ? D.seat : 1 - D.seat;
    return seat;
  }
  function nameOf(seat) {
    if (seat === S.seat) return T("you");
    var p = playerAt(seat);
    return D.players[p] || T("seat {n}", { n: seat + 1 });
  }
  var TURNS = { play: "to play", doubt: "to decide on a doubt", exchange: "to decide on the exchange",
                give: "to give cards", rate: "to set the rate", penalty: "to give the penalty cards",
                discard: "to discard" };
  var ASKS = { play: "Your turn: play cards or pass", doubt: "Your turn: doubt the face-down play, or let it through",
               penalty: "You give the penalty: choose cards of the table for your opponent",
               exchange: "You are the Millionaire: exchange your hand, or keep it", rate: "You are the Millionaire: set the rate",
               give: "Give cards", discard: "Discard cards, or none" };
  /* The rule each decision kind comes from (linked beside the question). */
  function ruleOf(req) {
    var k = req.decision.kind, info = req.decision.info || {};
    if (k === "doubt") return "MD-6";
    if (k === "penalty") return "MD-7";
    if (k === "exchange" || k === "rate") return "TM-3";
    if (k === "give") return info.exchange || info.count ? "JDF-4" : "LR-5";
    if (k === "discard") return "LR-6";
    if (k === "play" && info.stuck) return "TM-6";
    return null;
  }
  function ruleLink(rule) {
    var a = el("a", "rule", rule);
    a.href = D.rules_url + "#" + rule.toLowerCase();
    a.target = "_blank"; a.rel = "noopener";
    a.setAttribute("data-rule", rule);
    return a;
  }

  /* -- frames -------------------------------------------------------------------------------- */
  /* Every frame the page received, as received (the tests check that each is the seat's own). */
  var received = window.arenaTableFrames = [];
  function handle(f) {
    if (!f || !f.type) return;
    received.push(f);
    if (f.type === "request") {
      if (f.rid === S.rid && S.req) return;  /* the snapshot and the stream may both bring it */
      S.req = f.request; S.rid = f.rid; S.reqAt = Date.now();
      S.obs = f.request.observation; S.seat = f.request.seat;
      S.banks = (f.request.banks_ms || []).slice(); S.bankAt = Date.now();
      S.gameIndex = f.request.game;
      S.selected = []; S.down = {}; S.fieldSel = []; S.reading = null; S.sending = false; S.refusal = null;
      S.focus = 0;
      render(true);
    } else if (f.type === "view") {
      /* views come in order, each before the request that follows it: the newest is the table */
      S.obs = f.observation;
      S.seat = f.seat; S.seats = f.seats; S.gameIndex = f.game;
      /* a Million Doubt game's end: the person's score, for the match's running total */
      (f.observation.history || []).forEach(function (e) {
        if (e.type === "game_end" && e.scores) S.mine[f.game] = Number(e.scores[String(f.seat)] || 0);
      });
      if (!S.banks) S.banks = [];
      if (f.acted && f.acted.seat !== null && f.acted.seat !== undefined && f.acted.bank_after_ms !== null) {
        S.banks[f.acted.seat] = f.acted.bank_after_ms;
      }
      S.bankAt = Date.now();
      render(false);
    } else if (f.type === "refused") {
      if (f.rid !== S.rid) return;
      S.sending = false;
      S.refusal = { reason: f.reason, rule: f.rule };
      render(false);
    } else if (f.type === "accepted") {
      if (f.rid !== S.rid) return;
      S.req = null; S.sending = false; S.refusal = null;
      S.selected = []; S.down = {}; S.fieldSel = [];
      render(false);
    } else if (f.type === "timeout") {
      if (f.rid !== S.rid) return;
      S.req = null; S.sending = false;
      S.refusal = { reason: T("Your time ran out: a time-out is a fault (FAULT-1); the decision was forfeited."), rule: "TIME-3" };
      render(false);
    } else if (f.type === "notice") {
      S.notice = f.notice;
      if (f.notice && f.notice.type === "match_start") S.games = f.notice.games;
      render(false);
    } else if (f.type === "over") {
      S.over = true; S.req = null;
      render(false);
    }
  }

  /* -- actions ------------------------------------------------------------------------------- */
  function send(action) {
    if (!S.req || S.sending) return;
    S.sending = true;
    S.refusal = null;
    game.setAttribute("data-state", "sent");
    renderRefusal();
    renderControls();
    var rid = S.rid;
    fetch(D.answer_url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": D.csrf },
      body: JSON.stringify({ rid: rid, action: action })
    }).then(function (r) {
      if (r.status === 202) return null;
      return r.json().then(function (j) { return j; }, function () { return { message: "HTTP " + r.status }; });
    }).then(function (j) {
      if (!j || rid !== S.rid) return;
      S.sending = false;
      S.refusal = { reason: j.message || T("not sent"), rule: null };
      render(false);
    }, function () {
      S.sending = false;
      S.refusal = { reason: T("The answer was not sent (network): try again."), rule: null };
      render(false);
    });
  }

  function handCards() { return S.obs ? S.obs.hand || [] : []; }
  function selectedCards() { var h = handCards(); return S.selected.map(function (i) { return h[i]; }); }
  function sameCards(a, b) {
    if (a.length !== b.length) return false;
    var x = a.slice().sort(), y = b.slice().sort();
    for (var i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
    return true;
  }
  function legal(type) { return ((S.req && S.req.legal_actions) || []).filter(function (a) { return a.type === type; }); }
  function kind() { return S.req ? S.req.decision.kind : null; }

  function play() {
    if (kind() !== "play" || !S.selected.length) return;
    var cards = selectedCards();
    var downs = S.selected.filter(function (i) { return S.down[i]; }).map(function (i) { return handCards()[i]; });
    if (downs.length) { send({ type: "play", cards: cards, face_down: downs }); return; }
    var matches = legal("play").filter(function (a) { return sameCards(a.cards, cards); });
    if (S.reading && matches.indexOf(S.reading) >= 0) { send(S.reading); return; }
    if (matches.length === 1) { send(matches[0]); return; }
    if (matches.length > 1) { S.choosing = matches; renderControls(); return; }
    send({ type: "play", cards: cards });  /* the engine says which rule refuses it */
  }
  function pass() { if (legal("pass").length) send({ type: "pass" }); }
  function choice() { return S.req ? S.req.choice : null; }
  function submitChoice() {
    var k = kind(), ch = choice();
    if (!ch) return;
    var cards = k === "penalty" ? S.fieldSel.map(function (i) { return ch.from[i]; }) : selectedCards();
    if (cards.length < ch.min || cards.length > ch.max) {
      S.refusal = { reason: ch.min === ch.max ? T("Choose exactly {n} card(s).", { n: ch.min }) : T("Choose from {min} to {max} card(s).", { min: ch.min, max: ch.max }), rule: null };
      renderRefusal();
      return;
    }
    send({ type: k, cards: cards });
  }

  function toggle(i) {
    if (!S.req || ["play", "give", "discard"].indexOf(kind()) < 0) return;
    var at = S.selected.indexOf(i);
    if (at >= 0) { S.selected.splice(at, 1); delete S.down[i]; }
    else S.selected.push(i);
    S.reading = null; S.choosing = null;
    S.focus = i;
    render(false, true);
  }
  function toggleDown(i) {
    if (!S.req || kind() !== "play" || !S.req.face_down) return;
    if (S.selected.indexOf(i) < 0) S.selected.push(i);
    S.down[i] = !S.down[i];
    S.focus = i;
    render(false, true);
  }
  function toggleField(i) {
    if (kind() !== "penalty") return;
    var at = S.fieldSel.indexOf(i);
    if (at >= 0) S.fieldSel.splice(at, 1); else S.fieldSel.push(i);
    render(false, false);
    var same = document.querySelector('#field button.pick[data-pool="' + i + '"]');
    if (same) same.focus();
  }
  function pick(a) {
    var h = handCards().slice(), idx = [];
    a.cards.forEach(function (code) {
      for (var i = 0; i < h.length; i++) if (h[i] === code && idx.indexOf(i) < 0) { idx.push(i); break; }
    });
    S.selected = idx; S.down = {}; S.reading = a; S.choosing = null;
    render(false, true);
  }

  /* -- rendering ----------------------------------------------------------------------------- */
  function render(fresh, keepFocus) {
    game.setAttribute("data-state", S.over ? "over" : (S.req ? (S.sending ? "sent" : "asked") : "waiting"));
    game.setAttribute("data-kind", kind() || "");
    game.setAttribute("data-rid", S.rid && S.req ? S.rid : "");
    game.setAttribute("data-seat", S.seat === null ? "" : S.seat);
    renderTurn();
    renderOpponents();
    renderFlags();
    renderField();
    renderRefusal();
    renderControls();
    renderHand(fresh, keepFocus);
    renderEvents();
  }

  function renderTurn() {
    var box = document.getElementById("turn");
    box.textContent = "";
    var o = S.obs;
    if (S.over) { box.appendChild(el("strong", null, T("The match is over: the result follows."))); return; }
    if (S.req) {
      var k = kind(), ch = choice(), info = S.req.decision.info || {};
      var ask = T(ASKS[k] || "Your turn");
      if (k === "give" && ch) {
        ask = (info.exchange || info.count) ? T("Card exchange: give {n} card(s) to {who}", { n: ch.min, who: nameOf(ch.to) })
                                            : T("7-pass: give up to {n} card(s) to {who}, or none", { n: ch.max, who: nameOf(ch.to) });
      } else if (k === "discard" && ch) {
        ask = T("10-discard: discard up to {n} card(s), or none", { n: ch.max });
      }
      box.appendChild(el("strong", "your-turn", ask));
      var rule = ruleOf(S.req);
      if (rule) box.appendChild(ruleLink(rule));
      if (k === "play" && S.req.decision.info && S.req.decision.info.lead) box.appendChild(el("span", "tag", T("you lead")));
      if (k === "play" && S.req.decision.info && S.req.decision.info.stuck) box.appendChild(el("span", "tag", T("no legal play: pass (TM-6)")));
      return;
    }
    if (!o) { box.textContent = T("Waiting for the deal…"); return; }
    if (o.over) { box.textContent = T("Game over."); return; }
    if (o.to_act === null || o.to_act === undefined) { box.textContent = T("Waiting…"); return; }
    box.textContent = T("Waiting for {who} {turn}", { who: nameOf(o.to_act), turn: T(TURNS[o.decision] || "to act") });
  }

  function bankOf(seat) {
    if (S.req && seat === S.seat) return Math.max(0, S.req.time.remaining_ms - (Date.now() - S.reqAt));
    var b = S.banks ? S.banks[seat] : null;
    if (b === null || b === undefined) return null;
    if (S.obs && S.obs.to_act === seat && !S.obs.over) return Math.max(0, b - (Date.now() - S.bankAt));
    return b;
  }

  function tick() {
    var mine = document.getElementById("my-clock");
    if (S.seat !== null) {
      var b = bankOf(S.seat);
      mine.textContent = b === null ? "" : T("Your time {t}", { t: seconds(b) });
      mine.setAttribute("data-ms", b === null ? "" : Math.round(b));
      mine.className = "clock" + (S.req ? " running" : "") + (b !== null && b < 15000 ? " low" : "");
    }
    document.querySelectorAll("#opponents .opp").forEach(function (box) {
      var s = parseInt(box.getAttribute("data-seat"), 10);
      var c = box.querySelector(".opp-clock");
      var b = bankOf(s);
      if (c) c.textContent = b === null ? "" : seconds(b);
    });
  }
  window.setInterval(tick, 250);

  function renderOpponents() {
    var box = document.getElementById("opponents");
    box.textContent = "";
    var o = S.obs;
    if (!o || S.seat === null) return;
    for (var k = 1; k < o.seats; k++) {
      var s = (S.seat + k) % o.seats;
      var opp = el("div", "opp");
      opp.setAttribute("data-seat", s);
      if (o.to_act === s && !o.over) opp.className += " to-act";
      if (o.still_in && !o.still_in[s]) opp.className += " out";
      var head = el("div", "opp-head");
      head.appendChild(el("strong", "opp-name", nameOf(s)));
      head.appendChild(el("span", "opp-clock"));
      opp.appendChild(head);
      var meta = el("div", "opp-meta");
      var n = o.hand_sizes[s];
      meta.appendChild(el("span", "opp-count", T(n === 1 ? "{n} card" : "{n} cards", { n: n })));
      if (o.passed && o.passed.indexOf(s) >= 0) meta.appendChild(el("span", "tag", T("has passed")));
      if (o.still_in && !o.still_in[s]) meta.appendChild(el("span", "tag", T("out")));
      if (o.millionaire === s) meta.appendChild(el("span", "tag act", T("Millionaire")));
      if (o.to_act === s && !o.over) meta.appendChild(el("span", "tag act", T(TURNS[o.decision] || "to act")));
      if (o.totals) meta.appendChild(el("span", "opp-total", T("total {n}", { n: o.totals[s] })));
      opp.appendChild(meta);
      var backs = el("div", "backs");
      for (var i = 0; i < Math.min(n, 14); i++) backs.appendChild(back());
      opp.appendChild(backs);
      box.appendChild(opp);
    }
    tick();
  }

  function renderFlags() {
    var box = document.getElementById("flags");
    box.textContent = "";
    var o = S.obs;
    if (!o) return;
    function flag(on, text, cls, id) {
      var t = el("span", "flag" + (on ? " on " + (cls || "") : ""), text);
      t.setAttribute("data-on", on ? "1" : "0");
      if (id) t.id = id;
      box.appendChild(t);
    }
    if (!D.scoring_unit) {  /* a match of games, scored as a whole (Million Doubt) */
      var g = T("Game {n}", { n: S.gameIndex + 1 }) + (S.games ? " / " + S.games : "");
      flag(true, g, "unit", "ind-unit");
      var done = Object.keys(S.mine);
      if (done.length) {
        var sum = done.reduce(function (acc, k) { return acc + S.mine[k]; }, 0);
        flag(true, T("Your match score {n}", { n: (sum > 0 ? "+" : "") + sum }), "unit", "ind-match");
      }
    } else if (D.scoring_unit === "deal") {  /* deals and their rate (Trump Millionaire) */
      flag(true, T("Deal {n}", { n: (o.deal || 0) + 1 }), "unit", "ind-unit");
      flag(true, T("Rate ×{n}", { n: o.rate || 1 }), "unit", "ind-rate");
    } else {
      flag(true, T("Set {set} · game {game}", { set: (o.set || 0) + 1, game: o.game_in_set || 1 }), "unit", "ind-unit");
    }
    flag(o.revolution, T("Revolution"), "rev", "ind-revolution");
    flag(o.jback, T("J-back"), "jb", "ind-jback");
    var lock = o.suit_lock && o.suit_lock.length;
    flag(lock, T("Lock {suits}", { suits: lock ? o.suit_lock.map(function (x) { return SUITS[x]; }).join("") : "" }), "lock", "ind-lock");
    if (o.number_lock) flag(true, T("Number lock"), "lock", "ind-nlock");
    if (o.direction === -1) flag(true, T("↺ counter-clockwise"), "dir", "ind-direction");
    if (o.trick_count) flag(true, T("{n}-card trick", { n: o.trick_count }), "unit", "ind-count");
    if (o.pending_doubt) flag(true, T("Doubt or through?"), "rev", "ind-pending");
    if (o.totals && S.seat !== null) flag(true, T("Your total {n}", { n: o.totals[S.seat] }), "unit", "ind-total");
  }

  function renderField() {
    var box = document.getElementById("field");
    box.textContent = "";
    var o = S.obs;
    if (!o || !o.field || !o.field.length) { box.appendChild(el("span", "muted", T("empty"))); return; }
    var penalty = kind() === "penalty" && choice();
    var pool = penalty ? choice().from.slice() : null;
    var used = {};
    o.field.forEach(function (p, i) {
      var row = el("div", "play" + (i === o.field.length - 1 ? " top" : ""));
      row.setAttribute("data-seat", p.seat);
      row.appendChild(el("span", "who", nameOf(p.seat)));
      var cards = el("span", "cards");
      var downs = Array.isArray(p.face_down) ? p.face_down.slice() : [];
      (p.cards || []).forEach(function (code) {
        var d = downs.indexOf(code);
        var isDown = d >= 0 && !p.revealed;
        if (d >= 0) downs.splice(d, 1);
        var c;
        if (pool) {
          var at = -1;
          for (var q = 0; q < pool.length; q++) if (pool[q] === code && !used[q]) { at = q; break; }
          if (at >= 0) {
            used[at] = true;
            c = face(el("button", "c pick"), code);
            c.type = "button";
            c.setAttribute("aria-pressed", S.fieldSel.indexOf(at) >= 0 ? "true" : "false");
            c.setAttribute("data-pool", at);
            (function (x) { c.addEventListener("click", function () { toggleField(x); }); })(at);
          }
        }
        if (!c) c = face(el("span", "c"), code);
        if (isDown) { c.className += " mine-down"; c.title = T("face-down: {card}", { card: cardText(code) }); }
        if (p.revealed && d >= 0) c.className += " revealed";
        cards.appendChild(c);
      });
      if (typeof p.face_down === "number") for (var k = 0; k < p.face_down; k++) cards.appendChild(back(T("face-down card")));
      row.appendChild(cards);
      if (p.revealed) row.appendChild(el("span", "tag reveal", T("revealed")));
      box.appendChild(row);
    });
  }

  function renderRefusal() {
    var box = document.getElementById("refusal");
    box.textContent = "";
    if (!S.refusal) { box.hidden = true; return; }
    box.hidden = false;
    box.appendChild(el("strong", null, T("Refused") + ": "));
    box.appendChild(document.createTextNode(codesText(S.refusal.reason) + " "));
    if (S.refusal.rule) {
      box.appendChild(document.createTextNode("["));
      box.appendChild(ruleLink(S.refusal.rule));
      box.appendChild(document.createTextNode("]"));
    }
  }

  function button(id, text, key, on, enabled) {
    var b = el("button", "act", text);
    b.type = "button";
    b.id = id;
    if (key) { b.appendChild(el("kbd", null, key)); b.setAttribute("aria-keyshortcuts", key); }
    b.disabled = !enabled || S.sending;
    b.addEventListener("click", on);
    return b;
  }

  function renderControls() {
    var box = document.getElementById("controls");
    box.textContent = "";
    if (!S.req) {
      box.appendChild(el("span", "muted", S.over ? "" : T("Not your turn.")));
      return;
    }
    var k = kind();
    if (S.sending) box.appendChild(el("span", "muted sending", T("Sent; the arena checks it…")));
    if (k === "play") {
      box.appendChild(button("act-play", T("Play cards"), "P", play, S.selected.length > 0));
      box.appendChild(button("act-pass", T("Pass"), "S", pass, legal("pass").length > 0));
      if (S.selected.length) box.appendChild(button("act-clear", T("Clear"), "Esc", function () { S.selected = []; S.down = {}; render(false, true); }, true));
      if (S.req.face_down) {
        var hint = el("p", "muted small fd-hint", T("Million Doubt: F (or the ↓ on a selected card) plays a card face down; a face-down play is accepted if the hidden cards could make it legal (MD-3), and may be doubted (MD-6)."));
        box.appendChild(hint);
      }
      if (S.choosing) {
        var pickBox = el("div", "readings");
        pickBox.appendChild(el("span", null, T("Which reading of the joker?") + " "));
        S.choosing.forEach(function (a, i) {
          var b = button("reading-" + i, T("joker as {ranks}", { ranks: (a.jokers || []).join(", ") }), i < 9 ? String(i + 1) : null, function () { send(a); }, true);
          b.className += " reading";
          b.setAttribute("data-jokers", (a.jokers || []).join(" "));
          pickBox.appendChild(b);
        });
        box.appendChild(pickBox);
      }
      var plays = legal("play");
      /* the plays a joker stands in (C-4) are many: they are not listed, the joker is selected
         with its cards instead (and the page asks which reading when there are several) */
      var listed = plays.filter(function (a) { return !a.jokers; });
      var withJoker = plays.length - listed.length;
      if (plays.length) {
        var sugg = el("div", "suggestions");
        sugg.id = "suggestions";
        sugg.appendChild(el("span", "muted small", T("Legal plays (a click selects them):") + " "));
        listed.slice(0, 30).forEach(function (a) {
          var chip = el("button", "sugg", cardsText(a.cards));
          chip.type = "button";
          chip.setAttribute("data-cards", a.cards.join(" "));
          chip.addEventListener("click", function () { pick(a); });
          sugg.appendChild(chip);
        });
        if (listed.length > 30) sugg.appendChild(el("span", "muted small", T("and {n} more", { n: listed.length - 30 })));
        if (withJoker) sugg.appendChild(el("span", "muted small", T("and {n} with a joker standing in for a card: select it with them (C-4)", { n: withJoker })));
        box.appendChild(sugg);
      } else if (!legal("pass").length || S.req.face_down) {
        box.appendChild(el("span", "muted small", S.req.face_down ? T("No face-up play beats the table: play face down, or pass.") : ""));
      }
    } else if (k === "doubt") {
      box.appendChild(button("act-doubt", T("Doubt! (ダウト)"), "D", function () { send({ type: "doubt" }); }, true));
      box.appendChild(button("act-through", T("Let it through (スルー)"), "T", function () { send({ type: "through" }); }, true));
      box.appendChild(el("p", "muted small", T("A doubt reveals the face-down cards (MD-7): if they lie you give the penalty, if they are honest your opponent does.")));
    } else if (k === "exchange") {
      box.appendChild(button("act-exchange-yes", T("Exchange my hand"), "Y", function () { send({ type: "exchange", accept: true }); }, true));
      box.appendChild(button("act-exchange-no", T("Keep my hand"), "N", function () { send({ type: "exchange", accept: false }); }, true));
      box.appendChild(el("p", "muted small", T("Exchanging gives up your 10 cards for 10 drawn at random from the 14 set aside (TM-3).")));
    } else if (k === "rate") {
      legal("rate").forEach(function (a, i) {
        box.appendChild(button("act-rate-" + a.rate, T("Rate ×{n}", { n: a.rate }), i < 9 ? String(i + 1) : null, function () { send(a); }, true));
      });
      box.appendChild(el("p", "muted small", T("Every point of this deal is multiplied by the rate, your own included (TM-3).")));
    } else if (k === "give" || k === "discard" || k === "penalty") {
      var ch = choice();
      var count = k === "penalty" ? S.fieldSel.length : S.selected.length;
      var ok = ch && count >= ch.min && count <= ch.max;
      var text = k === "give" ? T("Give {n} card(s)", { n: count }) : (k === "discard" ? T("Discard {n} card(s)", { n: count }) : T("Give {n} card(s) as the penalty", { n: count }));
      box.appendChild(button("act-" + k, text, "G", submitChoice, ok));
      if (ch) box.appendChild(el("span", "muted small", ch.min === ch.max ? T("exactly {n}", { n: ch.min }) : T("from {min} to {max}", { min: ch.min, max: ch.max })));
      if (k === "penalty") box.appendChild(el("p", "muted small", T("Click cards of the table: they go into your opponent's hand; the others leave the game (MD-7).")));
    }
  }

  function renderHand(fresh, keepFocus) {
    var box = document.getElementById("my-hand");
    var had = document.activeElement && box.contains(document.activeElement);
    box.textContent = "";
    var h = handCards();
    document.getElementById("hand-count").textContent = h.length ? T(h.length === 1 ? "{n} card" : "{n} cards", { n: h.length }) : "";
    var k = kind();
    var selectable = S.req && ["play", "give", "discard"].indexOf(k) >= 0;
    var allowed = null;
    if (selectable && (k === "give" || k === "discard") && choice()) allowed = choice().from;
    h.forEach(function (code, i) {
      var b = face(el("button", "c hc"), code);
      b.type = "button";
      b.setAttribute("data-index", i);
      b.setAttribute("aria-pressed", S.selected.indexOf(i) >= 0 ? "true" : "false");
      b.setAttribute("aria-label", cardText(code) + (S.down[i] ? " " + T("face down") : ""));
      b.tabIndex = i === S.focus ? 0 : -1;
      if (S.down[i]) { b.setAttribute("data-down", "1"); b.className += " down"; }
      b.disabled = !selectable || (allowed !== null && allowed.indexOf(code) < 0);
      if (selectable && b.disabled) b.className += " na"; // a card this give or discard may not take
      if (b.disabled) b.tabIndex = -1;
      b.addEventListener("click", function () { toggle(i); });
      b.addEventListener("focus", function () { S.focus = i; });
      if (S.req && k === "play" && S.req.face_down && S.selected.indexOf(i) >= 0) {
        var fd = el("span", "fd-toggle", S.down[i] ? "↓" : "↑");
        fd.title = T("face down (F)");
        fd.addEventListener("click", function (ev) { ev.stopPropagation(); toggleDown(i); });
        b.appendChild(fd);
      }
      box.appendChild(b);
    });
    if (!h.length) box.appendChild(el("span", "muted", T("no cards")));
    if ((fresh && selectable) || had || keepFocus) focusCard(S.focus, fresh && selectable);
    if (fresh && k === "penalty") {
      var first = document.querySelector("#field button.pick");
      if (first) first.focus();
    }
  }

  function focusCard(i, scroll) {
    var cards = document.querySelectorAll("#my-hand button.hc:not([disabled])");
    if (!cards.length) return;
    var pickI = null;
    cards.forEach(function (c) { if (parseInt(c.getAttribute("data-index"), 10) === i) pickI = c; });
    var c = pickI || cards[0];
    c.tabIndex = 0;
    c.focus({ preventScroll: !scroll });
  }

  /* Events in words; the person's own in the second person ("You play 4♥"). */
  var MINE = { play: "You play {cards}", pass: "You pass", through: "You let it through (スルー)", doubt: "You doubt (ダウト)",
               finish: "You are out of cards", start: "You lead", discard: "You discard {cards}",
               rate: "You set the rate to {rate}" };
  function describe(e) {
    var who = function (s) { return s === undefined || s === null ? "" : nameOf(s); };
    var me = e.seat !== undefined && e.seat !== null && e.seat === S.seat;
    if (e.type === "start") me = e.leader === S.seat;
    if (e.type === "play") {
      var downs = typeof e.face_down === "number" ? e.face_down : (e.face_down || []).length;
      var shown = (e.cards || []).length;
      if (!shown) return me ? T("You play {n} card(s) face down", { n: downs }) : T("{who} plays {n} card(s) face down", { who: who(e.seat), n: downs });
      var text = me ? T("You play {cards}", { cards: cardsText(e.cards) }) : T("{who} plays {cards}", { who: who(e.seat), cards: cardsText(e.cards) });
      return text + (downs ? " " + T("({n} face-down)", { n: downs }) : "");
    }
    if (me && MINE[e.type] && e.type !== "exchange") {
      return T(MINE[e.type], { cards: cardsText(e.cards), rate: e.rate });
    }
    if (me && e.type === "penalty") return T("You give {cards} to {to} (penalty)", { cards: cardsText(e.cards), to: who(e.to) });
    if (me && e.type === "give" && e.cards) return T("You give {cards} to {to}", { cards: cardsText(e.cards), to: who(e.to) });
    if (me && e.type === "forfeit") return T("You forfeit ({reason})", { reason: e.reason });
    if (e.type === "deal_end" && e.winner === S.seat) return T("Deal over: you win");
    switch (e.type) {
      case "pass": return T("{who} passes", { who: who(e.seat) });
      case "through": return T("{who} lets it through (スルー)", { who: who(e.seat) });
      case "doubt": return T("{who} doubts (ダウト)", { who: who(e.seat) });
      case "reveal": return e.honest ? T("Doubt reveal: the play was honest") : T("Doubt reveal: the play was a bluff");
      case "penalty": return T("{who} gives {cards} to {to} (penalty)", { who: who(e.seat), cards: cardsText(e.cards), to: who(e.to) });
      case "clear": return T("Field cleared (trick over)");
      case "eight_cut": return T("8-cut by {who}: the field is cleared", { who: who(e.seat) });
      case "revolution": return e.on ? T("Revolution! Card strength is reversed") : T("Revolution reversed: normal strength again");
      case "jback": return e.on ? T("J-back: strength reversed until the field clears") : T("J-back ends");
      case "lock": return T("Suit lock {suits}: only these suits may follow", { suits: (e.suits || []).map(function (s) { return SUITS[s]; }).join("") });
      case "finish": return T("{who} is out of cards", { who: who(e.seat) });
      case "start": return T("{who} leads", { who: who(e.leader) });
      case "give": return e.cards ? T("{who} gives {cards} to {to}", { who: who(e.seat), cards: cardsText(e.cards), to: who(e.to) })
                                  : T("{who} gives {count} card(s) to {to}", { who: who(e.seat), count: e.count, to: who(e.to) });
      case "exchange": return me ? (e.accept ? T("You exchange your hand") : T("You keep your hand"))
                                 : (e.accept ? T("{who} accepts the exchange", { who: who(e.seat) }) : T("{who} declines the exchange", { who: who(e.seat) }));
      case "rate": return T("{who} sets the rate to {rate}", { who: who(e.seat), rate: e.rate });
      case "discard": return T("{who} discards {cards}", { who: who(e.seat), cards: cardsText(e.cards) });
      case "deal": return T("Deal {n}", { n: (e.deal || 0) + 1 });
      case "game": return T("Game {game} of set {set}", { game: e.game_in_set || 1, set: (e.set || 0) + 1 });
      case "hand": return T("Your hand: {cards}", { cards: cardsText(e.cards) });
      case "forfeit": return T("{who} forfeits ({reason})", { who: who(e.seat), reason: e.reason });
      case "spade_3_return": return T("Spade-3 return (スペ3返し) by {who}: beats the joker, the field is cleared", { who: who(e.seat) });
      case "game_end": return e.scores && S.seat !== null
        ? T("Game over: your score {n}", { n: (e.scores[String(S.seat)] > 0 ? "+" : "") + e.scores[String(S.seat)] })
        : T("Game over");
      case "deal_end": return T("Deal over: {who} wins", { who: who(e.winner) });
      default: return null;
    }
  }

  function renderEvents() {
    var box = document.getElementById("events");
    var o = S.obs;
    var hist = o && o.history ? o.history : [];
    var version = hist.length + ":" + (o ? o.hand_sizes.join(",") : "");
    if (version === S.lastVersion) return;
    S.lastVersion = version;
    box.textContent = "";
    hist.slice(-40).forEach(function (e) {
      var text = describe(e);
      if (text) { var li = el("li", "ev ev-" + e.type, text); box.appendChild(li); }
    });
    box.scrollTop = box.scrollHeight;
  }

  /* -- keys ---------------------------------------------------------------------------------- */
  document.addEventListener("keydown", function (e) {
    var tag = (e.target && e.target.tagName) || "";
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") return;
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    var k = kind();
    var active = document.activeElement;
    var inField = active && active.classList && active.classList.contains("pick");
    var cards = Array.prototype.slice.call(document.querySelectorAll(inField ? "#field button.pick" : "#my-hand button.hc:not([disabled])"));
    var inHand = active && active.classList && active.classList.contains("hc");
    function idx(b) { return parseInt(b.getAttribute("data-index"), 10); }
    if ((key === "ArrowRight" || key === "ArrowLeft") && cards.length) {
      var at = inHand || inField ? cards.indexOf(active) : -1;
      var next = at < 0 ? 0 : (at + (key === "ArrowRight" ? 1 : -1) + cards.length) % cards.length;
      if (!inField) cards.forEach(function (c) { c.tabIndex = -1; });
      cards[next].tabIndex = 0;
      cards[next].focus();
      if (!inField) S.focus = idx(cards[next]);
      e.preventDefault();
      return;
    }
    if (!S.req || S.sending) return;
    var handled = true;
    if (key === "f" && k === "play" && inHand) toggleDown(idx(document.activeElement));
    else if (key === "p" && k === "play") play();
    else if (key === "s" && k === "play") pass();
    else if (key === "d" && k === "doubt") send({ type: "doubt" });
    else if (key === "t" && k === "doubt") send({ type: "through" });
    else if (key === "y" && k === "exchange") send({ type: "exchange", accept: true });
    else if (key === "n" && k === "exchange") send({ type: "exchange", accept: false });
    else if (/^[1-9]$/.test(key) && k === "rate") { var r = legal("rate")[parseInt(key, 10) - 1]; if (r) send(r); }
    else if (/^[1-9]$/.test(key) && k === "play" && S.choosing) { var rd = S.choosing[parseInt(key, 10) - 1]; if (rd) send(rd); }
    else if (key === "g" && (k === "give" || k === "discard" || k === "penalty")) submitChoice();
    else if (key === "Escape") { S.selected = []; S.down = {}; S.fieldSel = []; S.choosing = null; render(false, true); }
    else handled = false;
    if (handled) e.preventDefault();
  });

  /* -- the stream, or polling ---------------------------------------------------------------- */
  function reloadWhenDone() { window.setTimeout(function () { window.location.reload(); }, 200); }
  var polling = false;
  function poll() {
    if (!polling) return;
    fetch(D.seat_url, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (j) {
      if (j.status && j.status !== "running") { reloadWhenDone(); return; }
      (j.frames || []).forEach(handle);
      if (j.frames && !j.frames.some(function (f) { return f.type === "request"; }) && S.req) {
        S.req = null; render(false);  /* answered meanwhile */
      }
      window.setTimeout(poll, 1000);
    }, function () { window.setTimeout(poll, 2000); });
  }
  function startPolling() {
    if (polling) return;
    polling = true;
    game.setAttribute("data-transport", "poll");
    poll();
  }
  if (!window.EventSource) { startPolling(); return; }
  var opened = false;
  var source = new EventSource(D.events_url);
  game.setAttribute("data-transport", "stream");
  source.onopen = function () { opened = true; };
  source.onmessage = function (ev) {
    var f;
    try { f = JSON.parse(ev.data); } catch (err) { return; }
    handle(f);
  };
  source.addEventListener("end", function () { source.close(); S.over = true; render(false); reloadWhenDone(); });
  source.addEventListener("error", function () {
    if (!opened || source.readyState === EventSource.CLOSED) { source.close(); startPolling(); }
  });
})();
