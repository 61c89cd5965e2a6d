// The console's code editor: CodeMirror 6 over each <textarea data-editor="json|javascript">.
// The textarea stays the form's field (hidden, kept current on every change), so the form submits
// the same way with or without this script. Built into static/vendor/editor.js by editor/build.sh.
//
// data-editor-error-path / data-editor-error-message: the validator's JSON path (`fields[2].type`,
//   `code.source`) and its message, shown as a lint marker on that property.
// data-editor-limit: the most UTF-16 units the text may hold (flagged as typed, refused on submit).
// Tab moves focus out of the editor as everywhere else (no Tab trapping); Ctrl-F searches.
import {basicSetup} from "codemirror";
import {EditorView} from "@codemirror/view";
import {json, jsonParseLinter} from "@codemirror/lang-json";
import {javascript} from "@codemirror/lang-javascript";
import {syntaxTree} from "@codemirror/language";
import {linter, lintGutter, forceLinting} from "@codemirror/lint";

const LANGUAGES = {json, javascript};

// `fields[2].type` → ["fields", 2, "type"]
function pathSteps(path) {
  const steps = [];
  for (const part of path.match(/[^.[\]]+|\[\d+\]/g) || []) {
    steps.push(part.startsWith("[") ? Number(part.slice(1, -1)) : part);
  }
  return steps;
}

function children(node) {
  const found = [];
  for (let child = node.firstChild; child; child = child.nextSibling) found.push(child);
  return found;
}

// The range of the property (its name) or array item the path names, as deep as the text allows.
function locate(state, path) {
  let node = syntaxTree(state).topNode.firstChild;  // the document's value
  let range = null;
  for (const step of pathSteps(path)) {
    if (!node) break;
    if (typeof step === "number" && node.name === "Array") {
      const items = children(node).filter((child) => !["[", "]", ","].includes(child.name));
      node = items[step];
      if (node) range = {from: node.from, to: node.to};
    } else if (node.name === "Object") {
      const property = children(node).find((child) => child.name === "Property" &&
        state.sliceDoc(child.firstChild.from + 1, child.firstChild.to - 1) === String(step));
      if (!property) break;
      range = {from: property.firstChild.from, to: property.firstChild.to};
      node = property.lastChild;
    } else {
      break;
    }
  }
  return range || {from: 0, to: Math.min(state.doc.length, state.doc.line(1).to)};
}

function diagnostics(textarea, mode) {
  const limit = Number(textarea.dataset.editorLimit || 0);
  const path = textarea.dataset.editorErrorPath;
  const message = textarea.dataset.editorErrorMessage;
  return (view) => {
    const found = [];
    if (limit && view.state.doc.length > limit) {
      const over = view.state.doc.length - limit;
      found.push({from: limit, to: view.state.doc.length, severity: "error",
                  message: textarea.dataset.editorLimitMessage.replace("{over}", over)});
    }
    if (message && view.state.doc.toString() === textarea.dataset.editorSaved) {
      const range = mode === "json" && path ? locate(view.state, path) : {from: 0, to: 0};
      found.push({...range, severity: "error", message});
    }
    return found;
  };
}

function mount(textarea) {
  const mode = textarea.dataset.editor;
  // The label names the editor from now on (the textarea it named is hidden).
  const label = document.querySelector(`label[for="${textarea.id}"]`);
  label.id ||= `${textarea.id}-label`;
  label.removeAttribute("for");
  const nonce = document.querySelector('meta[name="csp-nonce"]')?.content || "";
  textarea.dataset.editorSaved = textarea.value;
  const view = new EditorView({
    doc: textarea.value,
    extensions: [
      basicSetup,
      LANGUAGES[mode](),
      lintGutter(),
      linter(diagnostics(textarea, mode), {delay: 200}),
      mode === "json" ? linter(jsonParseLinter(), {delay: 300}) : [],
      EditorView.cspNonce.of(nonce),
      EditorView.contentAttributes.of({"aria-labelledby": label.id, tabindex: "0",
                                       "aria-describedby": textarea.getAttribute("aria-describedby") || "",
                                       "aria-invalid": textarea.getAttribute("aria-invalid") || "false"}),
      EditorView.updateListener.of((update) => {
        if (!update.docChanged) return;
        textarea.value = update.state.doc.toString();
        textarea.dispatchEvent(new Event("input", {bubbles: true}));  // counters follow
      }),
    ],
  });
  textarea.after(view.dom);
  label.addEventListener("click", () => view.focus());
  textarea.hidden = true;
  textarea.editorView = view;
  forceLinting(view);
  const limit = Number(textarea.dataset.editorLimit || 0);
  textarea.form?.addEventListener("submit", (event) => {
    if (limit && view.state.doc.length > limit) {
      event.preventDefault();
      view.focus();
    }
  });
}

function mountAll(root) {
  root.querySelectorAll("textarea[data-editor]").forEach((textarea) => {
    if (!textarea.editorView) mount(textarea);
  });
}

// "Show line N": select that line of the named editor.
document.addEventListener("click", (event) => {
  const link = event.target.closest("[data-goto-line]");
  const view = link && document.getElementById(link.dataset.editor)?.editorView;
  if (!view) return;
  const line = view.state.doc.line(Math.min(Number(link.dataset.gotoLine), view.state.doc.lines));
  view.dispatch({selection: {anchor: line.from, head: line.to}, scrollIntoView: true});
  view.focus();
});

document.addEventListener("DOMContentLoaded", () => mountAll(document));
document.addEventListener("htmx:afterSwap", (event) => mountAll(event.target));
