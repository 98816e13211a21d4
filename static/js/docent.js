// Behaviour every page shares, kept out of the HTML: the Content-Security-Policy runs no inline script or handler.
// Everything works without it (the workspace switcher shows its button then).
(function () {
  "use strict";

  // A <select data-submit-on-change> sends its form as soon as another option is chosen.
  document.addEventListener("change", function (event) {
    var select = event.target.closest ? event.target.closest("select[data-submit-on-change]") : null;
    if (select && select.form) select.form.requestSubmit();
  });
})();
