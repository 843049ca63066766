// The Alto panel: one plain web component, no build step, nothing fetched but Alto's own
// websocket commands (custom_components/alto/panel/websocket.py). Home Assistant hands it `hass`
// (the logged-in user's authenticated connection) and `narrow`; everything it shows comes
// from `alto/subscribe`: its first event carries the view and the newest page of the memory list
// (one entry per thing said, what Alto understood from it inside), later events only what
// changed (`_apply`); older entries come a page at a time (`alto/memories`), and "Everything
// said" asks for questions, requests and thanks too (`alto/everything`).
//
// Memory text is whatever people said: it is only ever set as textContent, never as markup.

// Sections in the order they show; each renders one key of the view. A later section is one
// more entry here and one more key in panel_api.SECTIONS.
const SECTIONS = [
  { key: "memories", title: "memories", render: (panel, data) => panel.renderMemories(data) },
  { key: "thoughts", title: "thoughts", render: (panel, data) => panel.renderThoughts(data) },
  { key: "intents", title: "intents", render: (panel, data) => panel.renderIntents(data) },
  { key: "inbox", title: "inbox", render: (panel, data) => panel.renderInbox(data) },
  { key: "synthesis", title: "synthesis", render: (panel, data) => panel.renderSynthesis(data) },
  { key: "admin", title: "admin", render: (panel, data) => panel.renderAdmin(data) },
];

const STYLE = `
  :host { display: block; min-height: 100%; background: var(--primary-background-color);
    color: var(--primary-text-color); font-family: var(--ha-font-family-body, Roboto, sans-serif); }
  header { display: flex; align-items: center; gap: 8px; height: 56px; padding: 0 12px;
    background: var(--app-header-background-color, var(--primary-color));
    color: var(--app-header-text-color, white); font-size: 20px; }
  header .viewer { margin-left: auto; font-size: 14px; opacity: 0.9; }
  main { max-width: 960px; margin: 0 auto; padding: 16px; display: grid; gap: 16px; }
  section { background: var(--card-background-color, white); border-radius: 12px;
    padding: 16px; box-shadow: var(--ha-card-box-shadow, 0 1px 3px rgba(0,0,0,0.2)); }
  h2 { margin: 0 0 12px; font-size: 18px; font-weight: 500; }
  .caption { margin: -4px 0 12px; color: var(--secondary-text-color); font-size: 14px; }
  form { display: flex; flex-wrap: wrap; gap: 8px; margin-bottom: 12px; }
  input[type=text], select { flex: 1 1 220px; padding: 8px; font: inherit; border-radius: 6px;
    border: 1px solid var(--divider-color, #ccc); background: var(--card-background-color);
    color: var(--primary-text-color); }
  select { flex: 0 0 auto; }
  button { font: inherit; padding: 8px 14px; border-radius: 6px; border: none; cursor: pointer;
    background: var(--primary-color); color: var(--text-primary-color, white); }
  button.secondary { background: transparent; color: var(--primary-color);
    border: 1px solid var(--primary-color); }
  button.danger { background: var(--error-color, #db4437); }
  button:disabled { opacity: 0.5; cursor: default; }
  ul { list-style: none; margin: 0; padding: 0; display: grid; gap: 10px; }
  li { border: 1px solid var(--divider-color, #e0e0e0); border-radius: 8px; padding: 10px 12px; }
  li.superseded { opacity: 0.65; }
  li.superseded .quote { text-decoration: line-through; }
  li.unlisted > .row .quote { color: var(--secondary-text-color); }
  .tabs { display: flex; gap: 4px; margin-bottom: 12px; border-bottom: 1px solid var(--divider-color, #e0e0e0); }
  button.tab { background: transparent; color: var(--secondary-text-color); border-radius: 0;
    border-bottom: 2px solid transparent; }
  button.tab[aria-selected=true] { color: var(--primary-color); border-bottom-color: var(--primary-color); }
  details.understood { margin-top: 8px; font-size: 14px; }
  details.understood summary { cursor: pointer; color: var(--secondary-text-color); }
  ul.understood { gap: 6px; margin-top: 6px; }
  ul.understood li { border: none; border-left: 3px solid var(--divider-color, #e0e0e0);
    border-radius: 0; padding: 2px 10px; overflow-wrap: anywhere; }
  ul.understood .quote { font-size: 14px; }
  .chip.corrected { background: var(--warning-color, #ffa600); color: black; }
  .row { display: flex; gap: 12px; align-items: flex-start; }
  .row > .grow { flex: 1; min-width: 0; }
  .quote { margin: 0 0 6px; font-size: 16px; overflow-wrap: anywhere; }
  .meta { color: var(--secondary-text-color); font-size: 13px; display: flex; flex-wrap: wrap;
    gap: 4px 12px; }
  .chip { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px;
    background: var(--secondary-background-color, #eee); color: var(--primary-text-color); }
  .chip.private { background: var(--primary-color); color: var(--text-primary-color, white); }
  .chip.executed, .chip.confirmed, .chip.surfaced { background: var(--success-color, #43a047);
    color: white; }
  .chip.refused, .chip.failed, .chip.declined, .chip.dropped { background: var(--error-color, #db4437);
    color: white; }
  .chip.awaiting_confirmation, .chip.urgency.high { background: var(--warning-color, #ffa600);
    color: black; }
  .chip.urgency.critical { background: var(--error-color, #db4437); color: white; }
  li.observation.sent { opacity: 0.75; }
  .synthesis + .synthesis { margin-top: 20px; }
  h3 { margin: 0 0 4px; font-size: 16px; font-weight: 500; }
  .synthesis .meta { margin-bottom: 10px; }
  .synthesis dl { margin: 0; }
  ul.texts { gap: 4px; }
  ul.texts li { border: none; padding: 0; overflow-wrap: anywhere; }
  .replaced { font-size: 13px; margin-top: 4px; color: var(--secondary-text-color); }
  .empty { color: var(--secondary-text-color); margin: 0; }
  .status-line { min-height: 20px; color: var(--error-color, #db4437); }
  .status-line.ok { color: var(--success-color, #43a047); }
  button.qualify { margin-bottom: 20px; }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: 6px 16px; margin: 0 0 12px; }
  dt { color: var(--secondary-text-color); }
  dd { margin: 0; overflow-wrap: anywhere; }
  code { font-size: 12px; }
  table { border-collapse: collapse; width: 100%; margin-top: 8px; }
  td, th { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--divider-color, #e0e0e0); }
  dialog { border: none; border-radius: 12px; padding: 20px; max-width: 420px;
    background: var(--card-background-color, white); color: var(--primary-text-color); }
  dialog::backdrop { background: rgba(0, 0, 0, 0.4); }
  dialog .actions { display: flex; justify-content: flex-end; gap: 8px; margin-top: 16px; }
`;

