// MONJYU web app: one page over the JSON API of monjyu.web.app. Every text from the index or the
// query is put in the page with textContent (never parsed as HTML).
"use strict";

const STRINGS = {
  en: {
    search: "Search", collection: "Collection", go: "Search", placeholder: "Ask the papers a question…",
    mode: "Mode", preset: "Effort (lazy)", level: "Index level (lazy)", filters: "Filters", f_type: "Type", f_author: "Author", f_year: "Year",
    f_path: "Path", f_from: "From", f_to: "To", f_collection: "Zotero collection", f_tag: "Tag",
    f_item_type: "Item type", f_cites: "Cites", f_cited_by: "Cited by", in_zotero: "open in Zotero", trace: "Lazy search: path through the communities",
    t_depth: "Depth", t_community: "Community", t_units: "Units", t_sentences: "Sentences", t_relevant: "Relevant",
    documents: "Documents", d_title: "Title", d_authors: "Authors", d_year: "Year", d_pages: "Pages",
    d_type: "Type", d_units: "Passages", failures: "Files the last build skipped", none: "none", map: "Community map",
    close: "Close", answer: "Answer", extractive: "Answer (extractive: sentences from the sources, no LLM)",
    insufficient: "No answer", passages: "Passages", of: "of", page: "p.", searching: "Searching…",
    calls: "LLM calls", tokens: "tokens", report: "Report", levels: "levels", level2: "level 2", extracted: "passages extracted",
    reused: "read from the index", budget: "budget", stop: "stop", claims: "claims",
    relevant_sentences: "relevant sentences", community: "Community", no_results: "No passages found.",
    mode_auto: "auto (by question type)", mode_hybrid: "hybrid", mode_lazy: "lazy (LazyGraphRAG)",
    mode_hybridrag: "HybridRAG", preset_default: "default",
    checks: "Each sentence checked against the passages", support: "support",
    s_supported: "supported", s_recited: "re-cited", s_cited: "cited", s_dropped: "dropped: no passage supports it",
    s_unchecked: "not checked",
    paper_page: "Paper page", references: "References", cited_by: "Cited by in this collection",
    in_collection: "in this collection", searched_for: "Searched for", as_written: "search as written instead",
  },
  ja: {
    search: "検索", collection: "コレクション", go: "検索", placeholder: "論文に質問する…",
    mode: "モード", preset: "探索量 (lazy)", level: "索引レベル (lazy)", filters: "絞り込み", f_type: "種類", f_author: "著者", f_year: "年",
    f_path: "パス", f_from: "開始日", f_to: "終了日", f_collection: "Zotero コレクション", f_tag: "タグ",
    f_item_type: "アイテムの種類", f_cites: "次を引用している", f_cited_by: "次に引用されている", in_zotero: "Zotero で開く", trace: "Lazy 検索: コミュニティの探索経路",
    t_depth: "深さ", t_community: "コミュニティ", t_units: "単位", t_sentences: "文", t_relevant: "関連",
    documents: "文書", d_title: "タイトル", d_authors: "著者", d_year: "年", d_pages: "ページ",
    d_type: "種類", d_units: "パッセージ", failures: "前回の索引作成で読めなかったファイル", none: "なし",
    map: "コミュニティ地図", close: "閉じる", answer: "回答",
    extractive: "回答 (抽出型: 出典の文をそのまま選択、LLM なし)", insufficient: "回答なし", passages: "パッセージ",
    of: "/", page: "p.", searching: "検索中…", calls: "LLM 呼び出し", tokens: "トークン", report: "レポート", levels: "レベル", level2: "レベル 2",
    extracted: "件の一節を抽出", reused: "件を索引から再利用", budget: "予算",
    stop: "停止理由", claims: "主張", relevant_sentences: "関連文", community: "コミュニティ",
    no_results: "該当するパッセージがありません。", mode_auto: "自動 (質問の種類で選択)", mode_hybrid: "ハイブリッド",
    mode_lazy: "lazy (LazyGraphRAG)", mode_hybridrag: "HybridRAG", preset_default: "既定",
    checks: "各文を出典と照合した結果", support: "裏付け", s_supported: "裏付けあり", s_recited: "出典を付け替え",
    s_cited: "出典を追加", s_dropped: "削除: 裏付ける出典なし", s_unchecked: "照合せず",
    paper_page: "論文のページ", references: "参考文献", cited_by: "このコレクション内の被引用",
    in_collection: "コレクション内", searched_for: "検索した語句", as_written: "入力どおりに検索する",
  },
};

