/* Daifugo Arena replay viewer: steps through the frames embedded in #replay-data
 * (built by api/ui/replay.py). Plain JavaScript, no build step.
 * Keys: ArrowLeft / ArrowRight step, Home / End jump. The address keeps #g<game>s<step>. */
(function () {
  "use strict";
  var dataEl = document.getElementById("replay-data");
  if (!dataEl) return;
  var R = JSON.parse(dataEl.textContent);
  var root = document.getElementById("replay");
  var SUITS = { S: "♠", H: "♥", D: "♦", C: "♣" };
  var RANKS = { T: "10" };
  var state = { game: 0, step: 0 };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  function cardText(code) {
    if (code === "JK") return "Joker";
    return (RANKS[code[0]] || code[0]) + SUITS[code[1]];
  }

  function cardsText(cards) {
    return (cards || []).map(cardText).join(" ");
  }

  /* One card: a face (rank over suit, red for hearts/diamonds) or a back. */
  function card(code, opts) {
    opts = opts || {};
    var c = el("span", "c");
    c.setAttribute("data-card", code);
    if (opts.back) {
      c.className += " back";
      c.setAttribute("data-down", "1");
      c.title = "face-down: " + cardText(code);
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
    if (opts.revealed) { c.className += " revealed"; c.title = "revealed by a doubt"; }
    if (opts.down) { c.className += " wasdown"; c.title = "played face-down (revealed)"; }
    c.title = c.title || cardText(code);
    return c;
  }

  function game() { return R.games[state.game]; }
  function frames() { return game().frames; }
  function label(seat) {
    var p = R.players[game().seats[seat]];
    return p ? p.label : "seat " + seat;
  }
  function seconds(ms) { return (ms / 1000).toFixed(2) + " s"; }

  function describeAction(f) {
    if (f.forfeit) return "forfeits (" + f.forfeit + ")";
    var a = f.action;
    if (!a) return "";
    var t = a.type;
    if (t === "play") {
      var s = "plays " + cardsText(a.cards);
      if (a.face_down && a.face_down.length) s += " (" + a.face_down.length + " face-down: " + cardsText(a.face_down) + ")";
      if (a.jokers && a.jokers.length) s += " (joker as " + a.jokers.join(", ") + ")";
      return s;
    }
    if (t === "pass") return "passes";
    if (t === "through") return "lets it through";
    if (t === "doubt") return "doubts!";
    if (t === "penalty") return "gives " + cardsText(a.cards) + " as penalty";
    if (t === "give") return "gives " + cardsText(a.cards);
    if (t === "exchange") return a.accept ? "accepts the exchange" : "declines the exchange";
    if (t === "rate") return "sets the rate to " + a.rate;
    var rest = a.cards ? " " + cardsText(a.cards) : "";
    return t + rest;
  }

  function describeEvent(e) {
    var who = function (s) { return (s === undefined || s === null) ? "" : label(s); };
    switch (e.type) {
      case "play": return who(e.seat) + " plays " + cardsText(e.cards) + (e.face_down ? " (" + (e.face_down.length || e.face_down) + " face-down)" : "");
      case "pass": return who(e.seat) + " passes";
      case "through": return who(e.seat) + " lets it through";
      case "doubt": return who(e.seat) + " doubts";
      case "reveal": return "Reveal: the play was " + (e.honest ? "honest" : "a bluff");
      case "penalty": return who(e.seat) + " gives " + cardsText(e.cards) + " to " + who(e.to);
      case "clear": return "Field cleared";
      case "eight_cut": return "8-cut by " + who(e.seat);
      case "revolution": return e.on ? "Revolution!" : "Revolution reversed";
      case "jback": return e.on ? "J-back" : "J-back ends";
      case "lock": return "Suit lock " + (e.suits || []).map(function (s) { return SUITS[s]; }).join("");
      case "number_lock": return "Number lock (stairs)";
      case "direction": return "Direction now " + (e.direction === 1 ? "clockwise" : "counter-clockwise");
      case "finish": return who(e.seat) + " is out of cards" + (e.foul ? " (foul finish)" : "");
      case "start": return who(e.leader) + " leads";
      case "give": return who(e.seat) + " gives " + (e.cards ? cardsText(e.cards) : e.count + " card(s)") + " to " + who(e.to);
      case "exchange": return e.cards ? (who(e.seat) + " gives " + cardsText(e.cards) + " to " + who(e.to))
                                      : (who(e.seat) + (e.accept ? " accepts" : " declines") + " the exchange");
      case "discard": return who(e.seat) + " discards " + cardsText(e.cards);
      case "five_skip": return "5-skip";
      case "forfeit": return who(e.seat) + " forfeits (" + e.reason + ")";
      case "game": return "Game " + ((e.game_in_set || 0) + 1) + " of set " + ((e.set || 0) + 1);
      case "deal": return "Deal " + ((e.deal || 0) + 1);
      case "rate": return who(e.seat) + " sets the rate to " + e.rate;
      case "miyako_ochi": return "Miyako-ochi: " + who(e.seat) + " falls";
      case "game_end": return "Game over" + (e.winner !== undefined && e.winner !== null ? ": " + who(e.winner) + " wins" : "") + (e.scores ? " · scores " + JSON.stringify(e.scores) : "");
      case "deal_end": return "Deal over: " + who(e.winner) + " wins";
      case "set_end": return "Set " + ((e.set || 0) + 1) + " over";
      case "match_end": return "Match over";
      case "void_deal": return "Deal void";
      default:
        var parts = [];
        for (var k in e) if (k !== "type") parts.push(k + "=" + JSON.stringify(e[k]));
        return e.type + (parts.length ? " " + parts.join(" ") : "");
    }
  }

  function renderSeats(f, prev) {
    var list = document.getElementById("seat-list");
    list.textContent = "";
    var cap = (R.time_rules && R.time_rules.cap_ms) || 60000;
    for (var s = 0; s < f.hands.length; s++) {
      var row = el("div", "seat");
      row.id = "seat-" + s;
      row.setAttribute("data-seat", s);
      if (f.to_act === s && !f.over) row.className += " to-act";
      if (f.seat === s) row.className += " acted";
      if (f.seat === s && f.fault) row.className += " fault";
      if (!f.still_in[s]) row.className += " out";
      var info = el("div", "seat-info");
      var name = el("div", "seat-name");
      name.appendChild(el("span", "seat-no", "Seat " + s));
      name.appendChild(el("span", "bot", label(s)));
      info.appendChild(name);
      var meta = el("div", "seat-meta");
      meta.appendChild(el("span", "count", f.hand_sizes[s] + " card" + (f.hand_sizes[s] === 1 ? "" : "s")));
      var bank = f.banks_ms[s];
      var b = el("span", "bank");
      b.setAttribute("data-bank-ms", bank);
      var bar = el("span", "bankbar");
      var fill = el("span", bank < 0.2 * cap ? "low" : "");
      fill.style.width = Math.max(0, Math.min(100, 100 * bank / cap)) + "%";
      bar.appendChild(fill);
      b.appendChild(bar);
      b.appendChild(el("span", "banktext", "bank " + seconds(bank)));
      meta.appendChild(b);
      if (!f.still_in[s]) meta.appendChild(el("span", "tag", "out"));
      else if (f.to_act === s && !f.over) meta.appendChild(el("span", "tag act", "to " + (f.decision || "act")));
      info.appendChild(meta);
      row.appendChild(info);
      var hand = el("div", "hand");
      var before = prev ? prev.hands[s] : null;
      f.hands[s].forEach(function (code) {
        var c = card(code);
        if (before && before.indexOf(code) < 0) c.className += " new";
        hand.appendChild(c);
      });
      if (!f.hands[s].length) hand.appendChild(el("span", "muted", "no cards"));
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
    flag(f.revolution, "Revolution", "rev", "card strength reversed").id = "ind-revolution";
    flag(f.jback, "J-back", "jb", "strength reversed until the trick ends").id = "ind-jback";
    var lock = f.suit_lock && f.suit_lock.length;
    var l = flag(lock, "Lock " + (lock ? f.suit_lock.map(function (x) { return SUITS[x]; }).join("") : ""), "lock", "suit lock");
    l.id = "ind-lock";
    if (lock && (f.suit_lock.indexOf("H") >= 0 || f.suit_lock.indexOf("D") >= 0)) l.className += " redsuit";
    if (f.number_lock) flag(true, "Number lock", "lock").id = "ind-nlock";
    flag(true, f.direction === 1 ? "↻ clockwise" : "↺ counter-clockwise", "dir").id = "ind-direction";
    var unitName = R.ruleset === "trump_millionaire" ? "Deal " : (R.ruleset === "jdf" ? "Game " : null);
    if (unitName) flag(true, unitName + (f.unit + 1), "unit").id = "ind-unit";
    if (f.over) flag(true, "Game over", "over");
  }

  function renderField(f) {
    var field = document.getElementById("field");
    field.textContent = "";
    if (!f.field.length) { field.appendChild(el("span", "muted", "empty")); return; }
    f.field.forEach(function (p, i) {
      var play = el("div", "play" + (i === f.field.length - 1 ? " top" : ""));
      play.setAttribute("data-seat", p.seat);
      play.appendChild(el("span", "who", label(p.seat)));
      var cards = el("span", "cards");
      var down = (p.face_down || []).slice();
      var jokerAs = (p.jokers || []).slice();
      p.cards.forEach(function (code) {
        var k = down.indexOf(code);
        var isDown = k >= 0;
        if (isDown) down.splice(k, 1);
        var as = code === "JK" ? jokerAs.shift() : undefined;
        cards.appendChild(card(code, { back: isDown && !p.revealed, revealed: isDown && p.revealed, as: as }));
      });
      play.appendChild(cards);
      if (p.revealed) play.appendChild(el("span", "tag reveal", "revealed"));
      field.appendChild(play);
    });
  }

  function renderAction(f) {
    var box = document.getElementById("action");
    box.textContent = "";
    box.className = "action" + (f.fault ? " fault" : "");
    if (f.index === 0) {
      box.appendChild(el("span", "muted", "Start of game " + (state.game + 1) + ": " + label(f.to_act) + " to " + (f.decision || "act")));
      return;
    }
    box.appendChild(el("span", "who", label(f.seat)));
    box.appendChild(el("span", "what", " " + describeAction(f)));
    var ex = f.exchange;
    if (ex) {
      var t = el("span", "took", ex.elapsed_ms + " ms");
      t.title = "bank " + seconds(ex.bank_before_ms) + " → " + seconds(ex.bank_after_ms);
      box.appendChild(t);
      box.appendChild(el("span", "muted small", " bank " + seconds(ex.bank_before_ms) + " → " + seconds(ex.bank_after_ms)));
    }
    if (f.fault) {
      var fl = el("div", "faultline", "FAULT " + f.fault.kind + (f.fault.detail ? ": " + f.fault.detail : ""));
      box.appendChild(fl);
    }
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
    document.getElementById("step-label").textContent = "step " + state.step + " / " + (fr.length - 1);
    document.getElementById("prev").disabled = state.step === 0;
    document.getElementById("first").disabled = state.step === 0;
    document.getElementById("next").disabled = state.step === fr.length - 1;
    document.getElementById("last").disabled = state.step === fr.length - 1;
    if (window.history && history.replaceState) {
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
    render();
  }

  var pick = document.getElementById("game-pick");
  R.games.forEach(function (g, i) {
    var o = el("option", null, "#" + (i + 1) + " (" + g.seats.map(function (p) { return R.players[p] ? R.players[p].label : p; }).join(" vs ") + ")");
    o.value = String(i);
    pick.appendChild(o);
  });
  if (R.games.length < 2) document.getElementById("game-pick-wrap").style.display = "none";
  pick.addEventListener("change", function () { setGame(parseInt(pick.value, 10)); });
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

  var m = /^#g(\d+)s(\d+)$/.exec(window.location.hash || "");
  if (m && R.games.length) {
    state.game = Math.min(R.games.length - 1, parseInt(m[1], 10));
    pick.value = String(state.game);
    state.step = Math.min(frames().length - 1, parseInt(m[2], 10));
  }
  if (R.games.length) render();
})();
