// The sidebar's past sessions: searched, opened, renamed, deleted; each with when it was last
// active, its turns, and a badge while a permission question of its waits.
import { api } from "./api.js";
import { $, button, el } from "./dom.js";
import { ago, fullTime, plural } from "./words.js";

const SEARCH_DELAY_MS = 200; // typing pauses this long before a search goes out

export class SessionList {
  constructor({ onOpen, onDeleted }) {
    this.onOpen = onOpen;
    this.onDeleted = onDeleted;
    this.current = null;
    this.items = new Map(); // conversation id -> its <li>
    this.counts = new Map(); // conversation id -> open permission questions
    this.query = "";
    this.loading = null; // the newest load's token
    let timer = null;
    $("search").addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.search($("search").value.trim()), SEARCH_DELAY_MS);
    });
  }

  async search(query) {
    this.query = query;
    await this.load();
  }

  async load() {
    const params = this.query ? "?" + new URLSearchParams({ q: this.query }) : "";
    const token = (this.loading = {});
    const listing = await api("/v1/conversations" + params);
    if (this.loading !== token) return; // a newer load (another search) is on its way
    const list = $("sessions");
    this.items = new Map();
    list.replaceChildren(...listing.data.map((c) => this.item(c)));
    $("no-sessions").hidden = listing.data.length > 0;
    $("no-sessions").textContent = this.query ? "No session matches." : "No sessions yet.";
    this.badges();
  }

  has(id) {
    return this.items.has(id);
  }

  item(conv) {
    const li = el("li", conv.id === this.current ? "current" : "");
    li.dataset.conversationId = conv.id;
    const open = el("button", "open-session");
    open.type = "button";
    const title = el("span", "title", conv.title || "Untitled");
    const when = el("time", "", ago(conv.updated_at));
    when.dateTime = new Date(conv.updated_at * 1000).toISOString();
    when.title = fullTime(conv.updated_at);
    const meta = el("small", "", `${conv.agent} · ${plural(conv.turn_count, "turn")} · `);
    meta.append(when);
    open.append(el("span", "badge"), title, meta); // the badge floats beside the title
    open.addEventListener("click", () => this.onOpen(conv));
    const actions = el("span", "actions");
    actions.append(
      button("✎", "rename", () => this.rename(li, conv), "Rename"),
      button("×", "delete", (e) => this.remove(e.currentTarget, conv), "Delete"),
    );
    li.append(open, actions);
    this.items.set(conv.id, li);
    return li;
  }

  select(id) {
    this.current = id;
    for (const [cid, li] of this.items) li.classList.toggle("current", cid === id);
  }

  badges(counts = this.counts) {
    this.counts = counts;
    for (const [id, li] of this.items) {
      const n = counts.get(id) || 0;
      const badge = li.querySelector(".badge");
      badge.textContent = n ? String(n) : "";
      badge.title = n ? `${plural(n, "permission request")} waiting` : "";
      li.classList.toggle("waiting", n > 0);
    }
  }

  // The title becomes a field in place of the session's button (a field inside a button
  // would take its clicks and keys): Enter saves, Escape or leaving it keeps the old title.
  rename(li, conv) {
    const open = li.querySelector(".open-session");
    const input = el("input", "rename-input");
    input.value = conv.title || "";
    input.setAttribute("aria-label", "New title");
    let finished = false; // removing the field blurs it: the first ending wins
    const done = async (save) => {
      if (finished) return;
      finished = true;
      const title = input.value.trim();
      input.remove();
      open.hidden = false;
      if (!save || !title || title === conv.title) return;
      try {
        const renamed = await api(`/v1/conversations/${conv.id}`, {
          method: "POST",
          body: JSON.stringify({ title }),
        });
        conv.title = renamed.title;
        open.querySelector(".title").textContent = renamed.title;
      } catch (error) {
        open.title = error.message; // e.g. too long; the old title stays
      }
    };
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") { e.preventDefault(); done(true); }
      if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); done(false); }
    });
    input.addEventListener("blur", () => done(false));
    open.hidden = true;
    open.before(input);
    input.focus();
    input.select();
  }

  // Two clicks: the first asks, the second deletes (no modal dialog over the page).
  async remove(node, conv) {
    if (!node.classList.contains("confirm")) {
      node.classList.add("confirm");
      node.textContent = "Delete?";
      node.addEventListener("blur", () => {
        node.classList.remove("confirm");
        node.textContent = "×";
      }, { once: true });
      return;
    }
    try {
      await api(`/v1/conversations/${conv.id}`, { method: "DELETE" });
    } catch (error) {
      node.textContent = "×";
      node.classList.remove("confirm");
      node.title = error.message; // e.g. a turn is running on it
      return;
    }
    this.items.get(conv.id)?.remove();
    this.items.delete(conv.id);
    this.onDeleted(conv.id);
  }
}
