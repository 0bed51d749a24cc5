/* BenchBuilder report: a static single-page app over data/*.js files.
 *
 * Safety rule: every string from a run (model names, prompts, answers, judgments, labels) is
 * untrusted. It only ever reaches the page through textContent / text nodes or as a Plotly label
 * with its markup characters escaped; no innerHTML anywhere. Links from Markdown keep only
 * http(s) and mailto targets. */
(function () {
  "use strict";

  // ------------------------------------------------------------------ data loading
  var store = {}, waiting = {};
  window.BBR_LOAD = function (key, value) {
    store[key] = value;
    (waiting[key] || []).forEach(function (f) { f(value); });
    delete waiting[key];
    if (key === "summary") { start(); }
  };
  function load(key) {
    // fetch() of file:// is blocked in Chromium, so data files are scripts, added on demand.
    return new Promise(function (resolve, reject) {
      if (key in store) { resolve(store[key]); return; }
      var first = !(key in waiting);
      (waiting[key] = waiting[key] || []).push(resolve);
      if (first) {
        var s = document.createElement("script");
        s.src = "data/" + encodeURIComponent(key) + ".js";
        s.onerror = function () { reject(new Error("cannot load data/" + key + ".js")); };
        document.body.appendChild(s);
      }
    });
  }

  // ------------------------------------------------------------------ DOM helpers
  function el(tag, props) {
    var e = document.createElement(tag);
    if (props) {
      Object.keys(props).forEach(function (k) {
        var v = props[k];
        if (v === undefined || v === null) return;
        if (k === "cls") e.className = v;
        else if (k === "text") e.textContent = String(v);
        else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), v);
        else if (k === "href") e.setAttribute("href", safeUrl(v) || "#");
        else e.setAttribute(k, String(v));
      });
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(parent, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { add(parent, c); }); return; }
    parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }
  function safeUrl(u) {
    u = String(u).trim();
    if (/^(https?:|mailto:)/i.test(u)) return u;
    if (/^(#|data\/[\w.\-]+$)/.test(u)) return u; // our own anchors and downloads
    return null;
  }
  function fmt(v, d) {
    if (v === null || v === undefined || v === "") return "";
    if (typeof v === "number") return isFinite(v) ? v.toFixed(d === undefined ? 1 : d) : "";
    return String(v);
  }
  function pct(v) { return v === null || v === undefined ? "" : (100 * v).toFixed(1) + "%"; }
  // Plotly understands a little HTML in labels: escape it so a label is only ever text.
  function pt(s) { return String(s === null || s === undefined ? "" : s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"); }
  function table(cols, rows) {
    var t = el("table", null, el("thead", null, el("tr", null, cols.map(function (c) { return el("th", { text: c.label }); }))));
    var body = el("tbody");
    rows.forEach(function (r) {
      body.appendChild(el("tr", null, cols.map(function (c) {
        var v = c.render ? c.render(r) : fmt(r[c.key], c.digits);
        return el("td", { cls: c.cls || (typeof r[c.key] === "number" ? "num" : "") }, v);
      })));
    });
    t.appendChild(body);
    return t;
  }
  function autoCols(rows, digits) {
    // One column per key; whole-number columns (counts, tokens) print without decimals.
    return Object.keys(rows[0] || {}).map(function (k) {
      var ints = rows.every(function (r) { return r[k] === null || typeof r[k] !== "number" || Number.isInteger(r[k]); });
      return { label: k, key: k, digits: ints ? 0 : digits };
    });
  }
  function select(label, options, value, onchange) {
    var s = el("select", { "aria-label": label, onchange: function () { onchange(s.value); } });
    options.forEach(function (o) {
      var opt = el("option", { value: o.value, text: o.label });
      if (String(o.value) === String(value)) opt.selected = true;
      s.appendChild(opt);
    });
    return el("label", null, label + " ", s);
  }
  var plotlyReady = null;
  function needPlotly() {
    // Plotly (4.8 MB) is loaded only by pages that draw with it; the leaderboard draws its own SVG.
    if (!plotlyReady) plotlyReady = new Promise(function (resolve, reject) {
      if (window.Plotly) { resolve(window.Plotly); return; }
      var s = document.createElement("script");
      s.src = "assets/plotly.min.js";
      s.onload = function () { resolve(window.Plotly); };
      s.onerror = function () { reject(new Error("cannot load assets/plotly.min.js")); };
      document.body.appendChild(s);
    });
    return plotlyReady;
  }
  function plot(parent, div, data, layout) {
    parent.appendChild(div); // attached first, so Plotly sizes it to the page width
    layout = Object.assign({ margin: { l: 60, r: 20, t: 30, b: 60 }, font: { size: 12 } }, layout || {});
    needPlotly().then(function (P) { if (div.isConnected) P.newPlot(div, data, layout, { displaylogo: false, responsive: true }); });
    return div;
  }
  var SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    if (text !== undefined) e.textContent = String(text);
    return e;
  }
  function niceTicks(lo, hi, n) {
    var step = Math.pow(10, Math.floor(Math.log10((hi - lo) / n || 1))), err = (hi - lo) / n / step;
    step *= err >= 7.5 ? 10 : err >= 3.5 ? 5 : err >= 1.5 ? 2 : 1;
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push(+v.toFixed(10));
    return out;
  }
  function forestPlot(parent, rows) {
    // Hand-drawn SVG: a leaderboard of many models draws at once, without the plotting library.
    var box = el("div", { cls: "forest", id: "forest" });
    parent.appendChild(box);
    var W = Math.max(500, box.clientWidth || 900), rowH = 24, top = 10, bottom = 40;
    var longest = rows.reduce(function (m, r) { return Math.max(m, String(r.model).length); }, 0);
    var L = Math.min(420, 20 + 7 * longest), R = 30, H = top + bottom + rowH * rows.length;
    var lo = Math.min.apply(null, rows.map(function (r) { return r.lower === null ? r.score : r.lower; }));
    var hi = Math.max.apply(null, rows.map(function (r) { return r.upper === null ? r.score : r.upper; }));
    var pad = (hi - lo) * 0.05 || 1; lo -= pad; hi += pad;
    var x = function (v) { return L + (W - L - R) * (v - lo) / (hi - lo); };
    var g = svg("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "forest plot of win rates" });
    niceTicks(lo, hi, 8).forEach(function (t) {
      g.appendChild(svg("line", { x1: x(t), x2: x(t), y1: top, y2: H - bottom, stroke: "#e5e7eb" }));
      g.appendChild(svg("text", { x: x(t), y: H - bottom + 16, "text-anchor": "middle", "font-size": 11, fill: "#667085" }, t));
    });
    g.appendChild(svg("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle", "font-size": 12, fill: "#1d2430" }, "win rate (%)"));
    rows.forEach(function (r, k) {
      var y = top + rowH * k + rowH / 2, name = String(r.model);
      var label = svg("text", { x: L - 8, y: y + 4, "text-anchor": "end", "font-size": 12, fill: "#1d2430" }, name.length > 58 ? name.slice(0, 57) + "…" : name);
      label.appendChild(svg("title", {}, name));
      g.appendChild(label);
      if (r.lower !== null && r.upper !== null) g.appendChild(svg("line", { x1: x(r.lower), x2: x(r.upper), y1: y, y2: y, stroke: "#1f77b4", "stroke-width": 2 }));
      var c = svg("circle", { cx: x(r.score), cy: y, r: 4.5, fill: "#1f77b4", "class": "point" });
      c.appendChild(svg("title", {}, name + ": " + fmt(r.score) + (r.lower !== null ? " (" + fmt(r.lower) + " – " + fmt(r.upper) + ")" : "")));
      g.appendChild(c);
    });
    box.appendChild(g);
    return box;
  }

  // ------------------------------------------------------------------ Markdown (safe subset)
  var KEYWORDS = /^(def|class|return|if|elif|else|for|while|in|import|from|as|with|try|except|finally|raise|lambda|yield|pass|break|continue|and|or|not|is|None|True|False|function|var|let|const|new|this|null|true|false|undefined|public|private|static|void|int|float|double|char|bool|struct|fn|mut|impl|use|package|func|go|select|case|switch|default|async|await|export|extends|interface|type|typeof|instanceof|SELECT|FROM|WHERE|JOIN|INSERT|UPDATE|DELETE|GROUP|ORDER|BY)$/;
  var TOKEN = /(\/\/[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\/|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`|\b\d+(?:\.\d+)?\b|\b[A-Za-z_]\w*\b)/g;
  function highlight(code) {
    var out = document.createDocumentFragment(), last = 0, m;
    TOKEN.lastIndex = 0;
    while ((m = TOKEN.exec(code)) !== null) {
      if (m.index > last) out.appendChild(document.createTextNode(code.slice(last, m.index)));
      var t = m[0], c = t[0];
      var cls = (c === "#" || t.slice(0, 2) === "//" || t.slice(0, 2) === "/*") ? "tok-c" : (c === '"' || c === "'" || c === "`") ? "tok-s" : /\d/.test(c) ? "tok-n" : KEYWORDS.test(t) ? "tok-k" : null;
      out.appendChild(cls ? el("span", { cls: cls, text: t }) : document.createTextNode(t));
      last = m.index + t.length;
    }
    if (last < code.length) out.appendChild(document.createTextNode(code.slice(last)));
    return out;
  }
  var INLINE = /(`[^`\n]+`|\*\*[^*\n]+\*\*|__[^_\n]+__|\*[^*\s][^*\n]*\*|\[[^\]\n]*\]\([^)\s]*\))/;
  function inline(text, parent) {
    var rest = text;
    while (rest.length) {
      var m = INLINE.exec(rest);
      if (!m) { parent.appendChild(document.createTextNode(rest)); break; }
      if (m.index) parent.appendChild(document.createTextNode(rest.slice(0, m.index)));
      var t = m[0];
      if (t[0] === "`") parent.appendChild(el("code", { text: t.slice(1, -1) }));
      else if (t.slice(0, 2) === "**" || t.slice(0, 2) === "__") inline(t.slice(2, -2), parent.appendChild(el("strong")));
      else if (t[0] === "*") inline(t.slice(1, -1), parent.appendChild(el("em")));
      else {
        var lm = /^\[([^\]]*)\]\(([^)]*)\)$/.exec(t), url = safeUrl(lm[2]);
        if (url && /^(https?:|mailto:)/i.test(url)) parent.appendChild(el("a", { href: url, rel: "noopener noreferrer nofollow", target: "_blank", text: lm[1] || url }));
        else parent.appendChild(document.createTextNode(t)); // javascript: and friends stay text
      }
      rest = rest.slice(m.index + t.length);
    }
    return parent;
  }
  function markdown(src) {
    var root = el("div", { cls: "md" });
    if (src === null || src === undefined) { root.appendChild(el("p", { cls: "muted", text: "(no text)" })); return root; }
    var lines = String(src).replace(/\r\n?/g, "\n").split("\n"), i = 0, para = [], list = null;
    function flush() {
      if (para.length) {
        // Line breaks inside a paragraph are kept: answers (verse, ABC notation, addresses) rely on them.
        var p = el("p");
        para.forEach(function (ln, k) { if (k) p.appendChild(el("br")); inline(ln, p); });
        root.appendChild(p);
        para = [];
      }
      list = null;
    }
    while (i < lines.length) {
      var line = lines[i], m;
      if ((m = /^\s*(```|~~~)\s*([\w+#.\-]*)/.exec(line))) {
        flush();
        var fence = m[1], code = [];
        i++;
        while (i < lines.length && lines[i].trim().indexOf(fence) !== 0) { code.push(lines[i]); i++; }
        i++;
        var codeEl = el("code", m[2] ? { "data-lang": m[2] } : null);
        codeEl.appendChild(highlight(code.join("\n")));
        root.appendChild(el("pre", null, codeEl));
        continue;
      }
      if (!line.trim()) { flush(); i++; continue; }
      if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) { flush(); root.appendChild(inline(m[2], el("h" + Math.min(6, m[1].length + 2)))); i++; continue; }
      if ((m = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line))) {
        var ordered = /\d/.test(m[1]);
        if (para.length) { var l0 = list; flush(); list = l0; }
        if (!list || list.ordered !== ordered) { list = root.appendChild(el(ordered ? "ol" : "ul")); list.ordered = ordered; }
        list.appendChild(inline(m[2], el("li")));
        i++; continue;
      }
      if ((m = /^>\s?(.*)$/.exec(line))) { flush(); root.appendChild(inline(m[1], el("blockquote"))); i++; continue; }
      if (/^\s*\|.*\|\s*$/.test(line)) {
        flush();
        var tbl = root.appendChild(el("table", { cls: "mdtable" })), nrow = 0;
        var isSep = function (ln) { return ln !== undefined && ln.trim().slice(1, -1).split("|").every(function (c) { return /^\s*:?-{2,}:?\s*$/.test(c); }); };
        while (i < lines.length && /^\s*\|.*\|\s*$/.test(lines[i])) {
          if (isSep(lines[i])) { i++; continue; }
          var cells = lines[i].trim().slice(1, -1).split("|"), th = nrow === 0 && isSep(lines[i + 1]);
          var tr = tbl.appendChild(el("tr"));
          cells.forEach(function (c) { tr.appendChild(inline(c.trim(), el(th ? "th" : "td"))); });
          nrow++; i++;
        }
        continue;
      }
      list = null;
      para.push(line);
      i++;
    }
    flush();
    return root;
  }
  window.BBR_markdown = markdown; // for tests

  // ------------------------------------------------------------------ routing
  var S = null, main = null;
  function route() {
    var h = location.hash.replace(/^#\/?/, "");
    return h ? h.split("/").map(function (p) { try { return decodeURIComponent(p); } catch (e) { return p; } }) : [];
  }
  function go(parts) { location.hash = "#/" + parts.map(function (p) { return encodeURIComponent(String(p)); }).join("/"); }
  function pages() {
    var p = [];
    if (S.arena.length) p.push(["leaderboard", "Leaderboard"], ["battles", "Battles"], ["judges", "Judges"]);
    if (S.curation.length) p.push(["curation", "Curation"]);
    if (S.index.length) p.push(["index", "Index"]);
    return p;
  }
  function start() {
    S = store.summary;
    main = document.getElementById("main");
    window.addEventListener("hashchange", render);
    render();
  }
  function render() {
    var r = route(), ps = pages();
    if (!ps.length) { clear(main).appendChild(el("p", { text: "This report holds no data." })); return; }
    var page = r[0] && ps.some(function (p) { return p[0] === r[0]; }) ? r[0] : ps[0][0];
    var nav = clear(document.getElementById("tabs"));
    ps.forEach(function (p) { nav.appendChild(el("a", { href: "#/" + p[0], cls: p[0] === page ? "active" : "", text: p[1] })); });
    clear(main);
    document.body.setAttribute("data-page", page);
    ({ leaderboard: pageLeaderboard, battles: pageBattles, judges: pageJudges, curation: pageCuration, index: pageIndex })[page](r.slice(1));
  }
  function srcSelect(list, i, onchange) {
    if (list.length < 2) return null;
    return select("Run", list.map(function (s, k) { return { value: k, label: s.name }; }), i, onchange);
  }
  function srcIndex(v, list) { var i = parseInt(v, 10); return i >= 0 && i < list.length ? i : 0; }

  // ------------------------------------------------------------------ leaderboard
  var lbState = { src: 0, judge: null, category: "(all)", variant: "raw" };
  function pageLeaderboard() {
    var A = S.arena[lbState.src] || S.arena[0];
    var judges = []; A.boards.forEach(function (b) { if (judges.indexOf(b.judge) < 0) judges.push(b.judge); });
    if (judges.indexOf(lbState.judge) < 0) lbState.judge = judges[0];
    var board = function (j, c, v) { return A.boards.filter(function (b) { return b.judge === j && b.category === c && b.variant === v; })[0]; };
    var hasStyle = !!board(lbState.judge, "(all)", "style");
    if (lbState.variant === "style" && (!hasStyle || lbState.category !== "(all)")) lbState.variant = "raw";
    var cats = A.boards.filter(function (b) { return b.judge === lbState.judge && b.variant === "raw"; }).map(function (b) { return b.category; });
    var cur = board(lbState.judge, lbState.category, lbState.variant) || board(lbState.judge, "(all)", "raw");
    var style = lbState.category === "(all)" ? board(lbState.judge, "(all)", "style") : null;
    var controls = el("div", { cls: "controls" },
      srcSelect(S.arena, lbState.src, function (v) { lbState.src = srcIndex(v, S.arena); render(); }),
      select("Judge", judges.map(function (j) { return { value: j, label: j === "pool" ? "all judges (pooled)" : j.indexOf("ensemble:") === 0 ? "ensemble: " + j.slice(9) + " per game" : j }; }), lbState.judge, function (v) { lbState.judge = v; render(); }),
      select("Category", cats.map(function (c) { return { value: c, label: c }; }), lbState.category, function (v) { lbState.category = v; render(); }),
      hasStyle ? select("Scores", [{ value: "raw", label: "raw" }, { value: "style", label: "style-controlled" }], lbState.variant, function (v) { lbState.variant = v; render(); }) : null,
      el("a", { cls: "dl", href: A.csv, download: "leaderboard.csv", text: "CSV" }),
      el("a", { cls: "dl", href: A.json, download: "leaderboard.json", text: "JSON" }));
    main.appendChild(el("h2", { text: "Win rate against " + A.baseline + " (%)" }));
    main.appendChild(controls);
    if (!cur) { main.appendChild(el("p", { text: "No leaderboard for this selection." })); return; }
    var styleBy = {}; (style ? style.rows : []).forEach(function (r) { styleBy[r.model] = r; });
    var cols = [
      { label: "rank", render: function (r) { return r.rank_lower === null || r.rank_lower === undefined ? fmt(r.rank, 0) : (r.rank_lower === r.rank_upper ? String(r.rank_lower) : r.rank_lower + "–" + r.rank_upper); }, cls: "num" },
      { label: "model", render: function (r) { return el("a", { href: "#/battles/" + lbState.src + "/" + encodeURIComponent(r.model), text: r.model }); }, cls: "model" },
      { label: lbState.variant === "style" ? "style-controlled" : "score", key: "score" },
      { label: "95% CI", render: function (r) { return r.lower === null ? "" : fmt(r.lower) + " – " + fmt(r.upper); }, cls: "num" },
    ];
    if (style && lbState.variant === "raw") cols.push({ label: "style-controlled", render: function (r) { var s = styleBy[r.model]; return s ? fmt(s.score) + " (" + fmt(s.lower) + " – " + fmt(s.upper) + ")" : ""; }, cls: "num" });
    cols.push(
      { label: "battles", key: "n_battles", digits: 0 },
      { label: "unparsed", render: function (r) { return [fmt(r.n_unparsed, 0), r.flag_unparsed ? el("span", { cls: "warn", title: "unparsed rate " + pct(r.unparsed_rate) + " stands out", text: " ⚠" }) : null]; }, cls: "num" },
      { label: "re-asked", render: function (r) { return [pct(r.reask_rate), r.flag_reask ? el("span", { cls: "warn", title: "re-ask rate stands out", text: " ⚠" }) : null]; }, cls: "num" },
      { label: "avg tokens", key: "avg_tokens", digits: 0 },
      { label: "tied with", render: function (r) { return Array.isArray(r.tied_with) ? r.tied_with.join(", ") : (r.tied_with || ""); }, cls: "model" });
    main.appendChild(el("div", { id: "leaderboard-table" }, table(cols, cur.rows)));
    main.appendChild(el("h3", { text: "Forest plot" }));
    forestPlot(main, cur.rows.filter(function (r) { return r.score !== null; }));
    if (window.performance && performance.mark) performance.mark("bbr-leaderboard-drawn");
    if (A.run_log.length || A.usage.length) {
      main.appendChild(el("h2", { text: "Run log" }));
      if (A.usage.length) main.appendChild(table(autoCols(A.usage, 4), A.usage));
      A.run_log.forEach(function (rec) { main.appendChild(el("pre", { cls: "raw", text: JSON.stringify(rec, null, 2) })); });
    }
  }

  // ------------------------------------------------------------------ battles
  var bState = { src: 0, model: null, judge: "", category: "", verdict: "", issue: "", q: "", limit: 200 };
  var ISSUES = [["", "any"], ["swap", "games disagree (swap undone)"], ["judges", "judges disagree"], ["unparsed", "unparsed"], ["failed", "failed"], ["reasked", "re-asked"]];
  function issueOf(b, kind) {
    if (kind === "swap") return b.sd;
    if (kind === "judges") return b.jd;
    if (kind === "unparsed") return b.g.some(function (g) { return g[1] === "unparsed" || g[1] === "conflict"; });
    if (kind === "failed") return b.g.some(function (g) { return g[1] === "failed"; });
    if (kind === "reasked") return b.g.some(function (g) { return g[3]; });
    return true;
  }
  function pageBattles(args) {
    var si = args.length ? srcIndex(args[0], S.arena) : bState.src;
    bState.src = si;
    var A = S.arena[si];
    if (!A.models.length) { main.appendChild(el("p", { text: "No battles." })); return; }
    var names = A.models.map(function (m) { return m.name; });
    var model = args[1] !== undefined && names.indexOf(args[1]) >= 0 ? args[1] : (names.indexOf(bState.model) >= 0 ? bState.model : names[0]);
    if (model !== bState.model) bState.limit = 200;
    bState.model = model;
    var wantQ = args[2], wantJ = args[3];
    var meta = A.models[names.indexOf(model)];
    var controls = el("div", { cls: "controls" });
    var wrap = el("div", { cls: "split" }), list = el("div", { cls: "list", id: "battle-list" }), detail = el("div", { id: "battle-detail" });
    wrap.appendChild(list); wrap.appendChild(detail);
    main.appendChild(el("h2", { text: "Battles against " + A.baseline }));
    main.appendChild(controls);
    main.appendChild(wrap);
    list.appendChild(el("p", { cls: "muted", text: "Loading " + model + "…" }));
    Promise.all([load(A.questions_key), load(meta.key)]).then(function (res) {
      var Q = res[0], B = res[1];
      function rerender() { go(["battles", si, bState.model]); }
      function filtered() {
        var needle = bState.q.toLowerCase();
        return B.filter(function (b) {
          if (bState.judge && b.j !== bState.judge) return false;
          var q = Q[b.q] || {};
          if (bState.category && (q.c || "") !== bState.category) return false;
          if (bState.verdict && b.v !== bState.verdict) return false;
          if (!issueOf(b, bState.issue)) return false;
          if (needle) {
            var hay = [b.q, q.p, q.b, b.a, b.g[0][2], b.g[1][2]].join("\n").toLowerCase();
            if (hay.indexOf(needle) < 0) return false;
          }
          return true;
        });
      }
      var cats = {}; Object.keys(Q).forEach(function (k) { if (Q[k].c) cats[Q[k].c] = 1; });
      var search = el("input", { type: "search", placeholder: "search prompts, answers, judgments", value: bState.q, "aria-label": "search" });
      var timer = null;
      search.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(function () { bState.q = search.value; bState.limit = 200; drawList(); }, 150); });
      clear(controls);
      add(controls, [
        srcSelect(S.arena, si, function (v) { bState.model = null; go(["battles", v]); }),
        select("Model", names.map(function (n) { return { value: n, label: n }; }), model, function (v) { bState.model = v; go(["battles", si, v]); }),
        select("Judge", [{ value: "", label: "all" }].concat(A.judges.map(function (j) { return { value: j, label: j }; })), bState.judge, function (v) { bState.judge = v; drawList(); }),
        select("Category", [{ value: "", label: "all" }].concat(Object.keys(cats).sort().map(function (c) { return { value: c, label: c }; })), bState.category, function (v) { bState.category = v; drawList(); }),
        select("Verdict", [["", "all"], ["win", "model wins"], ["loss", "model loses"], ["tie", "tie"], ["unparsed", "no verdict"]].map(function (o) { return { value: o[0], label: o[1] }; }), bState.verdict, function (v) { bState.verdict = v; drawList(); }),
        select("Show", ISSUES.map(function (o) { return { value: o[0], label: o[1] }; }), bState.issue, function (v) { bState.issue = v; drawList(); }),
        search, el("span", { id: "battle-count", cls: "muted" })]);
      function drawList() {
        var rows = filtered();
        clear(list);
        document.getElementById("battle-count").textContent = rows.length + " of " + B.length + " battles";
        rows.slice(0, bState.limit).forEach(function (b) {
          var q = Q[b.q] || {};
          var sel = b.q === wantQ && (!wantJ || b.j === wantJ);
          list.appendChild(el("div", { cls: "row" + (sel ? " sel" : ""), "data-qid": b.q, "data-judge": b.j, onclick: function () { go(["battles", si, model, b.q, b.j]); } },
            el("div", null, el("span", { cls: "chip " + b.v, text: b.v }), b.sd ? el("span", { cls: "chip flag", text: "swap" }) : null, b.jd ? el("span", { cls: "chip flag", text: "judges" }) : null, el("strong", { text: b.q }), " ", el("span", { cls: "muted", text: [q.c, A.judges.length > 1 ? b.j : null].filter(Boolean).join(" · ") })),
            el("div", { cls: "snip", text: (q.p || "").slice(0, 160) })));
        });
        if (rows.length > bState.limit) list.appendChild(el("button", { cls: "more", text: "show " + Math.min(200, rows.length - bState.limit) + " more", onclick: function () { bState.limit += 200; drawList(); } }));
      }
      drawList();
      var selRow = list.querySelector(".row.sel");
      if (selRow) list.scrollTop = selRow.offsetTop - list.offsetTop - 40;
      var chosen = wantQ ? B.filter(function (b) { return b.q === wantQ && (!wantJ || b.j === wantJ); })[0] : null;
      if (chosen) drawDetail(detail, A, model, chosen, Q[chosen.q] || {});
      else detail.appendChild(el("p", { cls: "muted", text: "Pick a battle on the left." }));
    }).catch(function (e) { clear(list).appendChild(el("p", { cls: "warn", text: String(e.message || e) })); });
  }
  function gameLabel(g, k) {
    var label = g[0], status = g[1];
    if (!label) return el("span", { cls: "chip " + (status || "unparsed"), text: status || "unparsed" });
    // Undo the swap for the chip colour: game 1 has the model as B, game 2 as A.
    var better = /^A>/.test(label) ? (k === 0 ? "loss" : "win") : /^B>/.test(label) ? (k === 0 ? "win" : "loss") : "tie";
    return el("span", { cls: "chip " + better, text: label });
  }
  function drawDetail(detail, A, model, b, q) {
    clear(detail);
    detail.appendChild(el("div", { cls: "pane" }, el("h3", { text: "Prompt " + b.q + (q.c ? " · " + q.c : "") }), markdown(q.p)));
    detail.appendChild(el("div", { cls: "answers" },
      el("div", { cls: "pane", id: "baseline-answer" }, el("h3", { text: "Baseline: " + (q.bn || A.baseline) }), markdown(q.b)),
      el("div", { cls: "pane", id: "model-answer" }, el("h3", { text: "Model: " + model }), markdown(b.a))));
    b.g.forEach(function (g, k) {
      detail.appendChild(el("div", { cls: "pane judgment" },
        el("h3", null, "Game " + (k + 1) + " (" + (k === 0 ? "A = baseline, B = model" : "A = model, B = baseline") + ") · judge " + b.j + " ", gameLabel(g, k), g[3] ? el("span", { cls: "chip flag", text: "re-asked" }) : null),
        markdown(g[2])));
    });
  }

  // ------------------------------------------------------------------ judges
  var jState = { src: 0 };
  function pageJudges() {
    var A = S.arena[jState.src] || S.arena[0], J = A.audit;
    main.appendChild(el("div", { cls: "controls" }, srcSelect(S.arena, jState.src, function (v) { jState.src = srcIndex(v, S.arena); render(); })));
    main.appendChild(el("h2", { text: "Verdict distribution" }));
    var labels = ["A>>B", "A>B", "A=B", "B>A", "B>>A"];
    plot(main, el("div", { cls: "plot", id: "verdict-plot" }), labels.concat(["unparsed"]).map(function (l) {
      var key = l === "unparsed" ? "unparsed_rate" : "share_" + l;
      return { type: "bar", name: l, x: J.verdicts.map(function (r) { return pt(r.judge); }), y: J.verdicts.map(function (r) { return r[key]; }) };
    }), { barmode: "stack", yaxis: { title: "share of games", tickformat: ".0%" }, height: 320 });
    main.appendChild(table([{ label: "judge", key: "judge" }, { label: "games", key: "n_games", digits: 0 }].concat(labels.map(function (l) { return { label: l, render: function (r) { return pct(r["share_" + l]); }, cls: "num" }; })).concat([{ label: "unparsed", render: function (r) { return pct(r.unparsed_rate); }, cls: "num" }]), J.verdicts));
    main.appendChild(el("h2", { text: "Position consistency" }));
    main.appendChild(table([{ label: "judge", key: "judge" }, { label: "pairs", key: "n_pairs", digits: 0 },
      { label: "same verdict", render: function (r) { return pct(r.consistency); }, cls: "num" },
      { label: "same winner", render: function (r) { return pct(r.direction_consistency); }, cls: "num" },
      { label: "first position wins", render: function (r) { return pct(r.first_position_win); }, cls: "num" }], J.consistency));
    if (J.length_bins) {
      main.appendChild(el("h2", { text: "Length bias" }));
      var by = {}; J.length_bins.forEach(function (r) { (by[r.judge] = by[r.judge] || []).push(r); });
      var xk = "len_diff_mid" in J.length_bins[0] ? "len_diff_mid" : "len_diff_bin", yk = "win_rate";
      plot(main, el("div", { cls: "plot", id: "length-plot" }), Object.keys(by).map(function (j) {
        return { type: "scatter", mode: "lines+markers", name: pt(j), x: by[j].map(function (r) { return r[xk]; }), y: by[j].map(function (r) { return r[yk]; }) };
      }), { xaxis: { title: "normalised length difference (model − opponent), midpoint of each quantile bin" }, yaxis: { title: "model win rate" }, height: 340 });
      if (J.length_slopes) main.appendChild(table(autoCols(J.length_slopes, 3), J.length_slopes));
    }
    if (J.kappa && J.kappa.length) {
      main.appendChild(el("h2", { text: "Inter-judge agreement (Cohen's κ)" }));
      var names = []; J.kappa.forEach(function (r) { [r.judge_1, r.judge_2].forEach(function (n) { if (names.indexOf(n) < 0) names.push(n); }); });
      var z = names.map(function (a) { return names.map(function (b) {
        if (a === b) return 1;
        var r = J.kappa.filter(function (p) { return (p.judge_1 === a && p.judge_2 === b) || (p.judge_1 === b && p.judge_2 === a); })[0];
        return r ? r.cohen_kappa : null; }); });
      plot(main, el("div", { cls: "plot", id: "kappa-plot" }), [{ type: "heatmap", z: z, x: names.map(pt), y: names.map(pt), zmin: -1, zmax: 1, colorscale: "RdBu" }], { height: 360, xaxis: { automargin: true }, yaxis: { automargin: true } });
      main.appendChild(table([{ label: "judge 1", key: "judge_1" }, { label: "judge 2", key: "judge_2" }, { label: "shared games", key: "n_games", digits: 0 }, { label: "κ", key: "cohen_kappa", digits: 3 }, { label: "raw agreement", render: function (r) { return pct(r.raw_agreement); }, cls: "num" }], J.kappa));
    }
  }

  // ------------------------------------------------------------------ curation
  var cState = { src: 0 };
  function pageCuration() {
    var C = S.curation[cState.src] || S.curation[0];
    main.appendChild(el("div", { cls: "controls" }, srcSelect(S.curation, cState.src, function (v) { cState.src = srcIndex(v, S.curation); render(); })));
    main.appendChild(el("h2", { text: "Curation: " + C.n_prompts + " prompts" }));
    if (C.topics) {
      var t = C.topics.filter(function (r) { return r.mean_score !== null; }).slice().sort(function (a, b) { return b.mean_score - a.mean_score; });
      if (t.length) {
        main.appendChild(el("h3", { text: "Mean score per topic" }));
        plot(main, el("div", { cls: "plot", id: "topic-score-plot" }), [{ type: "bar", x: t.map(function (r) { return pt(r.label); }), y: t.map(function (r) { return r.mean_score; }), text: t.map(function (r) { return String(r.size); }), hovertemplate: "%{x}<br>mean %{y:.2f}<br>size %{text}<extra></extra>" }],
          { yaxis: { title: "mean score (0–7)", range: [0, 7] }, xaxis: { tickangle: -45, automargin: true }, height: 420 });
      }
    }
    if (C.map && C.map.x) {
      main.appendChild(el("h3", { text: "Prompts by topic (2-D map: " + (C.map.how || "TF-IDF + truncated SVD") + ")" }));
      var groups = {};
      C.map.topic.forEach(function (tp, k) { (groups[tp] = groups[tp] || []).push(k); });
      plot(main, el("div", { cls: "plot", id: "topic-map" }), Object.keys(groups).map(function (tp) {
        var ix = groups[tp];
        return { type: "scattergl", mode: "markers", name: pt(tp), x: ix.map(function (k) { return C.map.x[k]; }), y: ix.map(function (k) { return C.map.y[k]; }), text: ix.map(function (k) { return pt(C.map.text[k]); }), hovertemplate: "%{text}<extra>" + pt(tp).slice(0, 40) + "</extra>", marker: { size: 5 } };
      }), { height: 520, showlegend: Object.keys(groups).length <= 40 });
    }
    if (C.topics) {
      main.appendChild(el("h3", { text: "Topics" }));
      main.appendChild(table([{ label: "topic", key: "cluster", digits: 0 }, { label: "label", key: "label", cls: "model" }, { label: "size", key: "size", digits: 0 }, { label: "annotated", key: "annotated", digits: 0 }, { label: "mean score", key: "mean_score", digits: 2 }, { label: "examples", key: "examples", cls: "model" }], C.topics));
    }
    if (C.categories && C.categories.length) {
      main.appendChild(el("h3", { text: "Topic hierarchy: broad categories and their topics" }));
      main.appendChild(table([{ label: "category", key: "category", cls: "model" }, { label: "prompts", key: "prompts", digits: 0 }, { label: "topics", key: "topics", digits: 0 },
        { label: "keywords", key: "keywords", cls: "model" }, { label: "its topics (largest first)", key: "its topics (largest first)", cls: "model" }], C.categories));
    }
    if (C.contamination && C.contamination.length) {
      main.appendChild(el("h3", { text: "Contamination gate: " + C.contamination.length + " flagged prompts and their nearest benchmark prompts" }));
      main.appendChild(table([{ label: "similarity", key: "similarity", digits: 3 }, { label: "prompt", key: "prompt", cls: "model" },
        { label: "nearest benchmark prompt", key: "nearest benchmark prompt", cls: "model" }, { label: "reference", key: "reference" }], C.contamination));
    }
    if (C.qualities) {
      main.appendChild(el("h3", { text: "Share of prompts with each quality (Table 1)" }));
      main.appendChild(table([{ label: "quality", key: "quality" }, { label: "share", render: function (r) { return pct(r.share); }, cls: "num" }], C.qualities));
      main.appendChild(table([{ label: "score ≥ k", key: "k", digits: 0 }, { label: "share", render: function (r) { return pct(r.share_score_ge_k); }, cls: "num" }], C.score_ge));
    }
    if (C.drops) { main.appendChild(el("h3", { text: "Dropped prompts by reason" })); main.appendChild(table([{ label: "reason", key: "reason" }, { label: "count", key: "count", digits: 0 }], C.drops)); }
    if (C.selected) {
      main.appendChild(el("h3", { text: "Selected set (" + C.selected.length + " prompts)" }));
      main.appendChild(table([{ label: "question", key: "question_id" }, { label: "category", key: "category" }, { label: "cluster", key: "cluster", digits: 0 }, { label: "score", key: "score", digits: 0 }, { label: "prompt", render: function (r) { return (r.prompt || "").slice(0, 200); }, cls: "model" }], C.selected));
    }
  }

  // ------------------------------------------------------------------ index
  var iState = { src: 0, model: 0, eval: 0, status: "" };
  function pageIndex(args) {
    var I = S.index[iState.src] || S.index[0];
    if (!I.models.length) { main.appendChild(el("p", { text: "No index results." })); return; }
    var M = I.models[iState.model] || I.models[0];
    main.appendChild(el("div", { cls: "controls" },
      srcSelect(S.index, iState.src, function (v) { iState.src = srcIndex(v, S.index); iState.model = 0; render(); }),
      select("Model", I.models.map(function (m, k) { return { value: k, label: m.model }; }), iState.model, function (v) { iState.model = parseInt(v, 10) || 0; iState.eval = 0; render(); })));
    main.appendChild(el("h2", { text: "Per-eval accuracy: " + M.model }));
    plot(main, el("div", { cls: "plot", id: "index-plot" }), [{ type: "bar", x: M.table.map(function (r) { return pt(r.eval); }), y: M.table.map(function (r) { return r.score; }),
      error_y: { type: "data", symmetric: false, array: M.table.map(function (r) { return r.high === null ? 0 : r.high - r.score; }), arrayminus: M.table.map(function (r) { return r.low === null ? 0 : r.score - r.low; }) } }],
      { yaxis: { title: "accuracy", range: [0, 1] }, height: 340 });
    main.appendChild(table(autoCols(M.table, 3), M.table));
    if (M.indices.length) { main.appendChild(el("h3", { text: "Indices" })); main.appendChild(table(autoCols(M.indices, 3), M.indices)); }
    main.appendChild(el("h2", { text: "Items" }));
    var E = M.evals[iState.eval] || M.evals[0];
    var controls = el("div", { cls: "controls" },
      select("Eval", M.evals.map(function (e, k) { return { value: k, label: e.eval + " (" + e.n + ")" }; }), iState.eval, function (v) { iState.eval = parseInt(v, 10) || 0; render(); }),
      select("Result", [["", "all"], ["correct", "correct"], ["wrong", "wrong"], ["unanswered", "unanswered"], ["failure", "failures"]].map(function (o) { return { value: o[0], label: o[1] }; }), iState.status, function (v) { iState.status = v; render(); }));
    var wrap = el("div", { cls: "split" }), list = el("div", { cls: "list", id: "item-list" }), detail = el("div", { id: "item-detail" });
    wrap.appendChild(list); wrap.appendChild(detail);
    main.appendChild(controls); main.appendChild(wrap);
    load(E.key).then(function (items) {
      var rows = items.filter(function (r) {
        var s = iState.status;
        if (!s) return true;
        if (s === "correct") return r.correct === true;
        if (s === "wrong") return r.correct === false && r.status === "ok";
        if (s === "unanswered") return r.status === "unanswered";
        return r.status !== "ok" && r.status !== "unanswered";
      });
      rows.forEach(function (r) {
        var v = r.correct === true ? "win" : r.correct === false ? "loss" : "unparsed";
        list.appendChild(el("div", { cls: "row", onclick: function () { drawItem(detail, r); } },
          el("div", null, el("span", { cls: "chip " + v, text: r.correct === true ? "correct" : r.correct === false ? "wrong" : r.status }), el("strong", { text: r.item_id }), " ", el("span", { cls: "muted", text: "repeat " + r.repeat + (r.language ? " · " + r.language : "") })),
          el("div", { cls: "snip", text: (r.prompt || r.response || "").slice(0, 160) })));
      });
      if (!rows.length) list.appendChild(el("p", { cls: "muted", text: "No items." }));
    });
  }
  function drawItem(detail, r) {
    clear(detail);
    detail.appendChild(el("div", { cls: "pane" }, el("h3", { text: "Item " + r.item_id + " · repeat " + r.repeat }),
      table([{ label: "field", key: "k" }, { label: "value", key: "v", cls: "model pre" }], [
        { k: "status", v: r.status }, { k: "correct", v: String(r.correct) }, { k: "extracted answer", v: r.extracted }, { k: "gold", v: r.gold },
        { k: "graded by", v: r.method }, { k: "sandbox", v: r.sandbox }, { k: "error", v: r.error }])));
    detail.appendChild(el("div", { cls: "pane" }, el("h3", { text: "Prompt" }), r.prompt ? markdown(r.prompt) : el("p", { cls: "muted", text: "(not stored in the record; pass --index-config to show it)" })));
    detail.appendChild(el("div", { cls: "pane" }, el("h3", { text: "Response" }), markdown(r.response)));
    if (r.checker) detail.appendChild(el("div", { cls: "pane" }, el("h3", { text: "Checker" }), el("pre", { cls: "raw", text: JSON.stringify(r.checker, null, 2) })));
    if (r.sandbox_stderr) detail.appendChild(el("div", { cls: "pane" }, el("h3", { text: "Sandbox stderr" }), el("pre", { cls: "raw", text: r.sandbox_stderr })));
  }
})();
