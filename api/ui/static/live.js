/* Live view of a running match (#live-card): an EventSource on /ui/matches/<id>/live (see
 * api/ui/live.py). Each message is the table after one decision (arena/core/live.py). */
(function () {
  "use strict";
  var card = document.getElementById("live-card");
  if (!card || !window.EventSource) return;
  var I18N = {};
  try { I18N = JSON.parse(document.getElementById("i18n").textContent || "{}"); } catch (e) { I18N = {}; }
  function T(msg, params) {
    var s = I18N[msg] || msg;
    if (params) s = s.replace(/\{(\w+)\}/g, function (m, k) { return params[k] !== undefined ? params[k] : m; });
    return s;
  }
  var labels = [];
  try { labels = JSON.parse(document.getElementById("live-labels").textContent || "[]"); } catch (e) { labels = []; }
  var SUITS = { S: "♠", H: "♥", D: "♦", C: "♣" };
  function cardText(c) { return c === "JK" ? T("Joker") : (c[0] === "T" ? "10" : c[0]) + SUITS[c[1]]; }
  function el(tag, cls, text) { var e = document.createElement(tag); if (cls) e.className = cls; if (text != null) e.textContent = text; return e; }
  var state = document.getElementById("live-state");
  var table = document.getElementById("live-table");
  var events = document.getElementById("live-events");
  var steps = 0;

  function setState(name, text) { state.setAttribute("data-state", name); state.textContent = text; }

  function render(m) {
    steps += 1;
    card.setAttribute("data-steps", steps);
    setState("live", T("game {g} · decision {n}", { g: m.game + 1, n: m.step + 1 }));
    table.textContent = "";
    for (var s = 0; s < m.hand_sizes.length; s++) {
      var row = el("div", "live-seat" + (m.to_act === s ? " to-act" : ""));
      row.setAttribute("data-seat", s);
      row.appendChild(el("strong", null, T("Seat {n}", { n: s })));
      row.appendChild(el("span", "count", " " + T(m.hand_sizes[s] === 1 ? "{n} card" : "{n} cards", { n: m.hand_sizes[s] })));
      if (m.hands) row.appendChild(el("span", "live-hand", " " + m.hands[s].map(cardText).join(" ")));
      table.appendChild(row);
    }
    var field = el("div", "live-field");
    field.id = "live-field";
    field.appendChild(el("strong", null, T("Field") + ": "));
    (m.field || []).forEach(function (p) {
      var txt = (p.cards || []).map(cardText).join(" ");
      if (typeof p.face_down === "number") txt += (txt ? " " : "") + T("({n} face-down)", { n: p.face_down });
      field.appendChild(el("span", "live-play", T("seat {n}", { n: p.seat }) + ": " + txt + "  "));
    });
    if (!(m.field || []).length) field.appendChild(el("span", "muted", T("empty")));
    table.appendChild(field);
    (m.events || []).forEach(function (e) {
      if (e.type === "hand") return;
      var line = e.type + (e.seat !== undefined ? " · " + T("seat {n}", { n: e.seat }) : "")
        + (e.cards && e.cards.length ? " · " + e.cards.map(cardText).join(" ") : "")
        + (typeof e.face_down === "number" ? " · " + T("({n} face-down)", { n: e.face_down }) : "");
      var d = el("div", "ev ev-" + e.type, line);
      events.insertBefore(d, events.firstChild);
    });
    while (events.childNodes.length > 30) events.removeChild(events.lastChild);
  }

  var source = new EventSource(card.getAttribute("data-live-url"));
  source.onmessage = function (ev) {
    var m;
    try { m = JSON.parse(ev.data); } catch (e) { return; }
    if (m.type === "end") {
      source.close();
      setState("ended", T("Match over") + " · " + T("reload for the replay"));
      return;
    }
    if (m.type === "step") render(m);
  };
  source.addEventListener("error", function () {
    if (source.readyState === EventSource.CLOSED) setState("error", T("live view unavailable"));
  });
})();
