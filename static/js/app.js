// The script's own messages in the page's language (core/i18n.py serves them as a small catalog;
// the English words stand in until it arrives or if it cannot).
const MESSAGES = {copied: "Copied", copy_failed: "Copy failed: select the text",
                  unfilled: "Fill in %(name)s before sending: this conversation has no value for it."};
fetch(`/i18n/${document.documentElement.lang}.json`, {credentials: "same-origin"})
  .then((answer) => (answer.ok ? answer.json() : {}))
  .then((catalog) => Object.assign(MESSAGES, catalog))
  .catch(() => {});

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

// Character counters: a <textarea data-counter="ID"> keeps the element ID's count current, from
// what was typed before this deferred script ran too.
function updateCounter(field) {
  const counter = field.dataset?.counter && document.getElementById(field.dataset.counter);
  if (!counter) return;
  const count = new Intl.NumberFormat(document.documentElement.lang).format(field.value.length);
  counter.textContent = counter.textContent.replace(/^[\d,]+/, count);
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

// --- Workbench (templates/desk/workbench.html) ---------------------------------------------------
// Panes: three columns on wide screens; up to 640 px one pane at a time, chosen by the tabs, and
// the customer's details first when a conversation opens (document 1, "Mobile").
const NARROW = window.matchMedia("(max-width: 640px)");

function showPane(name) {
  const workbench = document.getElementById("workbench");
  if (!workbench) return;
  workbench.dataset.pane = name;
  workbench.querySelectorAll("[data-pane-tab]").forEach((tab) => {
    tab.setAttribute("aria-selected", String(tab.dataset.paneTab === name));
  });
}

function markOpenConversation() {
  const open = document.getElementById("thread-live")?.dataset.conversationId;
  document.querySelectorAll("#conversation-list [data-conversation-id]").forEach((link) => {
    if (link.dataset.conversationId === open) link.setAttribute("aria-current", "true");
    else link.removeAttribute("aria-current");
  });
}

document.addEventListener("click", (event) => {
  const tab = event.target.closest("[data-pane-tab]");
  if (tab) showPane(tab.dataset.paneTab);
  const link = event.target.closest("#conversation-list [data-conversation-id]");
  if (link) link.querySelector(".unread")?.remove();
});

document.addEventListener("htmx:afterSwap", (event) => {
  if (event.detail.target.id === "conversation-pane" && NARROW.matches) showPane("details");
  markOpenConversation();
});

// The address follows the open conversation: opening one pushes its own address (the list's tab or
// the search carried in its query), and a tab or a search chosen while one is open keeps it there,
// so a reload or a shared link lands where the agent was. Back and forward load the address again
// (htmx keeps no snapshots: historyCacheSize 0, so no page holding customers' data is stored in the
// browser's localStorage).
document.addEventListener("htmx:pushedIntoHistory", () => {
  const open = document.getElementById("thread-live")?.dataset.conversationId;
  if (!open || !/^\/workbench(\/search)?$/.test(location.pathname)) return;
  history.replaceState(history.state, "", `/workbench/conversations/${open}${location.search}`);
});
document.addEventListener("DOMContentLoaded", () => {
  const workbench = document.getElementById("workbench");
  if (workbench) showPane(workbench.dataset.pane);
  markOpenConversation();
});

// j / k (or the arrow keys) move through the list, never while typing in a field.
function typing(target) {
  return target.closest?.("input, textarea, select, [contenteditable]") !== null;
}

document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
  const step = {j: 1, ArrowDown: 1, k: -1, ArrowUp: -1}[event.key];
  const links = [...document.querySelectorAll("#conversation-list [data-conversation-id]")];
  if (!step || !links.length) return;
  const at = links.indexOf(document.activeElement);
  if (at === -1 && event.key.startsWith("Arrow")) return;  // arrows scroll the page unless in the list
  event.preventDefault();
  const from = at === -1 ? links.findIndex((link) => link.hasAttribute("aria-current")) : at;
  links[Math.min(links.length - 1, Math.max(0, from + step))].focus();
});

// Live updates: ask "what changed since" every 3 s (every 30 s while the tab is hidden). A 204
// costs one indexed query; a 200 names the changed conversations: the list refreshes, and the
// open thread when it is one of them.
const POLL_VISIBLE_MS = 3000;
const POLL_HIDDEN_MS = 30000;
let pollTimer = null;

// Who else is here (desk/viewers.py): each poll also reports the open conversation (none while the
// tab is hidden) and whether the member typed in the composer within TYPING_MS, and gets back what
// the page should show of the others only when it differs from what it shows.
const TYPING_MS = 5000;

function typingNow() {
  const form = document.getElementById("composer");
  if (!form || Date.now() - Number(form.dataset.typedAt || 0) > TYPING_MS) return "";
  if (!form.elements.namedItem("text").value.trim()) return "";
  return form.elements.namedItem("private_note").checked ? "note" : "reply";
}

