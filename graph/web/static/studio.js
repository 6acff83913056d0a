// The studio's script: a story page's live event stream, keyboard shortcuts, the minds
// slider's label, an htmx request's one-line error put by its form, the chat's conversation
// kept for the tab's session. Story text from the server is only ever set with textContent.
(function () {
  "use strict";

  // one refresh at a time: a second asked for while one is in flight runs after it (two
  // overlapping ones swapped an older page over a newer one: the second's target was gone)
  let refreshing = false;
  let again = false;
  function refresh() {
    if (!window.htmx) return;
    if (refreshing) { again = true; return; }
    const parts = Array.from(document.querySelectorAll("[data-refresh]"));
    if (!parts.length) return;
    refreshing = true;
    const done = parts.map((el) =>
      window.htmx.ajax("GET", el.dataset.refresh, { target: el, swap: "outerHTML" }));
    Promise.allSettled(done).then(() => {
      refreshing = false;
      if (again) { again = false; refresh(); }
    });
  }

  function showProgress(run) {
    const box = document.querySelector("#progress [data-testid=progress]");
    if (!box) return;
    box.dataset.state = run.state;
    box.className = "progress state-" + run.state;
    const bar = box.querySelector("progress");
    bar.max = run.turns;
    bar.value = run.done;
    let text = run.done + " / " + run.turns + " turns";
    if (run.state === "running") {
      if (run.turn) text += " · turn " + run.turn;
      if (run.step) text += ": " + run.step;
    } else if (run.state === "pending") {
      text += " · waiting for approval";
    } else if (run.state === "error") {
      text += " · " + run.message;
    } else {
      text += " · done";
    }
    box.querySelector(".progress-text").textContent = text;
    // a finished draft waits for a decision: it is no longer being written
    const title = document.querySelector(".live-title");
    if (title) title.textContent = run.state === "pending" ? "Awaiting approval" : "Being written";
  }

  function live(text, append) {
    const el = document.getElementById("live-draft");
    if (!el) return;
    el.textContent = append ? el.textContent + text : text;
    const title = document.querySelector(".live-title");
    if (title) title.hidden = !el.textContent;
  }

  function decidedElsewhere() {
    if (document.querySelector(".banner.elsewhere")) return;
    const note = document.createElement("p");
    note.className = "banner elsewhere";
    note.setAttribute("role", "status");
    note.dataset.testid = "decided-elsewhere";
    note.textContent = "This turn was decided elsewhere. ";
    const link = document.createElement("a");
    link.href = window.location.href;
    link.textContent = "Reload";
    note.appendChild(link);
    document.querySelector("main").prepend(note);
  }

  function connect() {
    const main = document.querySelector("main[data-events]");
    if (!main || main.dataset.connected) return;
    main.dataset.connected = "1";
    const source = new EventSource(main.dataset.events);
    const watchOnly = main.dataset.reloadOn !== undefined;
    const data = (e) => JSON.parse(e.data);
    source.addEventListener("hello", (e) => {
      // anything that changed between rendering the page and connecting
      const now = data(e);
      const head = main.dataset.head;
      const changed = (head !== undefined && String(now.head) !== head) ||
        (main.dataset.pending !== undefined && (now.pending || "") !== main.dataset.pending);
      main.dataset.live = "1";
      if (now.run) showProgress(now.run);  // a run that ended before this stream began
      if (changed) { if (watchOnly) decidedElsewhere(); else refresh(); }
    });
    source.addEventListener("progress", (e) => showProgress(data(e)));
    source.addEventListener("draft", (e) => live(data(e).text, false));
    source.addEventListener("prose", (e) => live(data(e).text, true));
    source.addEventListener("turn", () => {
      live("", false);
      if (watchOnly) decidedElsewhere(); else refresh();
    });
    source.addEventListener("pending", () => { if (watchOnly) decidedElsewhere(); else refresh(); });
    source.addEventListener("done", () => refresh());
    window.addEventListener("pagehide", () => source.close());
  }

  function shortcuts(e) {
    if (e.ctrlKey || e.metaKey || e.altKey || e.repeat) return;
    if (e.target.closest && e.target.closest("input, textarea, select, [contenteditable]")) return;
    const target = document.querySelector('[data-shortcut="' + e.key.toLowerCase() + '"]');
    if (!target) return;
    e.preventDefault();
    if (target.tagName === "TEXTAREA" || target.tagName === "INPUT") target.focus();
    else target.click();
  }

  function slider() {
    const range = document.getElementById("as-of");
    const label = document.getElementById("as-of-label");
    if (range && label) range.addEventListener("input", () => { label.textContent = range.value; });
  }

  // a notice says what the last action did: it goes after a while, or when clicked
  function notices() {
    for (const note of document.querySelectorAll("p.notice")) {
      note.title = "Click to dismiss";
      note.addEventListener("click", () => note.remove());
      window.setTimeout(() => note.remove(), 20000);
    }
  }

  // the fork form lists the hypotheses open at its turn: another turn shows that turn's
  function forkForm() {
    const at = document.querySelector("[data-testid=fork-at]");
    if (!at) return;
    at.addEventListener("change", () => {
      const url = new URL(window.location.href);
      url.searchParams.set("at", at.value);
      window.location.assign(url.pathname + url.search);
    });
  }

  // an htmx request refused: its one-line error (the server's fragment, p.error-line) goes
  // in its form, in place of the last one, and nothing else on the page changes
  function inlineErrors() {
    document.body.addEventListener("htmx:beforeSwap", (e) => {
      const d = e.detail;
      if (d.xhr.status < 400) {
        const form = d.requestConfig && d.requestConfig.elt.closest("form");
        const old = form && form.querySelector(":scope > .error-line");
        if (old) old.remove();
        return;
      }
      const elt = d.requestConfig ? d.requestConfig.elt : d.target;
      const form = elt.closest("form") || elt;
      let slot = form.querySelector(":scope > .error-line");
      if (!slot) {
        slot = document.createElement("p");
        if (form.tagName === "FORM") form.appendChild(slot); else form.before(slot);
      }
      d.shouldSwap = true;
      d.isError = false;
      d.target = slot;
      d.swapOverride = "outerHTML";
      d.selectOverride = ".error-line";
    });
  }

  // the chat's exchanges: each answer is added below the last (htmx); the list is kept in
  // the tab's session storage (never sent anywhere) and shown again when the page returns
  function chat() {
    const list = document.getElementById("exchanges");
    if (!list) return;
    const key = "fabula-chat:" + list.dataset.conversation;
    const forget = document.querySelector("[data-forget-chat]");
    const part = (x, name) => { const el = x.querySelector('[data-part="' + name + '"]'); return el ? el.textContent : ""; };
    const read = () => Array.from(list.querySelectorAll(".exchange")).map((x) =>
      ({ character: x.dataset.character || "", question: part(x, "question"),
         name: part(x, "name"), answer: part(x, "answer") }));
    const save = () => {
      const kept = read();
      try { window.sessionStorage.setItem(key, JSON.stringify(kept)); } catch (err) { /* full: not kept */ }
      if (forget) forget.hidden = kept.length === 0;
    };
    let kept = [];
    try { kept = JSON.parse(window.sessionStorage.getItem(key) || "[]"); } catch (err) { kept = []; }
    const shown = read();  // the exchange this page was loaded with, if any, is the latest
    if (shown.length && kept.length) {
      const last = kept[kept.length - 1];
      if (last.question === shown[0].question && last.answer === shown[0].answer) kept.pop();
    }
    const first = list.firstElementChild;
    for (const x of kept) {
      const item = document.createElement("article");
      item.className = "exchange restored";
      item.dataset.testid = "exchange";
      item.dataset.character = x.character || "";
      const q = document.createElement("p");
      q.className = "question";
      const you = document.createElement("strong");
      you.textContent = "You";
      const qs = document.createElement("span");
      qs.dataset.part = "question";
      qs.textContent = x.question;
      q.append(you, ": ", qs);
      const a = document.createElement("p");
      a.className = "answer";
      const who = document.createElement("strong");
      who.dataset.part = "name";
      who.textContent = x.name;
      const as = document.createElement("span");
      as.dataset.part = "answer";
      as.textContent = x.answer;
      a.append(who, ": ", as);
      item.append(q, a);
      list.insertBefore(item, first);
    }
    save();
    // the next question is sent with the conversation so far with the character asked
    // (its last exchanges, never another character's): a follow-up ("Why?") is read with it
    document.body.addEventListener("htmx:configRequest", (e) => {
      const form = e.detail.elt;
      if (!form || !form.matches || !form.matches('[data-testid="chat-form"]')) return;
      const who = form.querySelector("#character");
      const asked = who ? who.value : "";
      const talked = read().filter((x) => x.character === asked).slice(-6)
        .map((x) => ({ question: x.question, answer: x.answer }));
      e.detail.parameters.conversation = JSON.stringify(talked);
    });
    document.body.addEventListener("htmx:afterSwap", (e) => {
      if (e.detail.target !== list) return;
      save();
      // the question stays, selected: ask another the same, or type the next over it
      const q = document.getElementById("q");
      if (q) { q.focus(); q.select(); }
      list.lastElementChild && list.lastElementChild.scrollIntoView({ block: "nearest" });
    });
    if (forget) forget.addEventListener("click", () => {
      list.replaceChildren();
      save();
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    connect(); slider(); notices(); forkForm(); inlineErrors(); chat();
  });
  document.addEventListener("keydown", shortcuts);
})();
