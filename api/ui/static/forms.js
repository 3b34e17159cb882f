/* Copy buttons of the /ui forms: <button class="copy" data-copy="<id of the element to copy>">.
   The register form: the URL field shows only while "the arena calls my bot" is chosen
   (input[name=transport]; the server refuses a URL for a bot that connects, and says so). */
(function () {
  "use strict";
  document.querySelectorAll("button.copy").forEach(function (b) {
    b.addEventListener("click", function () {
      var src = document.getElementById(b.getAttribute("data-copy"));
      if (!src) return;
      var text = src.textContent;
      var done = function () { b.setAttribute("data-copied", "1"); b.classList.add("copied"); };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, function () { select(src); });
      } else { select(src); try { document.execCommand("copy"); done(); } catch (e) { /* selected for Ctrl+C */ } }
    });
  });
  var urlField = document.getElementById("bot-url-field");
  var radios = document.querySelectorAll("input[name=transport]");
  function showUrl() {
    var chosen = document.querySelector("input[name=transport]:checked");
    var connects = chosen && chosen.value === "connect";
    urlField.hidden = connects;
    if (connects) document.getElementById("bot-url").value = "";
  }
  if (urlField && radios.length) {
    radios.forEach(function (r) { r.addEventListener("change", showUrl); });
    showUrl();
  }
  function select(node) {
    var r = document.createRange(); r.selectNodeContents(node);
    var s = window.getSelection(); s.removeAllRanges(); s.addRange(r);
  }
})();