// An element with attributes, properties ("." prefix), listeners ("on" prefix) and children;
// strings become text nodes.
function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name.startsWith(".")) element[name.slice(1)] = value;
    else element.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

class AltoPanel extends HTMLElement {
  constructor() {
    super();
    this.attachShadow({ mode: "open" });
    this._strings = {};
    this._view = null;
    this._results = null; // recall results, or null for the whole list
    this._unsubscribe = null;
    this._subscription = null; // the subscription's id, which older pages are asked with
    this._everything = false; // the list shows everything said, not only memories
    this._unfolded = new Set(); // entries whose "what Alto understood" is open: kept across updates
    this._started = false;
  }

  set hass(hass) {
    const first = !this._hass;
    this._hass = hass;
    if (this._menu) this._menu.hass = hass;
    if (first) this._start();
    // The user's language may arrive after the panel started, or change in their profile.
    else if (this._started && this._language !== hass.language) this._restart();
  }

  get hass() {
    return this._hass;
  }

  set narrow(narrow) {
    this._narrow = narrow;
    if (this._menu) this._menu.narrow = narrow;
  }

  connectedCallback() {
    if (this._hass && !this._started) this._start();
  }

  disconnectedCallback() {
    this._stop();
  }

  // -- strings ----------------------------------------------------------------------------------
  t(key, placeholders = {}) {
    const text = this._strings[key] ?? key;
    return text.replace(/\{(\w+)\}/g, (match, name) =>
      name in placeholders ? String(placeholders[name]) : match,
    );
  }