const $ = (id) => document.getElementById(id);
let lang = localStorage.getItem("monjyu-lang") ||
  ((navigator.languages || [navigator.language || "en"]).some((l) => l.toLowerCase().startsWith("ja")) ? "ja" : "en");
const t = (key) => STRINGS[lang][key] ?? STRINGS.en[key] ?? key;
let info = null;
let lastHits = [];

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

function applyLanguage() {
  document.documentElement.lang = lang;
  document.querySelectorAll("[data-i18n]").forEach((n) => { n.textContent = t(n.dataset.i18n); });
  document.querySelectorAll("[data-i18n-placeholder]").forEach((n) => { n.placeholder = t(n.dataset.i18nPlaceholder); });
  $("lang").textContent = lang === "ja" ? "English" : "日本語";
  if (info) fillSelects();
}

function fillSelects() {
  const mode = $("mode").value || "auto", preset = $("preset").value, level = $("level").value;
  $("mode").replaceChildren(...info.modes.map((m) => el("option", { value: m }, t("mode_" + m))));
  $("preset").replaceChildren(el("option", { value: "" }, t("preset_default")),
    ...info.presets.map((p) => el("option", { value: p }, p)));
  $("level").replaceChildren(el("option", { value: "" }, t("preset_default")),
    ...info.levels.map((n) => el("option", { value: String(n) }, String(n))));
  $("mode").value = mode;
  $("preset").value = preset;
  $("level").value = level;
  lazyOptions();
}

function lazyOptions() {  // effort and level are lazy search's: off for the other modes
  $("preset").disabled = $("level").disabled = $("mode").value !== "lazy";
}

function where(hit) {
  const parts = [hit.source_path || hit.document_id];
  if (hit.kind === "annotation") parts.push(hit.section);  // "Your highlight on p. 4": the page is in it
  else {
    if (hit.section) parts.push("§" + hit.section.split(" > ").pop());
    if (hit.page) parts.push(t("page") + hit.page);
  }
  if (hit.year) parts.push(String(hit.year));
  return parts.join(" · ");
}

function showView(name) {
  for (const v of ["search", "collection", "paper"]) {
    $("view-" + v).hidden = v !== name;
    if (v !== "paper") $("tab-" + v).setAttribute("aria-current", v === name ? "page" : "false");
  }
  if (name === "collection") loadCollection();
}

function showError(message) {
  $("error").textContent = message;
  $("error").hidden = !message;
}

// ----------------------------------------------------------------- search

// The query's words are searched as the index spells them (search.spelling), unless the user asks
// for the query as written: that search only, the next one corrects again.
async function search(event, asWritten = false) {
  if (event) event.preventDefault();
  const query = $("q").value.trim();
  if (!query) return;
  const filters = {};
  for (const key of info.filters) {
    const value = $("f-" + key).value.trim();
    if (value) filters[key] = value;
  }
  const body = { query, mode: $("mode").value, filters };
  if ($("mode").value === "lazy" && $("preset").value) body.preset = $("preset").value;
  if ($("mode").value === "lazy" && $("level").value) body.level = Number($("level").value);
  if (asWritten) body.spelling = false;
  history.replaceState(null, "", "?q=" + encodeURIComponent(query) + "&mode=" + encodeURIComponent(body.mode));
  showError("");
  $("answer").hidden = false;
  $("answer-title").textContent = t("searching");
  $("answer-text").textContent = "";
  $("answer-notice").hidden = true;
  $("spelling").hidden = true;
  $("answer-checks").hidden = true;
  $("citations").replaceChildren();
  $("cost").textContent = "";
  $("trace").hidden = true;
  $("results-box").hidden = true;
  $("answer").dataset.chunks = "0";
  const response = await fetch("/api/search", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  if (!response.ok) {
    $("answer").hidden = true;
    showError((await response.json()).error || response.statusText);
    return;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (value) buffer += decoder.decode(value, { stream: true });
    let newline;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      handleEvent(JSON.parse(buffer.slice(0, newline)));
      buffer = buffer.slice(newline + 1);
    }
    if (done) break;
  }
}

