// Open and close <dialog> elements by data attributes (keyboard: Enter opens, Esc closes).
document.addEventListener("click", (event) => {
  const opener = event.target.closest("[data-open-dialog]");
  if (opener) {
    document.getElementById(opener.dataset.openDialog)?.showModal();
  }
  const closer = event.target.closest("[data-close-dialog]");
  if (closer) {
    closer.closest("dialog")?.close();
  }
});

// Code editors: a line-number gutter beside each <textarea> in a .code-area.
function numberLines(area) {
  const editor = area.querySelector("textarea");
  const gutter = area.querySelector(".gutter");
  const lines = editor.value.split("\n").length;
  if (gutter.dataset.lines !== String(lines)) {
    gutter.textContent = Array.from({length: lines}, (_, i) => i + 1).join("\n");
    gutter.dataset.lines = String(lines);
  }
  gutter.scrollTop = editor.scrollTop;
}

function numberAllLines() {
  document.querySelectorAll(".code-area").forEach(numberLines);
}

document.addEventListener("DOMContentLoaded", numberAllLines);
document.addEventListener("input", (event) => {
  const area = event.target.closest?.(".code-area");
  if (area) numberLines(area);
});
document.addEventListener("scroll", (event) => {
  const area = event.target.closest?.(".code-area");
  if (area) numberLines(area);
}, true);

// "Show line N": select that line of the named editor and scroll it into view.
document.addEventListener("click", (event) => {
  const link = event.target.closest("[data-goto-line]");
  if (!link) return;
  const editor = document.getElementById(link.dataset.editor);
  if (!editor) return;
  const lines = editor.value.split("\n");
  const line = Math.min(Number(link.dataset.gotoLine), lines.length);
  const start = lines.slice(0, line - 1).reduce((sum, text) => sum + text.length + 1, 0);
  editor.focus();
  editor.setSelectionRange(start, start + lines[line - 1].length);
  const lineHeight = parseFloat(getComputedStyle(editor).lineHeight);
  editor.scrollTop = Math.max(0, (line - 3) * lineHeight);
  numberLines(editor.closest(".code-area"));
});

// Character counters: a <textarea data-counter="ID"> keeps the element ID's count current, from
// what was typed before this deferred script ran too.
function updateCounter(field) {
  const counter = field.dataset?.counter && document.getElementById(field.dataset.counter);
  if (!counter) return;
  counter.textContent = counter.textContent.replace(/^\d+/, String(field.value.length));
}
document.addEventListener("input", (event) => updateCounter(event.target));
document.querySelectorAll("textarea[data-counter]").forEach(updateCounter);

// --- Automation console (templates/rules) --------------------------------------------------------
// A section marked data-shown-by="NAME:VALUE VALUE…" is shown only while its form's control NAME
// (a select or a radio group) has one of the values: the slot grid for weekly rules, keyword or
// semantic inputs for the chosen filter, the permission list of the chosen publish mode. Without
// JavaScript every section stays visible and the server ignores the ones that do not apply.
function syncShownSections(root) {
  root.querySelectorAll("[data-shown-by]").forEach((section) => {
    const [name, values] = section.dataset.shownBy.split(":");
    const control = section.closest("form")?.elements.namedItem(name);
    if (control) section.hidden = !values.split(" ").includes(control.value);
  });
}

document.addEventListener("DOMContentLoaded", () => syncShownSections(document));
document.addEventListener("change", (event) => {
  const form = event.target.form;
  if (form?.querySelector("[data-shown-by]")) syncShownSections(form);
});
document.addEventListener("htmx:load", (event) => {
  const elt = event.detail.elt;
  syncShownSections(elt.closest?.("form") || elt);
});