  formatWhen(ms) {
    if (ms === null || ms === undefined) return this.t("when_unknown");
    return new Date(ms).toLocaleString(this._hass.language, {
      dateStyle: "medium",
      timeStyle: "short",
    });
  }

  // -- life cycle -------------------------------------------------------------------------------
  async _start() {
    this._started = true;
    this._language = this._hass.language;
    this._view = null;
    this._strings = await this._hass
      .callWS({ type: "alto/strings", language: this._hass.language })
      .catch(() => ({}));
    this._skeleton();
    try {
      this._unsubscribe = await this._hass.connection.subscribeMessage(
        (event) => this._apply(event),
        { type: "alto/subscribe", ...this._entry() },
      );
    } catch (err) {
      this._status(err.message || String(err));
    }
  }

  _stop() {
    if (this._unsubscribe) {
      this._unsubscribe();
      this._unsubscribe = null;
    }
    this._started = false;
  }

  _entry() {
    return this._entryId ? { config_entry_id: this._entryId } : {};
  }

  async _call(message, forEntry = true) {
    this._status("");
    try {
      return await this._hass.callWS(forEntry ? { ...message, ...this._entry() } : message);
    } catch (err) {
      this._status(this.t("error", { message: err.message || err.code || String(err) }));
      throw err;
    }
  }

  _status(text, ok = false) {
    this._statusLine.textContent = text;
    this._statusLine.className = ok ? "status-line ok" : "status-line";
  }

  // -- layout -----------------------------------------------------------------------------------
  _skeleton() {
    const root = this.shadowRoot;
    root.replaceChildren();
    this._menu = document.createElement("ha-menu-button");
    this._menu.hass = this._hass;
    this._menu.narrow = this._narrow;
    this._viewerLabel = h("span", { class: "viewer" });
    this._entryPicker = h("select", { id: "entry", hidden: true, onchange: () => this._switch() });
    this._statusLine = h("div", { class: "status-line", role: "status" });
    this._sections = {};
    for (const section of SECTIONS) {
      this._sections[section.key] = h("section", { id: section.key, hidden: true });
    }
    root.append(
      h("style", {}, STYLE),
      h("header", {}, this._menu, h("span", {}, this.t("title")), this._entryPicker,
        this._viewerLabel),
      h("main", {}, this._statusLine, ...SECTIONS.map((s) => this._sections[s.key])),
      this._dialog(),
    );
  }

  _dialog() {
    this._confirmTitle = h("h2", {});
    this._confirmText = h("p", {});
    this._confirmYes = h("button", { class: "danger confirm-yes" });
    this._confirm = h(
      "dialog",
      { id: "confirm" },
      this._confirmTitle,
      this._confirmText,
      h(
        "div",
        { class: "actions" },
        h("button", { class: "secondary confirm-no", onclick: () => this._confirm.close() },
          this.t("cancel")),
        this._confirmYes,
      ),
    );
    return this._confirm;
  }

  // Ask before anything is erased; `action` runs only on the confirming button.
  _ask(title, text, button, action) {
    this._confirmTitle.textContent = title;
    this._confirmText.textContent = text;
    this._confirmYes.textContent = button;
    this._confirmYes.onclick = async () => {
      this._confirm.close();
      await action();
    };
    this._confirm.showModal();
  }

  async _switch() {
    this._entryId = this._entryPicker.value;
    await this._restart();
  }

  async _restart() {
    this._stop();
    this._results = null;
    this._everything = false;
    this._subscription = null;
    await this._start();
  }

  // One subscription event: the view's keys that changed, and the memories' changes (a reset
  // drops what is held first). Memories are kept newest first, each id once.
  _apply(event) {
    if (event.closed) return this._closed();
    if (event.subscription !== undefined) this._subscription = event.subscription;
    this._view = { ...(this._view ?? {}), ...(event.view ?? {}) };
    const memories = event.memories;
    if (memories) {
      if (memories.reset) this._view.memories = [];
      this._merge(memories.upsert, memories.remove);
      this._view.memories_total = memories.total;
      this._view.memories_more = memories.more;
    }
    this._show(this._view);
  }