function handleEvent(event) {
  if (event.token !== undefined) {
    $("answer-title").textContent = t("answer");
    $("answer-text").append(event.token);
    $("answer").dataset.chunks = String(Number($("answer").dataset.chunks) + 1);
  } else if (event.error !== undefined) {
    $("answer").hidden = true;
    showError(event.error);
  } else if (event.result) {
    renderResult(event.result);
  }
}

function renderResult(result) {
  const answer = result.answer;
  const corrected = Object.entries(result.spelling || {});
  $("spelling").replaceChildren(...(corrected.length ? [
    `${t("searched_for")}: `, el("strong", {}, result.query), ` (${corrected.map(([w, c]) => `${w} → ${c}`).join(", ")}) · `,
    el("button", { type: "button", class: "cite", onclick: () => search(null, true) }, t("as_written"))] : []));
  $("spelling").hidden = !corrected.length;
  if (answer) {
    $("answer-title").textContent = t(answer.kind === "llm" ? "answer" : answer.kind);
    renderAnswerText(answer);
    renderChecks(answer.sentences || []);
    $("answer-notice").textContent = answer.notice || "";
    $("answer-notice").hidden = !answer.notice;
    $("citations").replaceChildren(...answer.citations.map((c) => el("li", { value: c.number },
      el("button", { type: "button", class: "cite", "data-cite": c.number, onclick: () => openReader(c, c.start_char, c.end_char) },
        c.document_title || c.document_id),
      " ", el("span", { class: "cost" }, where(c)), " ", paperLink(c.document_id, t("paper_page")),
      ...(c.zotero && (c.zotero.open_pdf || c.zotero.open) ? [" ", el("a", { class: "zotero", href: c.zotero.open_pdf || c.zotero.open }, t("in_zotero"))] : []))));
  } else {
    $("answer").hidden = true;
  }
  const u = result.usage || {}, ms = (result.timings_ms || {}).total_ms;
  $("cost").textContent = `${result.mode} · ${t("calls")} ${u.calls || 0} · ${t("tokens")} ${u.prompt_tokens || 0}+${u.completion_tokens || 0}` +
    (ms !== undefined ? ` · ${Math.round(ms)} ms` : "");
  if (result.trace) renderTrace(result.trace);
  renderHits(result.hits, `${t("passages")} (${result.hits.length} ${t("of")} ${result.total_count})`);
}

function renderAnswerText(answer) {
  // "[2]" and "[1, 3]" become buttons that open the cited passage
  const byNumber = new Map(answer.citations.map((c) => [c.number, c]));
  const parts = answer.text.split(/(\[\d+(?:,\s*\d+)*\])/);
  $("answer-text").replaceChildren(...parts.map((part) => {
    const m = part.match(/^\[(\d+(?:,\s*\d+)*)\]$/);
    if (!m) return document.createTextNode(part);
    const span = el("span", {});
    for (const n of m[1].split(/,\s*/).map(Number)) {
      const c = byNumber.get(n);
      span.append(c ? el("button", { type: "button", class: "cite", "data-cite": n, onclick: () => openReader(c, c.start_char, c.end_char) }, `[${n}]`)
                    : `[${n}]`);
    }
    return span;
  }));
}

function renderChecks(sentences) {
  // What the check of an LLM answer did to each sentence, with its support (0-1)
  $("answer-checks").hidden = !sentences.length;
  $("answer-check-list").replaceChildren(...sentences.map((s) => el("li", { "data-status": s.status },
    `${t("s_" + s.status)}` + (s.support === null ? "" : ` · ${t("support")} ${s.support.toFixed(2)}`) +
    (s.citations.length ? ` · [${s.citations.join(", ")}]` : "") + ` — ${s.text}`)));
}

