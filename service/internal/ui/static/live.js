// Live pages, without a reload: a page whose <main> has data-live="N"
// reads its own address again every N seconds and puts in each of its
// parts marked data-live-part (by id) as the server draws it now. What
// the user is doing is kept: the filters and the scroll (outside the
// parts), and the boxes ticked in a part (by their value). Without
// script, such a page reloads itself (a meta refresh in <noscript>).
(function () {
  "use strict";
  var main = document.querySelector("main[data-live]");
  if (!main) {
    return;
  }
  var every = Math.max(1, Number(main.getAttribute("data-live")) || 2) * 1000;
  function tick() {
    fetch(location.href, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) {
        // Sent to the login (the session ended): leave the page as it is.
        if (!r.ok || r.redirected) {
          return null;
        }
        return r.text();
      })
      .then(function (html) {
        if (html === null) {
          return;
        }
        var fresh = new DOMParser().parseFromString(html, "text/html");
        fresh.querySelectorAll("[data-live-part]").forEach(function (part) {
          var here = document.getElementById(part.id);
          if (!here) {
            return;
          }
          var ticked = {};
          here.querySelectorAll("input[type=checkbox]:checked").forEach(function (c) {
            ticked[c.value] = true;
          });
          var now = document.importNode(part, true);
          now.querySelectorAll("input[type=checkbox]").forEach(function (c) {
            if (ticked[c.value]) {
              c.checked = true;
            }
          });
          here.replaceWith(now);
        });
        main.setAttribute("data-live-at", String(Date.now()));
      })
      .catch(function () {})
      .then(function () {
        setTimeout(tick, every);
      });
  }
  setTimeout(tick, every);
})();