  _merge(upsert, remove = []) {
    const gone = new Set([...remove, ...upsert.map((memory) => memory.id)]);
    const kept = (this._view.memories ?? []).filter((memory) => !gone.has(memory.id));
    this._view.memories = kept.concat(upsert).sort((a, b) => b.id - a.id);
  }

  async _more(button) {
    button.disabled = true;
    const page = await this._call({ type: "alto/memories", subscription: this._subscription }, false)
      .catch(() => null);
    button.disabled = false;
    if (!page) return;
    this._merge(page.memories);
    this._view.memories_total = page.total;
    this._view.memories_more = page.more;
    this._show(this._view);
  }

  // A newer panel of the same person ended this subscription: say so, and offer to follow again.
  _closed() {
    this._stop();
    this._status(this.t("subscription_closed"));
    this._statusLine.append(" ", h("button", { class: "secondary follow-again",
      onclick: () => this._restart() }, this.t("follow_again")));
  }

  _show(view) {
    this._view = view;
    this._entryId = view.entry.id;
    this._viewerLabel.textContent = view.viewer.name;
    this._entryPicker.hidden = view.entries.length < 2;
    this._entryPicker.replaceChildren(
      ...view.entries.map((e) =>
        h("option", { value: e.id, selected: e.id === view.entry.id }, e.title),
      ),
    );
    for (const section of SECTIONS) {
      const element = this._sections[section.key];
      const data = view[section.key];
      element.hidden = data === null || data === undefined;
      if (!element.hidden) {
        const parts = section.render(this, data).filter((part) => part !== null);
        element.replaceChildren(h("h2", {}, this.t(section.title)), ...parts);
      }
    }
  }

  // -- memories: one entry per thing said --------------------------------------------------------
  renderMemories(entries) {
    if (!this._view.memory_available) return [h("p", { class: "empty" }, this.t("memory_unavailable"))];
    const shown = this._results ? this._results.memories : entries;
    const everything = this._everything;
    return [
      // What this list holds, which is more than the household-only to-do list shows; an
      // administrator is told that others' private memories are counted, not listed.
      h("p", { class: "caption" }, this.t(everything ? "everything_caption" : "memories_caption"),
        this._view.viewer.is_admin ? ` ${this.t("memories_caption_admin")}` : null),
      this._tabs(),
      this._searchForm(),
      this._rememberForm(),
      this._results
        ? h("p", { class: "results" }, this.t("results_for", { query: this._results.query }), " ",
            h("button", { class: "secondary clear-search", onclick: () => this._clearSearch() },
              this.t("clear_search")))
        : null,
      shown.length
        ? h("ul", { class: "memories" }, shown.map((entry) => this._listItem(entry)))
        : h("p", { class: "empty" },
            this.t(this._results ? "no_results" : everything ? "nothing_said" : "no_memories")),
      !this._results && this._view.memories_more
        ? h("button", { class: "secondary more", onclick: (event) => this._more(event.target) },
            this.t("more", { shown: entries.length, total: this._view.memories_total }))
        : null,
    ];
  }

  // Memories (what Alto may bring up) or everything said (questions, requests and thanks too).
  _tabs() {
    const tab = (key, on) => h("button", {
      class: `tab ${key}`, role: "tab", "aria-selected": String(this._everything === on),
      onclick: () => this._showEverything(on),
    }, this.t(`tab_${key}`));
    return h("div", { class: "tabs", role: "tablist" },
      tab("memories", false), tab("everything", true));
  }

  async _showEverything(on) {
    if (this._everything === on || this._subscription === null) return;
    this._everything = on;
    this._results = null;
    if (this._searchInput) this._searchInput.value = "";
    this._show(this._view);
    // The next event starts the list over (reset) with the entries of the list asked for.
    await this._call({ type: "alto/everything", subscription: this._subscription, everything: on },
      false).catch(() => null);
  }

  _searchForm() {
    this._searchInput ??= h("input", {
      type: "text", name: "query", placeholder: this.t("search_placeholder"),
      "aria-label": this.t("search_placeholder"),
    });
    return h(
      "form",
      { class: "search", onsubmit: (event) => this._search(event) },
      this._searchInput,
      h("button", { type: "submit" }, this.t("search")),
    );
  }