function renderTrace(trace) {
  $("trace").hidden = false;
  $("trace-summary").textContent = `${t("budget")} ${trace.budget_used}/${trace.budget_total} · ` +
    `${trace.relevant_sentences.length} ${t("relevant_sentences")} · ${trace.claims.length} ${t("claims")} · ` +
    `${t("stop")}: ${trace.stop_reason} (${trace.assessor})` +
    ((trace.levels_reached || []).length ? ` · ${t("levels")} ${trace.levels_reached.join(", ")}` : "") +
    (trace.level2 && trace.level2.units_sent !== undefined ?
      ` · ${t("level2")}: ${trace.level2.units_sent} ${t("extracted")}, ${trace.level2.units_reused} ${t("reused")}` : "");
  $("trace-table").tBodies[0].replaceChildren(...trace.communities_visited.map((v) =>
    el("tr", {}, el("td", {}, v.depth), el("td", {}, `#${v.id} L${v.level} ${v.title}`), el("td", {}, v.units_tested),
       el("td", {}, v.sentences_tested), el("td", {}, v.relevant))));
  $("claims").replaceChildren(...trace.claims.slice(0, 10).map((c) => el("li", {}, c.statement)));
}

function renderHits(hits, title) {
  lastHits = hits;
  $("results-box").hidden = false;
  $("results-title").textContent = title;
  if (!hits.length) {
    $("results").replaceChildren(el("li", {}, t("no_results")));
    return;
  }
  $("results").replaceChildren(...hits.map((h, i) => {
    const flat = h.text.replace(/\s+/g, " ");
    const text = flat.length > 500 ? flat.slice(0, 500) + "…" : flat;
    return el("li", {},
      el("div", { class: "hit", tabindex: "0", "data-index": i, onclick: () => openReader(h, h.start_char, h.end_char),
                  onkeydown: (e) => { if (e.key === "Enter") openReader(h, h.start_char, h.end_char); } },
        el("div", { class: "title" }, h.document_title || h.document_id),
        el("div", { class: "where" }, where(h)),
        el("p", { class: "text" }, text)));
  }));
}

function moveThroughResults(event) {
  if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
  const items = [...document.querySelectorAll("#results .hit")];
  if (!items.length) return;
  const at = items.indexOf(document.activeElement);
  let next;
  if (event.target === $("q")) next = event.key === "ArrowDown" ? 0 : -1;
  else if (at >= 0) next = at + (event.key === "ArrowDown" ? 1 : -1);
  else return;
  event.preventDefault();
  if (next < 0) $("q").focus();
  else items[Math.min(next, items.length - 1)].focus();
}

// ----------------------------------------------------------------- reader

async function openReader(ref, start, end) {
  const params = new URLSearchParams({ id: ref.document_id, unit: ref.text_unit_id, context: "1" });
  const response = await fetch("/api/document?" + params);
  const doc = await response.json();
  if (!response.ok) { showError(doc.error); return; }
  const ctx = doc.context;
  $("reader").hidden = false;
  $("reader-title").textContent = doc.title || doc.id;
  const authors = (doc.authors || []).join(", ");
  $("reader-where").textContent = [doc.source_path, authors, doc.year, ctx.section && "§" + ctx.section,
                                   ctx.page && t("page") + ctx.page].filter(Boolean).join(" · ");
  $("reader-paper").href = paperHref(doc.id);
  const a = Math.max(0, start - ctx.start_char), b = Math.max(a, Math.min(ctx.text.length, end - ctx.start_char));
  const mark = el("mark", {}, ctx.text.slice(a, b));
  $("reader-text").replaceChildren(ctx.text.slice(0, a), mark, ctx.text.slice(b));
  const img = $("reader-page");
  const page = ref.page || ctx.page;
  if (doc.file_type === "pdf" && page) {
    img.src = "/api/page?" + new URLSearchParams({ id: doc.id, page, start, end });
    img.alt = `${doc.title} ${t("page")}${page}`;
    img.hidden = false;
  } else {
    img.hidden = true;
    img.removeAttribute("src");
  }
  $("reader").scrollTop = 0;
  mark.scrollIntoView({ block: "nearest" });
  $("reader-close").focus({ preventScroll: true });
}

// ----------------------------------------------------------------- papers

const paperHref = (id) => "?" + new URLSearchParams({ paper: id });
const paperLink = (id, text) => el("a", { class: "paper-link", href: paperHref(id) }, text);

let leaving = false;  // a link to another paper page was followed: its fetches end, and that is no error
window.addEventListener("pagehide", () => { leaving = true; });

