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

  // A stream ends after a while even when the answer is not in (the server bounds it), and a busy
  // server refuses one (429): either way the article is looked at again a moment later.
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
          setTimeout(function () { scan(document); }, 1000);  // still pending: watch again
        });
    };
    fetch(url).then(function (response) {
      var waiting = article.querySelector(".stream-wait");
      if (response.status === 429) {
        var wait = 1000 * (parseFloat(response.headers.get("Retry-After")) || 2);
        // The server's reason, shown in the answer's place: a busy server is not a hung answer.
        response.text().then(function (reason) { if (waiting) waiting.textContent = reason; });
        setTimeout(function () { article.dataset.streamUrl = url; stream(article); }, wait);
        return;
      }
      if (waiting) waiting.textContent = "";
      target.textContent = "";  // each stream sends the whole text so far
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

  // The question box keeps whatever was typed while an answer was on its way: only the text sent leaves it.
  // htmx fires htmx:beforeSwap on the target (#messages, beside the form), so the form is found through the
  // element that sent the request, not the event's target.
  function askForm(event) {
    var config = event.detail && event.detail.requestConfig;
    var elt = (config && config.elt) || event.target;
    return elt && elt.closest ? elt.closest("form.ask") : null;
  }

  // Refusals that carry a page to show: a question refused (429: too many, or an answer pending) shows its
  // reason in the list; options that need a fix (422) come back as the form with its errors.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var status = event.detail.xhr.status;
    if (status === 429 && askForm(event)) event.detail.shouldSwap = true;
    if (status === 422 && event.target.closest && event.target.closest("#options")) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  document.addEventListener("htmx:beforeRequest", function (event) {
    var form = askForm(event);
    if (form) form.dataset.sent = form.elements.question.value;
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    var form = askForm(event);
    if (!form || !event.detail.successful) return;
    var error = form.querySelector("#ask-error");
    if (error) error.replaceChildren();  // an earlier refusal no longer applies
    var box = form.elements.question;
    var sent = form.dataset.sent || "";
    delete form.dataset.sent;
    // Edited since (the sent text is no longer its start): the box is the user's, left as it is.
    if (box.value.indexOf(sent) === 0) box.value = box.value.slice(sent.length).replace(/^\s+/, "");
  });

  // A conversation opens at its latest exchange, and a new one comes into view when it arrives.
  function showLatest() {
    var questions = document.querySelectorAll("#messages article.msg-user");
    if (questions.length) questions[questions.length - 1].scrollIntoView({ block: "start" });
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (!window.location.hash) showLatest();
  });
  document.addEventListener("htmx:afterSwap", function (event) {
    if (event.target && event.target.id === "messages") showLatest();
  });

  function scan(root) {
    (root || document).querySelectorAll("article[data-stream-url]").forEach(stream);
  }

  document.addEventListener("DOMContentLoaded", function () { scan(document); });
  document.body && document.body.addEventListener("htmx:afterSwap", function () { scan(document); });
  document.addEventListener("htmx:afterSwap", function () { scan(document); });
})();