  _rememberForm() {
    this._rememberInput ??= h("input", {
      type: "text", name: "text", placeholder: this.t("remember_placeholder"),
      "aria-label": this.t("remember_placeholder"),
    });
    this._rememberScope ??= h(
      "select",
      { name: "scope", "aria-label": this.t("remember_for") },
      h("option", { value: "private" }, this.t("remember_private")),
      h("option", { value: "household" }, this.t("remember_household")),
    );
    return h(
      "form",
      { class: "remember", onsubmit: (event) => this._remember(event) },
      this._rememberInput,
      this._rememberScope,
      h("button", { type: "submit" }, this.t("remember")),
    );
  }

  // When, in the words people use, in the viewer's language: today, yesterday, on Tuesday (the
  // last week), else the date. The exact time is the element's tooltip.
  whenWords(ms) {
    if (ms === null || ms === undefined) return "";
    const then = new Date(ms);
    const now = new Date();
    const midnight = (d) => new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
    const days = Math.round((midnight(now) - midnight(then)) / 86_400_000);
    const language = this._hass.language;
    if (days <= 0) return this.t("when_today");
    if (days === 1) return this.t("when_yesterday");
    if (days < 7) {
      return this.t("when_weekday", { day: then.toLocaleDateString(language, { weekday: "long" }) });
    }
    const options = { day: "numeric", month: "long" };
    if (then.getFullYear() !== now.getFullYear()) options.year = "numeric";
    return this.t("when_date", { date: then.toLocaleDateString(language, options) });
  }

  // Where a thing was said and when ("In a conversation on Tuesday"), never a source's id; a
  // language that puts the day first starts with it ("Heute zum Merken gegeben").
  _sourceText(source) {
    const text = this.t(`source_${source.type}`, { when: this.whenWords(source.when) })
      .replace(/\s+/g, " ").trim();
    return text.charAt(0).toLocaleUpperCase(this._hass.language) + text.slice(1);
  }

  _listItem(entry) {
    const source = entry.source;
    const said = ["conversation", "agent", "reflect"].includes(source.type);
    const actor = entry.actor
      ? this.t(said ? "said_by" : "added_by", { name: entry.actor })
      : this.t(said ? "said_by_unknown" : "added_by_unknown");
    const classes = ["memory", "entry", entry.listed ? "listed" : "unlisted"];
    if (entry.corrected) classes.push("corrected");
    return h(
      "li",
      { class: classes.join(" "), "data-entry-id": entry.id },
      h(
        "div",
        { class: "row" },
        h(
          "div",
          { class: "grow" },
          h("p", { class: "quote" }, `“${entry.quote}”`),
          h(
            "div",
            { class: "meta" },
            h("span", { class: "source", title: this.formatWhen(source.when) },
              this._sourceText(source)),
            h("span", { class: "actor" }, actor),
            h("span", { class: `chip scope ${entry.scope}` },
              entry.scope === "private" ? this.t("scope_private") : this.t("scope_household")),
            entry.kind === "explicit"
              ? h("span", { class: "chip kind" }, this.t("kind_explicit")) : null,
            entry.corrected ? h("span", { class: "chip corrected" }, this.t("corrected")) : null,
            entry.listed ? null : h("span", {
              class: "chip not-recalled", title: this.t("not_recalled_hint"),
            }, this.t("not_recalled")),
          ),
          entry.understood.length ? this._understood(entry) : null,
        ),
        h("button", {
          class: "secondary forget", "aria-label": this.t("forget"),
          onclick: () => this._forget(entry),
        }, this.t("forget")),
      ),
    );
  }

