/* The table form (/ui/play): show the chosen rule set's options, as many opponents as it has
   seats (or a class table's seats), only the bots that play it, and the game count of Million
   Doubt. Without this script every field is shown and the API judges what is sent. */
(function () {
  "use strict";
  var form = document.getElementById("play-form");
  if (!form) return;
  document.querySelectorAll(".js-hide").forEach(function (n) { n.hidden = true; });
  var classBox = document.getElementById("p-class");

  function chosen() {
    var r = form.querySelector("input[name=ruleset]:checked");
    return r ? r : form.querySelector("input[name=ruleset]");
  }

  function fit(select, rs) {
    var first = null;
    Array.prototype.forEach.call(select.options, function (o) {
      var rss = o.getAttribute("data-rulesets");
      var ok = !rss || rss.split(" ").indexOf(rs) >= 0;
      o.disabled = !ok;
      o.hidden = !ok;
      if (ok && first === null) first = o;
    });
    if (select.selectedOptions.length && select.selectedOptions[0].disabled && first) select.value = first.value;
  }

  function show() {
    var r = chosen();
    var rs = r.value, seats = parseInt(r.getAttribute("data-seats"), 10);
    var isClass = classBox && classBox.checked;
    document.querySelectorAll("fieldset.ruleset-options").forEach(function (f) {
      f.hidden = f.getAttribute("data-ruleset") !== rs;
    });
    document.getElementById("opponents").hidden = !!isClass;
    document.querySelectorAll(".opponent-row").forEach(function (row) {
      row.hidden = parseInt(row.getAttribute("data-index"), 10) >= seats - 1;
      fit(row.querySelector("select"), rs);
    });
    document.querySelectorAll(".class-seat-row").forEach(function (row) {
      row.hidden = !isClass || parseInt(row.getAttribute("data-index"), 10) >= seats;
      fit(row.querySelector("select"), rs);
    });
    var games = document.getElementById("games-row");
    if (games) games.hidden = seats !== 2;
  }
  form.querySelectorAll("input[name=ruleset]").forEach(function (r) { r.addEventListener("change", show); });
  if (classBox) classBox.addEventListener("change", show);
  show();
})();
