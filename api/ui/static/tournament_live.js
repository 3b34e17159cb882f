/* Live tournament page (#live-tournament): an EventSource on /ui/tournaments/<id>/live (a
 * message when a match is claimed, finishes, fails or is sent again: api/ui/live.py); after
 * each burst of messages (debounced) the page re-reads /ui/tournaments/<id>/live.html and
 * swaps in its status, progress, the matches playing now, the standings, their chart and
 * the match table, all at once: they come from one read of the matches (arena.board), so
 * they never disagree with each other. While its start waits for offline entrants the same
 * stream carries each roll call (#waiting-wrap: who is still offline; #waiting-left counts down
 * to the deadline every second). When the phase changes (it starts, finishes, is cancelled)
 * the whole page is loaded again once. When the
 * tournament is no longer running the whole page is loaded again once (its actions, chart,
 * match table with replay links and seed change too; the reloaded page has no live part). */
(function () {
  "use strict";
  var box = document.getElementById("live-tournament");
  if (!box || !window.EventSource || !window.fetch || !window.DOMParser) return;
  var I18N = {};
  try { I18N = JSON.parse(document.getElementById("i18n").textContent || "{}"); } catch (e) { I18N = {}; }
  function T(msg) { return I18N[msg] || msg; }
  var tag = document.getElementById("live-tournament-state");
  var DEBOUNCE_MS = 400, RELOAD_MS = 600;
  var timer = null, busy = false, again = false, refreshes = 0, events = 0, source = null;

  function setState(name, text) {
    box.setAttribute("data-state", name);
    if (text) tag.textContent = text;
  }

  function swap(doc, id, whole) {
    var fresh = doc.getElementById(id), old = document.getElementById(id);
    if (!fresh || !old) return;
    if (whole) old.replaceWith(fresh); else old.innerHTML = fresh.innerHTML;
  }

  function refresh() {
    timer = null;
    if (busy) { again = true; return; }
    busy = true;
    fetch(box.getAttribute("data-state-url"), { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        swap(doc, "status", true);
        swap(doc, "progress", false);
        swap(doc, "settling", false);
        swap(doc, "playing", false);
        swap(doc, "standings", true);
        swap(doc, "chart-wrap", false);
        swap(doc, "matches-wrap", false);
        swap(doc, "waiting-wrap", false);
        countdown();
        refreshes += 1;
        box.setAttribute("data-refreshes", refreshes);
        var frag = doc.getElementById("live-fragment");
        var now = frag ? frag.getAttribute("data-phase") : box.getAttribute("data-phase");
        if (now !== box.getAttribute("data-phase")) {
          if (source) source.close();
          setState("ended", T("no longer running"));
          setTimeout(function () { window.location.reload(); }, RELOAD_MS);
        }
      })
      .catch(function () { /* the next event tries again */ })
      .then(function () {
        busy = false;
        if (again) { again = false; schedule(); }
      });
  }

  function countdown() {
    var left = document.getElementById("waiting-left");
    if (!left) return;
    var ms = Date.parse(left.getAttribute("data-until")) - Date.now();
    var s = Math.max(0, Math.round(ms / 1000));
    left.textContent = s <= 0 ? T("any moment now") : (s >= 60
      ? T("in {m} min {s} s").replace("{m}", Math.floor(s / 60)).replace("{s}", s % 60)
      : T("in {s} s").replace("{s}", s));
  }
  countdown();
  setInterval(countdown, 1000);

  function schedule() {
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(refresh, DEBOUNCE_MS);
  }

  source = new EventSource(box.getAttribute("data-live-url"));
  source.onopen = function () {
    if (box.getAttribute("data-state") !== "ended") setState("live", T("live"));
    schedule();  // (re)connected: what happened before the subscription is read once
  };
  source.onmessage = function (ev) {
    var m;
    try { m = JSON.parse(ev.data); } catch (e) { return; }
    events += 1;
    box.setAttribute("data-events", events);
    if (m.type === "end") {
      source.close();
      refresh();
      return;
    }
    schedule();
  };
  source.addEventListener("error", function () {
    if (source.readyState === EventSource.CLOSED && box.getAttribute("data-state") !== "ended") {
      setState("error", T("live view unavailable"));
    } else if (source.readyState === EventSource.CONNECTING) {
      setState("connecting", T("reconnecting…"));
    }
  });
})();
