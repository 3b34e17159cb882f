/* Daifugo Arena replay viewer: steps through the frames embedded in #replay-data
 * (built by api/ui/replay.py). Plain JavaScript, no build step.
 * Keys: ArrowLeft / ArrowRight step, Home / End jump. The address keeps #g<game>s<step>.
 *
 * Live mode (#replay-data has "live": {"url", "view", "page", "after"}): the same renderer
 * fed by the match's server-sent events (api/ui/live.py, arena/live.py): each message
 * becomes a frame of its game; the view follows the newest frame unless the viewer steps
 * back. A public message has no hands: each seat shows its hand size as card backs that
 * carry no card, and a face-down card on the field is a back without identity. A message of
 * a player's own view (the owner of a seated bot) has "hands" with only its seat's hand
 * ("own_seat"; every other seat null, shown as backs). */
(function () {
  "use strict";
  var dataEl = document.getElementById("replay-data");
  if (!dataEl) return;
  var R = JSON.parse(dataEl.textContent);
  var root = document.getElementById("replay");
  var SUITS = { S: "♠", H: "♥", D: "♦", C: "♣" };
  var RANKS = { T: "10" };
  var state = { game: 0, step: 0 };
  var I18N = {};
  try { I18N = JSON.parse((document.getElementById("i18n") || {}).textContent || "{}"); } catch (e) { I18N = {}; }
  /* The message in the page's language (api/ui/i18n.py JS_MESSAGES), {name} filled from params. */
  function T(msg, params) {
    var s = I18N[msg] || msg;
    if (params) s = s.replace(/\{(\w+)\}/g, function (m, k) { return params[k] !== undefined ? params[k] : m; });
    return s;
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  function cardText(code) {
    if (code === "JK") return T("Joker");
    return (RANKS[code[0]] || code[0]) + SUITS[code[1]];
  }

  function cardsText(cards) {
    return (cards || []).map(cardText).join(" ");
  }

  /* A card back that names no card (a hidden hand, an unrevealed face-down card in a public view). */
  function hiddenCard(title) {
    var c = el("span", "c back hidden");
    c.setAttribute("data-hidden", "1");
    c.title = title;
    return c;
  }

  /* One card: a face (rank over suit, red for hearts/diamonds) or a back. */
  function card(code, opts) {
    opts = opts || {};
    var c = el("span", "c");
    c.setAttribute("data-card", code);
    if (opts.back) {
      c.className += " back";
      c.setAttribute("data-down", "1");
      c.title = T("face-down: {card}", { card: cardText(code) });
      return c;
    }
    if (code === "JK") {
      c.className += " joker";
      c.appendChild(el("b", null, "JK"));
      c.appendChild(el("i", null, opts.as ? "=" + (RANKS[opts.as] || opts.as) : "★"));
    } else {
      var suit = code[1];
      c.className += (suit === "H" || suit === "D") ? " red" : " black";
      c.appendChild(el("b", null, RANKS[code[0]] || code[0]));
      c.appendChild(el("i", null, SUITS[suit]));
    }
    if (opts.revealed) { c.className += " revealed"; c.title = T("revealed by a doubt"); }
    if (opts.down) { c.className += " wasdown"; c.title = T("played face-down (revealed)"); }
    c.title = c.title || cardText(code);
    return c;
  }

  function game() { return R.games[state.game]; }
  function frames() { return game().frames; }
  function label(seat) {
    var p = R.players[game().seats[seat]];
    return p ? p.label : T("seat {n}", { n: seat });
  }
  function seconds(ms) { return T("{s} s", { s: (ms / 1000).toFixed(2) }); }

  function signed(v) { return (v > 0 ? "+" : (v < 0 ? "−" : "±")) + Math.abs(v); }
  /* Seat-keyed scores ({"0": 11, "1": -11}) as "Ace +11 · Rando −11" (never raw JSON). */
  function scoresText(scores, labelOf) {
    if (!scores) return "";
    var parts = [];
    var keys = Object.keys(scores).sort(function (x, y) { return x - y; });
    keys.forEach(function (k) { parts.push(labelOf(parseInt(k, 10)) + " " + signed(scores[k])); });
    return parts.join(" · ");
  }
  /* Whose turn it is to do what: one whole phrase per decision kind, so that each language can
     word it ("to play" is 「カードを出す番」). */
  var TURNS = { play: "to play", doubt: "to decide on a doubt", exchange: "to decide on the exchange",
                give: "to give cards", rate: "to set the rate", penalty: "to give the penalty cards",
                discard: "to discard" };
  function turnText(d) { return T(TURNS[d] || "to act"); }

  function describeAction(f) {
    if (f.forfeit) return T("forfeits ({reason})", { reason: f.forfeit });
    var a = f.action;
    if (!a) return "";
    var t = a.type;
    if (t === "play") {
      var s = T("plays {cards}", { cards: cardsText(a.cards) });
      if (a.face_down && a.face_down.length) s += " " + T("({n} face-down: {cards})", { n: a.face_down.length, cards: cardsText(a.face_down) });
      if (a.jokers && a.jokers.length) s += " " + T("(joker as {ranks})", { ranks: a.jokers.join(", ") });
      return s;
    }
    if (t === "pass") return T("passes");
    if (t === "through") return T("lets it through (スルー)");
    if (t === "doubt") return T("doubts! (ダウト)");
    if (t === "penalty") return T("gives {cards} as penalty", { cards: cardsText(a.cards) });
    if (t === "give") return T("gives {cards}", { cards: cardsText(a.cards) });
    if (t === "exchange") return a.accept ? T("accepts the exchange") : T("declines the exchange");
    if (t === "rate") return T("sets the rate to {rate}", { rate: a.rate });
    var rest = a.cards ? " " + cardsText(a.cards) : "";
    return t + rest;
  }

  function describeEvent(e) {
    var who = function (s) { return (s === undefined || s === null) ? "" : label(s); };
    switch (e.type) {
      case "play": return T("{who} plays {cards}", { who: who(e.seat), cards: cardsText(e.cards) }) + (e.face_down ? " " + T("({n} face-down)", { n: e.face_down.length || e.face_down }) : "");
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
      case "number_lock": return T("Number lock (stairs): only the next ranks may follow");
      case "direction": return e.direction === 1 ? T("Direction now clockwise") : T("Direction now counter-clockwise");
      case "finish": return T("{who} is out of cards", { who: who(e.seat) }) + (e.foul ? " " + T("(foul finish: ranked last)") : "");
      case "start": return T("{who} leads", { who: who(e.leader) });
      case "give": return e.cards ? T("{who} gives {cards} to {to}", { who: who(e.seat), cards: cardsText(e.cards), to: who(e.to) })
                                  : T("{who} gives {count} card(s) to {to}", { who: who(e.seat), count: e.count, to: who(e.to) });
      case "exchange": return e.cards ? T("{who} gives {cards} to {to}", { who: who(e.seat), cards: cardsText(e.cards), to: who(e.to) })
                                      : (e.accept ? T("{who} accepts the exchange", { who: who(e.seat) }) : T("{who} declines the exchange", { who: who(e.seat) }));
      case "exchange_choice": return T("{who} gives {cards} to {to}", { who: who(e.seat), cards: cardsText(e.cards), to: who(e.to) });
      case "spade_3_return": return T("Spade-3 return (スペ3返し) by {who}: beats the joker, the field is cleared", { who: who(e.seat) });
      case "discard": return T("{who} discards {cards}", { who: who(e.seat), cards: cardsText(e.cards) });
      case "five_skip": return T("5-skip: the next player is skipped");
      case "forfeit": return T("{who} forfeits ({reason})", { who: who(e.seat), reason: e.reason });
      case "game": return T("Game {game} of set {set}", { game: e.game_in_set || 1, set: (e.set || 0) + 1 });
      case "deal": return T("Deal {n}", { n: (e.deal || 0) + 1 });
      case "rate": return T("{who} sets the rate to {rate}", { who: who(e.seat), rate: e.rate });
      case "miyako_ochi": return T("Miyako-ochi: {who} falls to last place", { who: who(e.seat) });
      case "game_end": return T("Game over") + (e.winner !== undefined && e.winner !== null ? T(": {who} wins", { who: who(e.winner) }) : "") + (e.scores ? " · " + T("Score") + ": " + scoresText(e.scores, label) : "");
      case "deal_end": return T("Deal over: {who} wins", { who: who(e.winner) }) + (e.scores ? " · " + scoresText(e.scores, label) : "");
      case "set_end": return T("Set {n} over", { n: (e.set || 0) + 1 }) + (e.blind ? " · " + T("blind cards: {cards}", { cards: cardsText(e.blind) }) : "");
      case "match_end": return T("Match over");
      case "void_deal": return T("Deal void");
      default:
        var parts = [];
        for (var k in e) if (k !== "type") parts.push(k + "=" + JSON.stringify(e[k]));
        return e.type + (parts.length ? " " + parts.join(" ") : "");
    }
  }

  /* A person's replay (R.perspective: its player index, ?seat=N): the other seats' hands and
     face-down cards as backs, as the person saw them, until "Show every hand" is ticked. */
  var everyHand = false;
  function hidesSeat(s) {
    if (R.perspective === undefined || R.perspective === null || everyHand) return false;
    return game().seats[s] !== R.perspective;
  }

  function renderSeats(f, prev) {
    var list = document.getElementById("seat-list");
    list.textContent = "";
    var cap = (R.time_rules && R.time_rules.cap_ms) || 60000;
    for (var s = 0; s < f.hand_sizes.length; s++) {
      var row = el("div", "seat");
      row.id = "seat-" + s;
      row.setAttribute("data-seat", s);
      if (f.to_act === s && !f.over) row.className += " to-act";
      if (f.seat === s) row.className += " acted";
      if (f.seat === s && f.fault) row.className += " fault";
      if (!f.still_in[s]) row.className += " out";
      var info = el("div", "seat-info");
      var name = el("div", "seat-name");
      name.appendChild(el("span", "seat-no", T("Seat {n}", { n: s })));
      name.appendChild(el("span", "bot", label(s)));
      info.appendChild(name);
      var meta = el("div", "seat-meta");
      meta.appendChild(el("span", "count", T(f.hand_sizes[s] === 1 ? "{n} card" : "{n} cards", { n: f.hand_sizes[s] })));
      var bank = f.banks_ms[s];
      var b = el("span", "bank");
      b.setAttribute("data-bank-ms", bank);
      var bar = el("span", "bankbar");
      var fill = el("span", bank < 0.2 * cap ? "low" : "");
      fill.style.width = Math.max(0, Math.min(100, 100 * bank / cap)) + "%";
      bar.appendChild(fill);
      b.appendChild(bar);
      b.appendChild(el("span", "banktext", T("bank {s}", { s: seconds(bank) })));
      meta.appendChild(b);
      if (!f.still_in[s]) meta.appendChild(el("span", "tag", T("out")));
      else if (f.to_act === s && !f.over) meta.appendChild(el("span", "tag act", turnText(f.decision)));
      info.appendChild(meta);
      row.appendChild(info);
      var hand = el("div", "hand");
      if (!f.hands || !f.hands[s] || hidesSeat(s)) {  // a public live view, a seat not the owner's: the hand size only
        hand.className += " hidden-hand";
        for (var k = 0; k < f.hand_sizes[s]; k++) hand.appendChild(hiddenCard(T("hidden card")));
        if (!f.hand_sizes[s]) hand.appendChild(el("span", "muted", T("no cards")));
        row.appendChild(hand);
        list.appendChild(row);
        continue;
      }
      if (f.live && f.own_seat === s) row.className += " own";
      var before = prev && prev.hands ? prev.hands[s] : null;
      f.hands[s].forEach(function (code) {
        var c = card(code);
        if (before && before.indexOf(code) < 0) { c.className += " new"; c.title = T("new in this hand: {card}", { card: cardText(code) }); }
        hand.appendChild(c);
      });
      if (!f.hands[s].length) hand.appendChild(el("span", "muted", T("no cards")));
      row.appendChild(hand);
      list.appendChild(row);
    }
  }

  function renderState(f) {
    var st = document.getElementById("state");
    st.textContent = "";
    function flag(on, text, cls, title) {
      var t = el("span", "flag" + (on ? " on " + (cls || "") : ""), text);
      t.setAttribute("data-on", on ? "1" : "0");
      if (title) t.title = title;
      st.appendChild(t);
      return t;
    }
    flag(f.revolution, T("Revolution"), "rev", T("card strength reversed")).id = "ind-revolution";
    flag(f.jback, T("J-back"), "jb", T("strength reversed until the trick ends")).id = "ind-jback";
    var lock = f.suit_lock && f.suit_lock.length;
    var l = flag(lock, T("Lock {suits}", { suits: lock ? f.suit_lock.map(function (x) { return SUITS[x]; }).join("") : "" }), "lock", T("suit lock"));
    l.id = "ind-lock";
    if (lock && (f.suit_lock.indexOf("H") >= 0 || f.suit_lock.indexOf("D") >= 0)) l.className += " redsuit";
    if (f.number_lock) flag(true, T("Number lock"), "lock").id = "ind-nlock";
    flag(true, f.direction === 1 ? T("↻ clockwise") : T("↺ counter-clockwise"), "dir").id = "ind-direction";
    /* the scoring unit of the rule set (engine.RuleSet.scoring_unit): a deal (TM), a game of the match (JDF) */
    var unitName = R.scoring_unit === "deal" ? "Deal {n}" : (R.scoring_unit === "game" ? "Game {n}" : null);
    var units = game().units || [];
    var shownUnit = units.length && f.unit > units[units.length - 1].unit ? units[units.length - 1].unit : f.unit;
    if (unitName) flag(true, T(unitName, { n: shownUnit + 1 }), "unit").id = "ind-unit";
    if (f.over) flag(true, T("Game over"), "over");
  }

  function renderField(f) {
    var field = document.getElementById("field");
    field.textContent = "";
    if (!f.field.length) { field.appendChild(el("span", "muted", T("empty"))); return; }
    f.field.forEach(function (p, i) {
      var play = el("div", "play" + (i === f.field.length - 1 ? " top" : ""));
      play.setAttribute("data-seat", p.seat);
      play.appendChild(el("span", "who", label(p.seat)));
      var cards = el("span", "cards");
      if (typeof p.face_down === "number") {  // a public view: face-up cards, then backs for the hidden ones
        var jk = (p.jokers || []).slice();
        (p.cards || []).forEach(function (code) { cards.appendChild(card(code, { as: code === "JK" ? jk.shift() : undefined })); });
        for (var k = 0; k < p.face_down; k++) cards.appendChild(hiddenCard(T("face-down card")));
        play.appendChild(cards);
        field.appendChild(play);
        return;
      }
      var down = (p.face_down || []).slice();
      var jokerAs = (p.jokers || []).slice();
      p.cards.forEach(function (code) {
        var k = down.indexOf(code);
        var isDown = k >= 0;
        if (isDown) down.splice(k, 1);
        var as = code === "JK" ? jokerAs.shift() : undefined;
        if (isDown && !p.revealed && hidesSeat(p.seat)) { cards.appendChild(hiddenCard(T("face-down card"))); return; }
        cards.appendChild(card(code, { back: isDown && !p.revealed, revealed: isDown && p.revealed, as: as }));
      });
      play.appendChild(cards);
      if (p.revealed) play.appendChild(el("span", "tag reveal", T("revealed")));
      field.appendChild(play);
    });
  }

  function renderAction(f) {
    var box = document.getElementById("action");
    box.textContent = "";
    box.className = "action" + (f.fault ? " fault" : "");
    if (f.index === 0) {
      box.appendChild(el("span", "muted", T("Start of game {n}: {who} {turn}", { n: state.game + 1, who: label(f.to_act), turn: turnText(f.decision) })));
      explainDecision(box, f.decision);
      return;
    }
    box.appendChild(el("span", "who", label(f.seat)));
    box.appendChild(el("span", "what", " " + (f.live ? liveAction(f) : describeAction(f))));
    var ex = f.exchange;
    if (ex) {
      var bankText = T("bank {before} → {after}", { before: seconds(ex.bank_before_ms), after: seconds(ex.bank_after_ms) });
      var t = el("span", "took", T("{ms} ms", { ms: ex.elapsed_ms }));
      t.title = bankText;
      box.appendChild(t);
      box.appendChild(el("span", "muted small", " " + bankText));
    }
    if (f.fault) {
      var fl = el("div", "faultline", T("FAULT {kind}", { kind: T("fault:" + f.fault.kind) }) + (f.fault.detail ? ": " + f.fault.detail : ""));
      fl.setAttribute("data-kind", f.fault.kind);
      box.appendChild(fl);
    }
    var a = f.action;
    if (a && (a.type === "exchange" || a.type === "give")) explainDecision(box, a.type);
    else if (!f.over) explainDecision(box, f.decision);
  }

  /* A plain-words line for the exchange steps (TM-3 exchange, JDF-4 give); new cards are outlined. */
  function explainDecision(box, kind) {
    var text = null;
    if (kind === "exchange") text = T("Exchange (TM-3): the Millionaire may swap its whole hand for 10 cards drawn at random from the 14 set aside");
    else if (kind === "give") text = T("Card exchange (JDF-4): the daihinmin gives its 2 strongest cards to the daifugo, the hinmin its strongest to the fugo; they give back cards of their choice");
    if (!text) return;
    var d = el("div", "explain", text);
    d.id = "explain";
    d.appendChild(el("span", "legend", " " + T("Outlined cards are new in the hand.")));
    box.appendChild(d);
  }

  /* A live frame's action in words: the first event of the acting seat (no action is sent live). */
  function liveAction(f) {
    if (f.forfeit) return T("forfeits ({reason})", { reason: f.forfeit });
    var mine = (f.events || []).filter(function (e) { return e.seat === f.seat && e.type !== "finish"; });
    if (!mine.length) return T(f.kind || "act");
    var e = mine[0];
    var text = describeEvent(e);
    var name = label(f.seat);
    return text.indexOf(name) === 0 ? text.slice(name.length).replace(/^\s+/, "") : text;
  }

  function renderEvents(f) {
    var box = document.getElementById("events");
    box.textContent = "";
    var evs = f.events.filter(function (e) { return e.type !== "play" && e.type !== "pass"; });
    evs.forEach(function (e) {
      var cls = "ev ev-" + e.type;
      box.appendChild(el("div", cls, describeEvent(e)));
    });
  }

  var COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea"];
  var SVGNS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }
  function unitName(u) {
    if (R.scoring_unit === "deal") return T("Deal {n}", { n: u.unit + 1 }) + (u.void ? " · " + T("Deal void") : "");
    if (R.scoring_unit === "game" && u.set !== null) return T("Set {set} · game {game}", { set: u.set + 1, game: u.game_in_set });
    return T("Game {n}", { n: u.unit + 1 });
  }

  /* Running totals: the deals (TM) or games (JDF) of this game, else the games of the match (MD). */
  function totalsSeries() {
    var g = game();
    var units = (g.units || []).filter(function (u) { return u.totals; });
    if (units.length > 0 && R.scoring_unit) {
      return { rows: units, n: g.seats.length, who: label,
               done: function (row) { return row.end_step <= state.step; },
               name: unitName, jump: function (row) { go(row.first_step); } };
    }
    var gt = R.game_totals || [];
    if (gt.length > 1) {
      return { rows: gt, n: R.players.length,
               who: function (p) { return R.players[p] ? R.players[p].label : String(p); },
               done: function (row, i) { return i < state.game || (i === state.game && frames()[state.step].over); },
               name: function (row, i) { return T("Game {n}", { n: i + 1 }); },
               jump: function (row, i) { setGame(i); } };
    }
    return null;
  }

  function renderTotals() {
    var box = document.getElementById("totals");
    if (!box) return;
    box.textContent = "";
    var S = totalsSeries();
    if (!S) { box.style.display = "none"; return; }
    box.style.display = "";
    var last = -1;
    S.rows.forEach(function (row, i) { if (S.done(row, i)) last = i; });
    var head = el("h3", null, last >= 0 ? T("Running totals after {what}", { what: S.name(S.rows[last], last) })
                                        : T("Running totals") + " · " + T("before the first result"));
    box.appendChild(head);
    var wrap = el("div", "totals-wrap");
    var tbl = el("table", "grid totals-table");
    tbl.id = "totals-table";
    var tr = el("tr");
    [T("Seat"), T("Score"), T("Total")].forEach(function (h, k) { tr.appendChild(el("th", k ? "num" : null, h)); });
    var thead = el("thead"); thead.appendChild(tr); tbl.appendChild(thead);
    var tbody = el("tbody");
    for (var s = 0; s < S.n; s++) {
      var r = el("tr");
      r.setAttribute("data-seat", s);
      var sw = el("span", "swatch"); sw.style.background = COLORS[s % COLORS.length];
      var c0 = el("td"); c0.appendChild(sw); c0.appendChild(document.createTextNode(" " + S.who(s))); r.appendChild(c0);
      var row = last >= 0 ? S.rows[last] : null;
      r.appendChild(el("td", "num score", row && row.scores ? signed(row.scores[s]) : "—"));
      r.appendChild(el("td", "num total", row ? signed(row.totals[s]) : "0"));
      tbody.appendChild(r);
    }
    tbl.appendChild(tbody);
    wrap.appendChild(tbl);
    wrap.appendChild(totalsChart(S, last));
    box.appendChild(wrap);
  }

  /* Line chart of each seat's running total over the deals / games; a click jumps there. */
  function totalsChart(S, last) {
    var W = 640, H = 170, L = 44, Rm = 10, Tp = 10, B = 24;
    var n = S.rows.length;
    var lo = 0, hi = 0;
    S.rows.forEach(function (row) { row.totals.forEach(function (v) { lo = Math.min(lo, v); hi = Math.max(hi, v); }); });
    if (hi === lo) hi = lo + 1;
    var x = function (i) { return L + (n <= 1 ? 0 : (W - L - Rm) * i / (n - 1)); };
    var y = function (v) { return Tp + (H - Tp - B) * (hi - v) / (hi - lo); };
    var c = svg("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, "class": "chart totals-chart", role: "img" });
    c.id = "totals-chart";
    c.setAttribute("aria-label", T("Running totals"));
    c.appendChild(svg("line", { x1: L, x2: W - Rm, y1: y(0), y2: y(0), "class": "zero" }));
    [lo, 0, hi].forEach(function (v) {
      var t = svg("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end", "class": "ticklabel" });
      t.textContent = String(Math.round(v));
      c.appendChild(t);
    });
    var t0 = svg("text", { x: L, y: H - 6, "class": "ticklabel" }); t0.textContent = S.name(S.rows[0], 0); c.appendChild(t0);
    if (n > 1) {
      var t1 = svg("text", { x: W - Rm, y: H - 6, "text-anchor": "end", "class": "ticklabel" });
      t1.textContent = S.name(S.rows[n - 1], n - 1); c.appendChild(t1);
    }
    for (var s = 0; s < S.n; s++) {
      var pts = S.rows.map(function (row, i) { return x(i).toFixed(1) + "," + y(row.totals[s]).toFixed(1); }).join(" ");
      c.appendChild(svg("polyline", { points: pts, fill: "none", stroke: COLORS[s % COLORS.length], "stroke-width": 2, "data-seat": s }));
    }
    if (last >= 0) c.appendChild(svg("line", { x1: x(last), x2: x(last), y1: Tp, y2: H - B, "class": "marker" }));
    c.addEventListener("click", function (ev) {
      var rect = c.getBoundingClientRect();
      var px = (ev.clientX - rect.left) * W / rect.width;
      var i = n <= 1 ? 0 : Math.round((px - L) / ((W - L - Rm) / (n - 1)));
      i = Math.max(0, Math.min(n - 1, i));
      S.jump(S.rows[i], i);
    });
    return c;
  }

  function syncUnitPick(f) {
    var up = document.getElementById("unit-pick");
    if (!up) return;
    var u = String(f.unit);
    for (var i = 0; i < up.options.length; i++) if (up.options[i].value === u) { up.value = u; return; }
  }

  function fillUnitPick() {
    var up = document.getElementById("unit-pick");
    if (!up) return;
    up.textContent = "";
    var units = game().units || [];
    units.forEach(function (u) {
      var o = el("option", null, unitName(u) + (u.scores ? " (" + scoresText(u.scores, label) + ")" : ""));
      o.value = String(u.unit);
      up.appendChild(o);
    });
    document.getElementById("unit-pick-wrap").style.display = units.length > 1 ? "" : "none";
  }

  function render() {
    var fr = frames();
    var f = fr[state.step];
    var prev = state.step > 0 ? fr[state.step - 1] : null;
    root.setAttribute("data-game", state.game);
    root.setAttribute("data-step", state.step);
    renderSeats(f, prev);
    renderState(f);
    renderField(f);
    renderAction(f);
    renderEvents(f);
    var slider = document.getElementById("slider");
    slider.max = fr.length - 1;
    slider.value = state.step;
    document.getElementById("step-label").textContent = T("step {step} / {last}", { step: state.step, last: fr.length - 1 });
    renderTotals();
    syncUnitPick(f);
    document.getElementById("prev").disabled = state.step === 0;
    document.getElementById("first").disabled = state.step === 0;
    document.getElementById("next").disabled = state.step === fr.length - 1;
    document.getElementById("last").disabled = state.step === fr.length - 1;
    if (!R.live && window.history && history.replaceState) {
      history.replaceState(null, "", "#g" + state.game + "s" + state.step);
    }
  }

  function go(step) {
    var n = frames().length;
    state.step = Math.max(0, Math.min(n - 1, step));
    render();
  }

  function setGame(gi) {
    state.game = Math.max(0, Math.min(R.games.length - 1, gi));
    document.getElementById("game-pick").value = String(state.game);
    state.step = 0;
    fillUnitPick();
    render();
  }

  /* -- live mode (header comment) ------------------------------------------------------------ */
  function bySeat(scores, n) {
    var out = [];
    for (var s = 0; s < n; s++) out.push(scores ? (scores[s] !== undefined ? scores[s] : (scores[String(s)] || 0)) : 0);
    return out;
  }

  function liveGame(m) {
    var n = m.hand_sizes.length;
    while (R.games.length <= m.game) {
      var gi = R.games.length;
      R.games.push({ index: gi, seats: null, frames: [], units: [], banks: null, unit: null });
    }
    var g = R.games[m.game];
    if (!g.seats) {
      if (m.seats) g.seats = m.seats.slice();
      else { g.seats = []; for (var s = 0; s < n; s++) g.seats.push(s); }
      fillGamePick();
    }
    return g;
  }

  /* The units (deals, JDF games) and the match's game totals, from the events of a live frame. */
  function liveTotals(g, f, m) {
    var n = f.hand_sizes.length;
    f.events.forEach(function (e) {
      if (e.type === "deal" || (e.type === "game" && R.scoring_unit === "game")) {
        var u = e.type === "deal" ? e.deal : e.game;
        g.units.push({ unit: u, first_step: g.frames.length, end_step: null, set: e.set === undefined ? null : e.set,
                       game_in_set: e.game_in_set === undefined ? null : e.game_in_set, void: false, scores: null, totals: null });
      } else if ((e.type === "deal_end" || e.type === "game_end") && e.totals && e.scores && g.units.length) {
        var last = g.units[g.units.length - 1];
        last.scores = bySeat(e.scores, n); last.totals = bySeat(e.totals, n); last.end_step = g.frames.length;
      } else if (e.type === "void_deal" && g.units.length) {
        g.units[g.units.length - 1].void = true;
      }
      if (e.type === "game_end" && R.many_games && e.scores) {
        var scores = [], prev = R.game_totals.length ? R.game_totals[R.game_totals.length - 1].totals : null;
        for (var p = 0; p < R.players.length; p++) scores.push(0);
        g.seats.forEach(function (player, seat) { scores[player] = Number(e.scores[String(seat)] || 0); });
        /* the publisher's match totals: right even for a viewer who joined after game 1 */
        R.game_totals[g.index] = { game: g.index, scores: scores,
          totals: m && m.match_totals ? m.match_totals.slice()
                                      : scores.map(function (v, p) { return v + (prev ? prev[p] : 0); }) };
      }
    });
  }

  function liveFrame(m, g) {
    var n = m.hand_sizes.length;
    var initial = (R.time_rules && R.time_rules.initial_ms) || 60000;
    if (!g.banks) { g.banks = []; for (var s = 0; s < n; s++) g.banks.push(initial); g.unit = m.unit; }
    var before = g.banks[m.seat];
    if (m.seat !== null && m.seat !== undefined && m.bank_after_ms !== null && m.bank_after_ms !== undefined) g.banks[m.seat] = m.bank_after_ms;
    if (m.unit !== g.unit) {  // a new deal (TM) / game (JDF): banks reset (TIME-1)
      g.unit = m.unit;
      for (var k = 0; k < n; k++) g.banks[k] = initial;
    }
    var evs = (m.events || []).filter(function (e) { return e.type !== "hand"; });
    return {
      live: true, index: g.frames.length + 1, seat: m.seat, kind: m.kind, to_act: m.to_act, decision: m.decision,
      over: m.over, still_in: m.still_in, hand_sizes: m.hand_sizes, hands: m.hands || null, field: m.field || [],
      own_seat: m.own_seat === undefined ? null : m.own_seat,
      revolution: m.revolution, jback: m.jback, suit_lock: m.suit_lock, number_lock: m.number_lock,
      direction: m.direction, unit: m.unit, events: evs, action: null,
      exchange: m.elapsed_ms === null || m.elapsed_ms === undefined ? null
        : { elapsed_ms: m.elapsed_ms, bank_before_ms: before, bank_after_ms: m.bank_after_ms },
      fault: m.fault ? { kind: m.fault, detail: null } : null,
      banks_ms: g.banks.slice()
    };
  }

  function startLive() {
    var L = R.live;
    var card = document.getElementById("live-card");
    var liveState = document.getElementById("live-state");
    var steps = 0;
    function setState(name, text) { liveState.setAttribute("data-state", name); liveState.textContent = text; }
    function push(m) {
      // follow the newest frame unless the viewer stepped back (or picked another game)
      var following = !R.games.length || (state.game === R.games.length - 1 && state.step >= frames().length - 1);
      var g = liveGame(m);
      var f = liveFrame(m, g);
      var units = g.units.length;
      liveTotals(g, f, m);
      g.frames.push(f);
      if (g.units.length !== units && state.game === m.game) fillUnitPick();
      steps += 1;
      card.setAttribute("data-steps", steps);
      setState("live", T("game {g} · decision {n}", { g: m.game + 1, n: (m.step || 0) + 1 }));
      if (following) {
        if (state.game !== m.game) { state.game = m.game; pick.value = String(state.game); fillUnitPick(); }
        state.step = g.frames.length - 1;
        render();
      } else {
        document.getElementById("slider").max = frames().length - 1;
      }
    }
    function ended() {
      setState("ended", T("Match over"));
      var after = document.getElementById("live-after");
      after.textContent = "";
      if (L.after === "replay") {
        var a = el("a", "button", T("Open the replay"));
        a.id = "live-replay-link";
        a.href = L.page;
        after.appendChild(a);
      } else {
        after.appendChild(el("span", "muted", T("The replay is shown when the tournament is finished.") + " "));
        var r = el("a", null, T("Match page"));
        r.id = "live-replay-link";
        r.href = L.page;
        after.appendChild(r);
      }
      after.style.display = "";
    }
    if (!window.EventSource) { setState("error", T("live view unavailable")); return; }
    var source = new EventSource(L.url);
    source.onopen = function () { if (liveState.getAttribute("data-state") === "connecting" || liveState.getAttribute("data-state") === "reconnecting") setState("waiting", T("waiting for the next decision")); };
    source.onmessage = function (ev) {
      var m;
      try { m = JSON.parse(ev.data); } catch (e) { return; }
      if (m.type === "end") { source.close(); ended(); return; }
      if (m.type === "step") push(m);
    };
    source.addEventListener("error", function () {
      if (liveState.getAttribute("data-state") === "ended") return;
      if (source.readyState === EventSource.CLOSED) setState("error", T("live view unavailable"));
      else setState("reconnecting", T("reconnecting…"));  // EventSource reconnects by itself
    });
  }

  var pick = document.getElementById("game-pick");
  function fillGamePick() {
    pick.textContent = "";
    R.games.forEach(function (g, i) {
      if (!g.seats) return;  /* a live view opened later: a game played before it, never seen */
      var gt = (R.game_totals || [])[i];
      var o = el("option", null, "#" + (i + 1) + " (" + g.seats.map(function (p) {
        var name = R.players[p] ? R.players[p].label : String(p);
        return gt && R.games.length > 1 ? name + " " + signed(gt.scores[p]) : name;
      }).join(" · ") + ")");
      o.value = String(i);
      pick.appendChild(o);
    });
    pick.value = String(state.game);
    document.getElementById("game-pick-wrap").style.display = R.games.length < 2 ? "none" : "";
  }
  fillGamePick();
  pick.addEventListener("change", function () { setGame(parseInt(pick.value, 10)); });
  var unitPick = document.getElementById("unit-pick");
  if (unitPick) unitPick.addEventListener("change", function () {
    var u = parseInt(unitPick.value, 10);
    (game().units || []).forEach(function (x) { if (x.unit === u) go(x.first_step); });
  });
  document.getElementById("first").addEventListener("click", function () { go(0); });
  document.getElementById("prev").addEventListener("click", function () { go(state.step - 1); });
  document.getElementById("next").addEventListener("click", function () { go(state.step + 1); });
  document.getElementById("last").addEventListener("click", function () { go(frames().length - 1); });
  document.getElementById("slider").addEventListener("input", function (e) { go(parseInt(e.target.value, 10)); });
  document.addEventListener("keydown", function (e) {
    var tag = (e.target && e.target.tagName) || "";
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") return;
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.key === "ArrowRight") { go(state.step + 1); e.preventDefault(); }
    else if (e.key === "ArrowLeft") { go(state.step - 1); e.preventDefault(); }
    else if (e.key === "Home") { go(0); e.preventDefault(); }
    else if (e.key === "End") { go(frames().length - 1); e.preventDefault(); }
  });

  if (R.live) { startLive(); return; }
  if (R.perspective !== undefined && R.perspective !== null) {
    var box = el("label", "every-hand");
    var tick = el("input");
    tick.type = "checkbox";
    tick.id = "every-hand";
    box.appendChild(tick);
    box.appendChild(document.createTextNode(" " + T("Show every hand")));
    document.querySelector(".controls").appendChild(box);
    root.setAttribute("data-perspective", R.perspective);
    tick.addEventListener("change", function () { everyHand = tick.checked; render(); });
  }
  var m = /^#g(\d+)s(\d+)$/.exec(window.location.hash || "");
  if (m && R.games.length) {
    state.game = Math.min(R.games.length - 1, parseInt(m[1], 10));
    pick.value = String(state.game);
    state.step = Math.min(frames().length - 1, parseInt(m[2], 10));
  }
  if (R.games.length) { fillUnitPick(); render(); }
})();
