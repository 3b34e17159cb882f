/* The tournament form: show only the chosen rule set's options (without this script every
   rule set's options are shown, grouped, and only the chosen one's are used). */
(function () {
  "use strict";
  var select = document.getElementById("t-ruleset");
  if (!select) return;
  document.querySelectorAll(".js-hide").forEach(function (n) { n.hidden = true; });
  function show() {
    var rs = select.value;
    document.querySelectorAll("fieldset.ruleset-options").forEach(function (f) {
      f.hidden = f.getAttribute("data-ruleset") !== rs;
    });
    document.querySelectorAll("#participants label[data-rulesets]").forEach(function (l) {
      var plays = l.getAttribute("data-rulesets").split(" ").indexOf(rs) >= 0;
      l.classList.toggle("unfit", !plays);
    });
  }
  select.addEventListener("change", show);
  show();
})();