function showOthers(changed) {
  const notice = document.getElementById("viewers-notice");
  if (notice && notice.textContent !== changed.notice) notice.textContent = changed.notice;  // heard once
  document.querySelectorAll("#conversation-list [data-conversation-id]").forEach((link) => {
    const words = changed.open_elsewhere[link.dataset.conversationId];
    let mark = link.querySelector(".open-elsewhere");
    if (!words) mark?.remove();
    else if (!mark) {
      mark = document.createElement("span");
      mark.className = "open-elsewhere";
      link.querySelector(".row").append(mark);
    }
    if (words && mark.textContent !== words) mark.textContent = words;
  });
}

async function pollChanges() {
  const poller = document.getElementById("workbench-changes");
  if (!poller) return;
  try {
    const thread = document.getElementById("thread-live");
    const query = new URLSearchParams({since: poller.dataset.since, presence: poller.dataset.presence || "",
      open: document.hidden ? "" : thread?.dataset.conversationId || "", typing: typingNow()});
    const url = `${poller.dataset.url}?${query}`;
    const answer = await fetch(url, {headers: {"Accept": "application/json"}, credentials: "same-origin"});
    if (answer.status === 200) {
      const changed = await answer.json();
      poller.dataset.since = changed.since;
      if (changed.conversation_ids.length) htmx.trigger(document.body, "conversations-changed");
      const shown = document.getElementById("thread-live");
      if (shown && changed.conversation_ids.includes(shown.dataset.conversationId)) {
        htmx.trigger(shown, "thread-changed");
      }
      if (changed.presence !== undefined) {
        poller.dataset.presence = changed.presence;
        showOthers(changed);
      }
    }
  } catch {
    // offline or logged out: the next poll tries again
  } finally {
    schedulePoll();
  }
}

function schedulePoll(delay) {
  clearTimeout(pollTimer);
  pollTimer = setTimeout(pollChanges, delay ?? (document.hidden ? POLL_HIDDEN_MS : POLL_VISIBLE_MS));
}

document.addEventListener("DOMContentLoaded", () => {
  if (document.getElementById("workbench-changes")) schedulePoll();
});
document.addEventListener("visibilitychange", () => {
  if (document.getElementById("workbench-changes")) schedulePoll(document.hidden ? undefined : 0);
});

// --- The composer ----------------------------------------------------------------------------
// Enter sends; Shift+Enter, Ctrl+Enter and Command+Enter insert a newline. While an input method
// composes (compositionstart…compositionend, event.isComposing, keyCode 229 — also the keydown
// Enter with keyCode 229 that Safari and macOS Chinese input send just after compositionend),
// Enter belongs to the input method: it never sends and the text is left to it. One send at a
// time: repeated Enter while a send is in flight sends nothing more; each send carries a client
// message id, renewed only after it succeeded, so a retried POST stores one message.
function newClientMessageId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function composerOf(target) {
  return target.closest?.("[data-composer]") || null;
}

function imeComposing(event, form) {
  return event.isComposing || event.keyCode === 229 || form.dataset.composing === "true";
}

function insertNewline(field) {
  field.setRangeText("\n", field.selectionStart, field.selectionEnd, "end");
  field.dispatchEvent(new Event("input", {bubbles: true}));
}

function sendComposer(form) {
  if (form.elements.namedItem("text").value.trim()) form.requestSubmit();
}

document.addEventListener("compositionstart", (event) => {
  const form = composerOf(event.target);
  if (form) form.dataset.composing = "true";
});
document.addEventListener("compositionend", (event) => {
  const form = composerOf(event.target);
  if (form) form.dataset.composing = "false";
});

document.addEventListener("keydown", (event) => {
  const form = composerOf(event.target);
  if (!form || event.target.name !== "text") return;
  if (imeComposing(event, form)) return;  // Enter, arrows and Escape choose candidates then
  if (quickReplyKey(event, form)) return;
  if (event.key !== "Enter") return;
  if (event.shiftKey) return;  // the textarea's own newline
  event.preventDefault();
  if (event.ctrlKey || event.metaKey) insertNewline(event.target);
  else if (!event.altKey) sendComposer(form);
});

// Drafts (desk/drafts.py): what the member types is kept on the server, 1.5 s after the last
// keystroke and at most 2 s after the first one not kept yet, and at once when the page goes away;
// the server restores it wherever the member opens the conversation again. A send stops the pending
// save (the server removes the draft with the send, and refuses a save of a text already sent).
const DRAFT_QUIET_MS = 1500;
const DRAFT_LATEST_MS = 2000;
const drafts = new WeakMap();

