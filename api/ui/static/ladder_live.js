/* A ladder page's moving parts (#ladder-live: the live table and the sets playing now): re-read
 * from /ui/ladders/<id>/live.html every data-poll-s seconds while the page is visible, and
 * swapped in (api/ui/ladders.py). A failed read leaves the last table and says so in the tag. */
(function () {
  "use strict";
  var box = document.getElementById("ladder-live");
  if (!box || !window.fetch || !window.DOMParser) return;
  var I18N = {};
  try { I18N = JSON.parse(document.getElementById("i18n").textContent || "{}"); } catch (e) { I18N = {}; }
  function T(msg) { return I18N[msg] || msg; }
  var every = Math.max(2, parseFloat(box.getAttribute("data-poll-s")) || 10) * 1000;
  var refreshes = 0, busy = false;

  function refresh() {
    if (busy || document.hidden) return;
    busy = true;
    fetch(box.getAttribute("data-live-url"), { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var table = doc.getElementById("live-table-card"), playing = doc.getElementById("playing-card");
        if (table) document.getElementById("live-table-card").replaceWith(table);
        if (playing) document.getElementById("playing-card").replaceWith(playing);
        refreshes += 1;
        box.setAttribute("data-refreshes", refreshes);
      })
      .catch(function () {
        var tag = document.getElementById("ladder-live-state");
        if (tag) tag.textContent = T("reconnecting…");
      })
      .then(function () { busy = false; });
  }
  setInterval(refresh, every);
  document.addEventListener("visibilitychange", refresh);
})();
