// Upload page: tells the server what only the browser knows about each chosen file, its own
// modification time and its path inside a chosen folder. Without it the upload still works:
// files are then dated at upload time and a folder's files arrive by bare name.
(function () {
  "use strict";

  var form = document.querySelector("form[data-file-info]");
  if (!form) return;
  form.addEventListener("submit", function () {
    var info = {};
    form.querySelectorAll("input[type=file]").forEach(function (input) {
      info[input.name] = Array.prototype.map.call(input.files, function (file) {
        return { name: file.webkitRelativePath || file.name, lastModified: file.lastModified };
      });
    });
    form.elements.namedItem(form.dataset.fileInfo).value = JSON.stringify(info);
  });
})();
