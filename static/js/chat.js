// Chat page behaviour: the provenance toggle and streamed LLM answers. Everything works without it.
(function () {
  "use strict";

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button.view-sources");
    if (!button) return;
    var list = document.getElementById(button.getAttribute("aria-controls"));
    var open = button.getAttribute("aria-expanded") === "true";
    button.setAttribute("aria-expanded", open ? "false" : "true");
    button.textContent = open ? "View sources" : "Hide sources";
    if (list) list.hidden = open;
  });

  function stream(article) {
    var url = article.dataset.streamUrl;
    var finalUrl = article.dataset.finalUrl;
    delete article.dataset.streamUrl;
    var target = article.querySelector(".stream-text");
    var done = function () {
      fetch(finalUrl, { headers: { "HX-Request": "true" } })
        .then(function (r) { return r.text(); })
        .then(function (html) {
          article.outerHTML = html;
        });
    };
    fetch(url).then(function (response) {
      if (!response.body) return response.text().then(function (t) { target.textContent += t; done(); });
      var reader = response.body.getReader();
      var decoder = new TextDecoder();
      var pump = function () {
        return reader.read().then(function (chunk) {
          if (chunk.done) { done(); return; }
          target.textContent += decoder.decode(chunk.value, { stream: true });
          return pump();
        });
      };
      return pump();
    }).catch(done);
  }

  function scan(root) {
    (root || document).querySelectorAll("article[data-stream-url]").forEach(stream);
  }

  document.addEventListener("DOMContentLoaded", function () { scan(document); });
  document.body && document.body.addEventListener("htmx:afterSwap", function () { scan(document); });
  document.addEventListener("htmx:afterSwap", function () { scan(document); });
})();