async function showPaper(id) {
  // One paper: metadata, who in the collection cites it (with the citing sentences), its references
  let response, p;
  try {
    response = await fetch("/api/paper?" + new URLSearchParams({ id }));
    p = await response.json();
  } catch (error) {
    if (!leaving) showError(String(error));
    return;
  }
  if (!response.ok) { showError(p.error); return; }
  showView("paper");
  $("paper-title").textContent = p.title || p.id;
  $("paper-authors").textContent = (p.authors || []).join(", ");
  $("paper-facts").textContent = [p.year, p.pages && `${p.pages} pp.`, p.doi && "doi:" + p.doi,
                                  p.arxiv_id && "arXiv:" + p.arxiv_id, p.source_path].filter(Boolean).join(" · ");
  $("paper-cited-by-title").textContent = `${t("cited_by")} (${p.cited_by.length})`;
  $("paper-cited-by").replaceChildren(...p.cited_by_contexts.map((c) => el("li", { class: "citing" },
    paperLink(c.document_id, c.title || c.document_id), " ",
    el("span", { class: "cost" }, c.page ? t("page") + c.page : ""), el("p", { class: "text" }, c.sentence))));
  $("paper-references-title").textContent = `${t("references")} (${p.references})`;
  $("paper-references").replaceChildren(...p.reference_list.map((r) => el("li", { value: r.index },
    r.text, ...(r.document_id ? [" ", paperLink(r.document_id, "→ " + t("in_collection"))] : []))));
}

// ----------------------------------------------------------------- collection

async function loadCollection() {
  const response = await fetch("/api/documents?limit=500");
  const page = await response.json();
  if (!response.ok) { showError(page.error); return; }
  $("documents").tBodies[0].replaceChildren(...page.documents.map((d) => el("tr", {},
    el("td", {}, paperLink(d.id, d.title || d.id)), el("td", {}, (d.authors || []).join(", ")), el("td", {}, d.year ?? ""),
    el("td", {}, d.pages ?? ""), el("td", {}, d.file_type), el("td", {}, d.text_units))));
  $("failures").replaceChildren(...(page.failures.length ? page.failures.map((f) => el("li", {}, `${f.path}: ${f.reason}`))
                                                         : [el("li", {}, t("none"))]));
  if (!$("map").getAttribute("src")) $("map").src = "/map";
}

async function showCommunity(id) {
  const response = await fetch("/api/community?id=" + encodeURIComponent(id));
  const c = await response.json();
  if (!response.ok) { showError(c.error); return; }
  $("answer").hidden = !c.report;
  if (c.report) {  // a Level 4 report an LLM wrote for this community
    $("answer-title").textContent = `${t("report")}: ${c.report.title}`;
    $("answer-text").replaceChildren(el("p", {}, c.report.summary),
                                     el("ul", {}, ...c.report.claims.map((s) => el("li", {}, s))));
  }
  renderHits(c.hits, `${t("community")} #${c.id} (L${c.level}): ${c.title}`);
}

// ----------------------------------------------------------------- start

async function start() {
  info = await (await fetch("/api/info")).json();
  applyLanguage();
  $("lang").addEventListener("click", () => {
    lang = lang === "ja" ? "en" : "ja";
    localStorage.setItem("monjyu-lang", lang);
    applyLanguage();
  });
  $("mode").addEventListener("change", lazyOptions);
  $("search-form").addEventListener("submit", search);
  document.addEventListener("keydown", moveThroughResults);
  $("reader-close").addEventListener("click", () => { $("reader").hidden = true; });
  $("reader").addEventListener("keydown", (e) => { if (e.key === "Escape") $("reader").hidden = true; });
  $("tab-search").addEventListener("click", () => showView("search"));
  $("tab-collection").addEventListener("click", () => showView("collection"));
  showView("search");
  if (!info.status.exists) showError(info.status.hint);
  const params = new URLSearchParams(location.search);
  if (params.get("paper")) showPaper(params.get("paper"));
  else if (params.get("community")) showCommunity(params.get("community"));
  else if (params.get("q")) {
    $("q").value = params.get("q");
    if (info.modes.includes(params.get("mode"))) { $("mode").value = params.get("mode"); lazyOptions(); }
    search();
  }
}

start();