  // What Alto understood from a thing said, collapsed until asked for (and open while it was,
  // whatever live updates redraw the list).
  _understood(entry) {
    const items = entry.understood;
    return h(
      "details",
      {
        class: "understood", open: this._unfolded.has(entry.id),
        ontoggle: (event) => event.target.open
          ? this._unfolded.add(entry.id) : this._unfolded.delete(entry.id),
      },
      h("summary", {}, this.t("understood", { count: items.length })),
      h("ul", { class: "understood" }, items.map((item) => h(
        "li",
        { class: `understood-item ${item.status}`, "data-memory-id": item.id },
        h("span", { class: "chip kind" }, this.t(`kind_${item.kind}`)), " ",
        h("span", { class: "quote" }, `“${item.quote}”`),
        item.superseded_by
          ? h("div", { class: "replaced" }, this.t("superseded_by", { quote: item.superseded_by.quote }))
          : null,
        item.replaces
          ? h("div", { class: "replaced" }, this.t("replaces", { quote: item.replaces.quote }))
          : null,
      ))),
    );
  }

  async _search(event) {
    event.preventDefault();
    const query = this._searchInput.value.trim();
    if (!query) return this._clearSearch();
    const found = await this._call({ type: "alto/recall", query, limit: 20 }).catch(() => null);
    if (!found) return;
    this._results = { query, memories: found.memories };
    this._show(this._view);
  }

  _clearSearch() {
    this._results = null;
    this._searchInput.value = "";
    this._show(this._view);
  }

  async _remember(event) {
    event.preventDefault();
    const text = this._rememberInput.value.trim();
    if (!text) return;
    const message = { type: "alto/remember", text };
    if (this._rememberScope.value === "household") message.owner = "household";
    const done = await this._call(message).catch(() => null);
    if (!done) return;
    this._rememberInput.value = "";
    this._status(this.t("remembered"), true);
  }

  // Forgetting an entry forgets its source and everything Alto understood from it.
  _forget(entry) {
    this._ask(this.t("forget_confirm_title"), `“${entry.quote}” — ${this.t("forget_confirm_text")}`,
      this.t("forget"), async () => {
        for (const id of entry.forget) {
          const done = await this._call({ type: "alto/forget", memory_id: id }).catch(() => null);
          if (!done) return;
        }
        if (this._results) {
          this._results.memories = this._results.memories.filter((m) => m.id !== entry.id);
          this._show(this._view);
        }
        this._status(this.t("entry_forgotten"), true);
      });
  }

  // -- thoughts and intents ---------------------------------------------------------------------
  renderThoughts(thoughts) {
    if (!thoughts.length) return [h("p", { class: "empty" }, this.t("no_thoughts"))];
    return [h("ul", { class: "thoughts" }, thoughts.map((thought) => h(
      "li",
      { class: `thought ${thought.verdict}` },
      thought.thought
        ? h("p", { class: "quote" }, thought.thought)
        : h("p", { class: "quote" }, this.t("thought_dropped_text",
            { modes: thought.failure_modes.join(", ") || "—" })),
      h("div", { class: "meta" },
        h("span", { class: `chip ${thought.verdict}` }, this.t(`thought_verdict_${thought.verdict}`)),
        h("span", { class: "when" }, this.formatWhen(thought.when))),
    )))];
  }

  renderIntents(intents) {
    if (!intents.length) return [h("p", { class: "empty" }, this.t("no_intents"))];
    return [h("ul", { class: "intents" }, intents.map((intent) => h(
      "li",
      { class: `intent ${intent.verdict}` },
      h("p", { class: "quote" }, intent.span),
      h("div", { class: "meta" },
        h("span", { class: `chip verdict ${intent.verdict}` }, this.t(`verdict_${intent.verdict}`)),
        intent.entity_id
          ? h("span", {}, this.t("intent_target",
              { service: intent.service ?? "—", entity: intent.entity_id }))
          : null,
        intent.reason ? h("span", {}, this.t("intent_reason", { reason: intent.reason })) : null,
        h("span", {}, intent.user ? this.t("said_by", { name: intent.user }) : this.t("intent_no_user")),
        h("span", { class: "when" }, this.formatWhen(intent.when))),
    )))];
  }

  // -- what the reflect passes gave back -------------------------------------------------------
  _scopeChip(scope) {
    return h("span", { class: `chip scope ${scope}` },
      this.t(scope === "private" ? "scope_private" : "scope_household"));
  }