function saveDraft(form, keepalive = false) {
  clearTimeout(drafts.get(form)?.timer);
  drafts.delete(form);
  const body = new URLSearchParams();
  for (const name of ["csrf_token", "client_message_id", "text"]) body.set(name, form.elements.namedItem(name).value);
  if (form.elements.namedItem("private_note").checked) body.set("private_note", "on");
  fetch(form.dataset.draftUrl, {method: "POST", body, credentials: "same-origin", keepalive}).catch(() => {});
}

function draftChanged(form) {
  const pending = drafts.get(form);
  clearTimeout(pending?.timer);
  const first = pending?.first ?? Date.now();
  const delay = Math.max(0, Math.min(DRAFT_QUIET_MS, DRAFT_LATEST_MS - (Date.now() - first)));
  drafts.set(form, {first, timer: setTimeout(() => saveDraft(form), delay)});
}

document.addEventListener("input", (event) => {
  const form = composerOf(event.target);
  if (form?.dataset.draftUrl && ["text", "private_note"].includes(event.target.name)) draftChanged(form);
  if (form && event.target.name === "text") typed(form);
});

// The first keystroke since the page loaded or since the last send notes how far the thread went
// then (`replied_after`, the server's time it was shown at): a send asks "Someone else replied"
// when another member replied after it (desk/replies.reply_by_another). "Send anyway" sends the same
// message (same client message id); "Review first", or Escape, shows the thread again and asks
// about later replies only.
function typed(form) {
  form.dataset.typedAt = String(Date.now());
  const after = form.elements.namedItem("replied_after");
  if (!after.value) after.value = document.getElementById("thread-live")?.dataset.asOf || "";
}

document.addEventListener("htmx:afterSwap", (event) => {
  const dialog = event.detail.target.id === "composer-question" && event.detail.target.querySelector("dialog");
  if (dialog) dialog.showModal();
});
document.addEventListener("click", (event) => {
  const button = event.target.closest?.("[data-send-anyway], [data-review-first]");
  if (!button) return;
  button.closest("dialog").close(button.hasAttribute("data-send-anyway") ? "send" : "review");
});
document.addEventListener("close", (event) => {
  const dialog = event.target;
  const form = dialog.id === "someone-replied" && composerOf(dialog);
  if (!form) return;
  if (dialog.returnValue === "send") {
    form.elements.namedItem("send_anyway").value = "1";
    form.requestSubmit();
  } else {
    form.elements.namedItem("replied_after").value = dialog.dataset.asOf;
    const thread = document.getElementById("thread-live");
    if (thread) htmx.trigger(thread, "thread-changed");
    form.elements.namedItem("text").focus();
  }
  dialog.remove();
}, true);
window.addEventListener("pagehide", () => {
  document.querySelectorAll("[data-composer]").forEach((form) => {
    if (drafts.has(form)) saveDraft(form, true);
  });
});

// Captured before htmx sees it: a submit while a send is in flight goes nowhere, nor one that still
// holds a placeholder a quick reply could not fill (it is selected for the agent to type over).
document.addEventListener("submit", (event) => {
  const form = composerOf(event.target);
  if (!form) return;
  const field = form.elements.namedItem("text");
  const missing = unfilledPlaceholder(field.value);
  if (missing) {
    event.preventDefault();
    event.stopPropagation();
    field.focus();
    field.setSelectionRange(missing.index, missing.index + missing[0].length);
    form.querySelector("#composer-error").textContent = MESSAGES.unfilled.replace("%(name)s", missing[0]);
  } else if (form.dataset.sending === "true") {
    event.preventDefault();
    event.stopPropagation();
  } else {
    form.dataset.sending = "true";
    clearTimeout(drafts.get(form)?.timer);
    drafts.delete(form);
  }
}, true);

document.addEventListener("htmx:afterRequest", (event) => {
  const form = composerOf(event.detail.elt);
  if (!form) return;
  form.dataset.sending = "false";
  form.elements.namedItem("send_anyway").value = "";
  if (event.detail.successful && event.detail.xhr.status < 300) {  // a 422 (refused, or a question) keeps it
    form.elements.namedItem("text").value = "";
    form.elements.namedItem("client_message_id").value = newClientMessageId();
    form.elements.namedItem("replied_after").value = "";
    form.querySelector("#composer-error").textContent = "";
    delete form.dataset.typedAt;
    schedulePoll(0);  // the others see the typing stop now
  }
});

// Quick replies: "/" at the start of a word opens the tenant's replies whose title or body holds
// what follows; ArrowUp / ArrowDown move, Enter or Tab puts the reply in place of "/…" (and never
// sends), Escape closes the list.
const QUICK_REPLY_SHOWN = 8;
const shownReplies = new WeakMap();

function quickReplies() {
  const data = document.getElementById("quick-reply-data");
  return data ? JSON.parse(data.dataset.replies) : [];
}

