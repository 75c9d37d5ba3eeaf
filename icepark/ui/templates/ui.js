// icepark ui: copy buttons put their data-copy text on the clipboard (nothing else runs).
document.addEventListener("click", function (event) {
  var button = event.target.closest("button.copy");
  if (!button) { return; }
  var text = button.getAttribute("data-copy") || "";
  var done = function () { button.textContent = "copied"; };
  if (navigator.clipboard && navigator.clipboard.writeText) {
    navigator.clipboard.writeText(text).then(done, function () { button.textContent = "select and copy"; });
  } else {
    button.textContent = "select and copy";
  }
});