  renderInbox(items) {
    if (!items.length) return [h("p", { class: "empty" }, this.t("no_inbox"))];
    return [h("ul", { class: "inbox" }, items.map((item) => h(
      "li",
      { class: `observation ${item.box} ${item.scope}` },
      h("p", { class: "quote" }, item.content),
      h("div", { class: "meta" },
        h("span", { class: `chip urgency ${item.urgency}` }, this.t(`urgency_${item.urgency}`)),
        h("span", { class: `chip box ${item.box}` }, this.t(`box_${item.box}`)),
        this._scopeChip(item.scope),
        h("span", { class: "when" }, this.formatWhen(item.when))),
    )))];
  }

  renderSynthesis(syntheses) {
    const shown = ["private", "household"].filter((scope) => syntheses[scope]);
    if (!shown.length) return [h("p", { class: "empty" }, this.t("no_synthesis"))];
    return shown.map((scope) => {
      const synthesis = syntheses[scope];
      return h(
        "div",
        { class: `synthesis ${scope}` },
        h("h3", {}, this.t(`synthesis_of_${scope}`)),
        h("div", { class: "meta" },
          this._scopeChip(scope),
          h("span", { class: "chip trigger" }, this.t(`trigger_${synthesis.trigger}`)),
          h("span", { class: "when" }, this.formatWhen(synthesis.when))),
        synthesis.elements.length
          ? h("dl", { class: "elements" }, synthesis.elements.flatMap((element) => [
              h("dt", { class: element.field }, this.t(`synthesis_${element.field}`)),
              h("dd", {}, h("ul", { class: "texts" },
                element.texts.map((text) => h("li", {}, text)))),
            ]))
          : h("p", { class: "empty" }, this.t("synthesis_empty")),
      );
    });
  }

  // -- administration ---------------------------------------------------------------------------
  renderAdmin(admin) {
    const mode = (value) => this.t(`mode_${value}`);
    return [
      h("dl", { class: "qualification" },
        h("dt", {}, this.t("model")), h("dd", {}, admin.model),
        h("dt", {}, this.t("model_digest")), h("dd", {}, h("code", {}, admin.model_digest ?? "—")),
        h("dt", {}, this.t("processor_digest")), h("dd", {}, h("code", {}, admin.processor_digest)),
        h("dt", {}, this.t("qualified")),
        h("dd", { class: "qualified" }, this.t(admin.qualified ? "qualified_yes" : "qualified_no")),
        h("dt", {}, this.t("mode_requested")), h("dd", {}, mode(admin.requested_mode)),
        h("dt", {}, this.t("mode_effective")), h("dd", {}, mode(admin.effective_mode)),
      ),
      h("button", { class: "qualify", onclick: (event) => this._qualify(event.target) },
        this.t("qualify")),
      h("h2", {}, this.t("users")),
      h("table", { class: "users" },
        h("tr", {}, h("th", {}, this.t("user")), h("th", {}, this.t("private_memories")), h("th", {})),
        admin.users.map((user) => h("tr", { "data-user": user.name ?? user.id },
          h("td", {}, user.name ?? this.t("former_user")),
          h("td", { class: "count" }, String(user.private_memories)),
          h("td", {}, h("button", {
            class: "danger purge", disabled: user.private_memories === 0,
            onclick: () => this._purge(user),
          }, this.t("purge"))),
        ))),
    ];
  }

  async _qualify(button) {
    button.disabled = true;
    this._status(this.t("qualifying"), true);
    const result = await this._call({ type: "alto/qualify" }).catch(() => null);
    button.disabled = false;
    if (!result) return;
    this._status(result.passed
      ? this.t("qualify_passed", { cases: result.cases })
      : this.t("qualify_failed", { failed: result.failed, cases: result.cases }), result.passed);
  }

  _purge(user) {
    this._ask(this.t("purge_confirm_title", { name: user.name ?? this.t("former_user") }),
      this.t("purge_confirm_text", { count: user.private_memories }), this.t("purge"), async () => {
        const done = await this._call({ type: "alto/purge", owner: user.id }).catch(() => null);
        if (done) this._status(this.t("forgotten", { count: done.forgotten.length }), true);
      });
  }
}

if (!customElements.get("alto-panel")) customElements.define("alto-panel", AltoPanel);
