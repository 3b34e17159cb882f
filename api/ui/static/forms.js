/* Copy buttons of the /ui forms: <button class="copy" data-copy="<id of the element to copy>">. */
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
  function select(node) {
    var r = document.createRange(); r.selectNodeContents(node);
    var s = window.getSelection(); s.removeAllRanges(); s.addRange(r);
  }
})();