function slashQuery(field) {
  const before = field.value.slice(0, field.selectionStart);
  const match = before.match(/(^|\s)\/([^\s/]*)$/);
  return match ? {start: before.length - match[2].length - 1, query: match[2].toLowerCase()} : null;
}

function chooseOption(form, index) {
  const field = form.elements.namedItem("text");
  form.querySelectorAll("#quick-reply-picker [role=option]").forEach((option, i) => {
    option.setAttribute("aria-selected", String(i === index));
    if (i === index) {
      field.setAttribute("aria-activedescendant", option.id);
      option.scrollIntoView({block: "nearest"});
    }
  });
}

function closePicker(form) {
  form.querySelector("#quick-reply-picker").hidden = true;
  form.elements.namedItem("text").removeAttribute("aria-activedescendant");
}

function renderPicker(form) {
  const field = form.elements.namedItem("text");
  const picker = form.querySelector("#quick-reply-picker");
  const slash = slashQuery(field);
  const found = slash ? quickReplies().filter((reply) =>
    `${reply.title}\n${reply.body}`.toLowerCase().includes(slash.query)).slice(0, QUICK_REPLY_SHOWN) : [];
  shownReplies.set(form, found);
  picker.replaceChildren(...found.map((reply, i) => {
    const option = document.createElement("li");
    option.id = `quick-reply-${i}`;
    option.setAttribute("role", "option");
    option.dataset.index = String(i);
    const title = document.createElement("strong");
    title.textContent = reply.title;
    const body = document.createElement("span");
    body.textContent = reply.body;
    option.append(title, body);
    return option;
  }));
  if (!found.length) return closePicker(form);
  picker.hidden = false;
  chooseOption(form, 0);
}

// Placeholders (desk/placeholders.py: the same grammar, checked when a reply is saved) are filled
// with the open conversation's values (the composer's data-fill); a value it lacks takes the
// fallback, or stays as `{{name}}`, selected, for the agent to type over before sending. The text
// goes into the textarea as text: a customer's name is never markup here.
const PLACEHOLDER = /\{\{\s*([a-z_]+(?:\.[a-z_]+)*)\s*(?:\|\s*"([^"{}]*)"\s*)?\}\}/g;
const UNFILLED = /\{\{\s*(customer\.name|customer\.first_name|agent\.name|conversation\.id)\s*\}\}/;

function fillPlaceholders(body, values) {
  return body.replace(PLACEHOLDER, (whole, name, fallback) =>
    values[name] || (fallback !== undefined ? fallback : `{{${name}}}`));
}

function unfilledPlaceholder(text) {
  return UNFILLED.exec(text);
}

function pickReply(form, index) {
  const field = form.elements.namedItem("text");
  const reply = shownReplies.get(form)?.[index];
  const slash = slashQuery(field);
  closePicker(form);
  if (!reply || !slash) return;
  const filled = fillPlaceholders(reply.body, JSON.parse(form.dataset.fill || "{}"));
  field.setRangeText(filled, slash.start, field.selectionStart, "end");
  const missing = unfilledPlaceholder(filled);
  if (missing) {
    field.setSelectionRange(slash.start + missing.index, slash.start + missing.index + missing[0].length);
  }
  field.dispatchEvent(new Event("input", {bubbles: true}));  // the counter and the draft follow
}

function quickReplyKey(event, form) {
  const picker = form.querySelector("#quick-reply-picker");
  if (picker.hidden) return false;
  const count = picker.querySelectorAll("[role=option]").length;
  const at = Number(picker.querySelector("[aria-selected=true]")?.dataset.index ?? 0);
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    chooseOption(form, (at + (event.key === "ArrowDown" ? 1 : count - 1)) % count);
  } else if (event.key === "Enter" || event.key === "Tab") {
    pickReply(form, at);
  } else if (event.key === "Escape") {
    closePicker(form);
  } else {
    return false;
  }
  event.preventDefault();
  return true;
}

document.addEventListener("input", (event) => {
  const form = composerOf(event.target);
  if (form && event.target.name === "text") renderPicker(form);
});
document.addEventListener("mousedown", (event) => {
  const option = event.target.closest?.("#quick-reply-picker [role=option]");
  if (!option) return;
  event.preventDefault();  // the composer keeps the focus
  pickReply(composerOf(option), Number(option.dataset.index));
});

// Copy buttons: copy the text of the element named by data-copy-from, then say so on the button.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy-from]");
  if (!button) return;
  const source = document.getElementById(button.dataset.copyFrom);
  if (!source) return;
  const label = button.dataset.label || button.textContent;
  button.dataset.label = label;
  try {
    await navigator.clipboard.writeText(source.textContent);
    button.textContent = MESSAGES.copied;
  } catch {
    button.textContent = MESSAGES.copy_failed;
  }
  setTimeout(() => { button.textContent = label; }, 2000);
});
