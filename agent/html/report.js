/*
 * report.js - draws an ameba report (the JSON in #ameba-report) into
 * #ameba-app: the header, the findings and the views of the report's
 * `views` member (docs/report-schema.md), as DOM and inline SVG.
 *
 * Embedded verbatim by agent/report_html.c in a page of a fixed skeleton
 * (div#ameba-app, the JSON in script#ameba-report of type application/json).
 * Vanilla ES2017: no library, no network, no eval. Every string of the
 * report reaches the DOM through textContent or setAttribute, never
 * innerHTML.
 *
 * What a test can check:
 *  - body[data-ameba-rendered="1"] when done; body[data-ameba-errors]
 *    (0 when fine; the messages are in #ameba-errors);
 *    body[data-ameba-render-ms] (script start to done), -parse-ms (the
 *    JSON.parse), -prep-ms; body[data-ameba-metric] (the selected metric).
 *  - one <section id="view-NAME" data-view-state="drawn|empty|error"
 *    data-render-ms> per view: summary, findings, timeline, heat, matrix
 *    (data-view-variant="matrix|thread-bars"), lines, trace, objects,
 *    threads. An empty view says in a sentence (p.empty-note) what is
 *    missing and why; a failed one shows p.view-error.
 *  - anchors: #finding-R (rank R), #obj-N (the N-th object, 1-based; the
 *    row exists while its page is shown, links to it turn the page),
 *    #heat-N (the N-th heat strip), #thread-ID; #metric-select; the
 *    tables' .pager-info[data-first][data-last][data-count].
 *  - <details> drawn when first opened (data-built="0|1"): the trace
 *    (open when it has at most 30 intervals), #heat-more, #lines-more.
 *  - page.html#only=view-NAME shows that view alone, its <details> open
 *    (body[data-ameba-only]): one screenshot a view.
 *
 * Every view draws at most CAP items; the tables build only the rows of
 * the page shown, so that 100,000 objects draw as fast as 50.
 */
(function () {
"use strict";

const T0 = performance.now();
const body = document.body;
let nErrors = 0, errorList = null;

/* ---- errors: caught first, counted, shown ---- */

function noteError(msg) {
	body.dataset.amebaErrors = String(++nErrors);
	if (!errorList) {
		errorList = el("ul");
		body.insertBefore(el("div", {id: "ameba-errors", class: "error-box", role: "alert"}, [el("strong",
			{text: "This page hit errors while drawing the report (the rest may be incomplete):"}), errorList]),
			body.firstChild);
	}
	errorList.appendChild(el("li", {text: msg}));
}

function errText(e) {
	return e && e.message ? e.message : String(e);
}

window.onerror = function (msg, src, line) {
	noteError(String(msg) + (line ? " (script line " + line + ")" : ""));
	return false;
};
window.addEventListener("unhandledrejection", ev => noteError("unhandled promise rejection: " + errText(ev.reason)));
body.dataset.amebaErrors = "0";

/* ---- constants ---- */

/* Okabe-Ito, colour-blind safe; grey for "other" */
const OI = ["#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#000000"];
const OTHER = "#999999";
const ZERO = "#ececec";		/* a cell with no events */
const PAGE = 50;
const CAP = {
	series: 12, heat: 20, buckets: 1024, rows: 40, cols: 64, lines: 8, lineObjs: 20, lineThreads: 32,
	trace: 400, regions: 64, bars: 64,
	eager: 8	/* heat strips drawn at once (line maps: half); the rest when their <details> opens */
};
const SVGNS = "http://www.w3.org/2000/svg";
const CH = 6.1;			/* about the width of a character of the 11-unit SVG font */
const DASH = "\u2013";

const METRIC_TEXT = {
	mem_ref: "memory references", reads: "reads", writes: "writes",
	l1d_miss: "L1D misses", l1d_miss_rd: "L1D read misses", l1d_miss_wr: "L1D write misses",
	l2_miss: "L2 misses", l2_miss_rd: "L2 read misses", l2_miss_wr: "L2 write misses",
	llc_miss: "LLC misses", llc_miss_rd: "LLC read misses", llc_miss_wr: "LLC write misses",
	tlb_miss: "TLB misses", coh_miss: "coherence misses", coh_miss_true: "true-sharing coherence misses",
	coh_miss_false: "false-sharing coherence misses", inval_sent: "invalidations sent",
	inval_recv: "invalidations received", intervention: "interventions", mem_local: "local memory accesses",
	mem_remote: "remote memory accesses", conflict_miss: "conflict misses", capacity_miss: "capacity misses",
	compulsory_miss: "compulsory misses", est_cycles: "estimated cycles", est_stall_cycles: "estimated stall cycles"
};

/* viridis: 5 anchors interpolated into 64 levels (few distinct fills, so
 * that paintRects makes few paths) */
const VIRIDIS = (function () {
	const a = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]], out = [];
	for (let i = 0; i < 64; i++) {
		const t = i / 63 * (a.length - 1), k = Math.min(a.length - 2, Math.floor(t)), f = t - k;
		out.push("rgb(" + [0, 1, 2].map(j => Math.round(a[k][j] + (a[k + 1][j] - a[k][j]) * f)).join(",") + ")");
	}
	return out;
})();
const VIRIDIS_CSS = "linear-gradient(to right, #440154, #3b528b, #21918c, #5ec962, #fde725)";

function viridis(t) {
	return VIRIDIS[Math.round(Math.max(0, Math.min(1, t)) * 63)];
}

/* black or white text on viridis(t) */
function inkOn(t) {
	return t < 0.55 ? "#fff" : "#000";
}

/* ---- DOM and SVG helpers ---- */

const isNum = x => typeof x === "number" && isFinite(x);
const arr = x => Array.isArray(x) ? x : [];
const str = x => x == null ? "" : String(x);
const isObj = x => x !== null && typeof x === "object" && !Array.isArray(x);

/* kids: nodes, strings, nested arrays; null and false are skipped */
function append(n, kids) {
	for (const k of Array.isArray(kids) ? kids : [kids]) {
		if (k == null || k === false) continue;
		if (Array.isArray(k)) append(n, k);
		else n.appendChild(typeof k === "object" ? k : document.createTextNode(String(k)));
	}
	return n;
}

/* el("p", {class: "x", text: "..."}, kids): other attributes by setAttribute */
function el(tag, attrs, kids) {
	const n = document.createElement(tag);
	for (const k in attrs || {}) {
		const v = attrs[k];
		if (v == null || v === false) continue;
		if (k === "text") n.textContent = String(v);
		else if (k === "class") n.className = v;
		else n.setAttribute(k, v === true ? "" : String(v));
	}
	return append(n, kids);
}

function sv(tag, attrs, parent) {
	const n = document.createElementNS(SVGNS, tag);
	for (const k in attrs) if (attrs[k] != null) n.setAttribute(k, attrs[k]);
	if (parent) parent.appendChild(n);
	return n;
}

function svText(parent, x, y, text, attrs) {
	const t = sv("text", Object.assign({x: x, y: y}, attrs || {}), parent);
	t.textContent = text;
	return t;
}

/* an SVG of w x h units, drawn at w x h px at most (CSS shrinks it to fit) */
function makeSvg(w, h, cls, label) {
	return sv("svg", {viewBox: "0 0 " + w + " " + h, width: w, height: h, class: "chart " + cls,
			  role: "img", "aria-label": label, preserveAspectRatio: "xMinYMin meet"});
}

/* the mouse position in the SVG's own units */
function svgPoint(svg, ev) {
	const r = svg.getBoundingClientRect(), vb = svg.viewBox.baseVal;
	return [(ev.clientX - r.left) * vb.width / r.width, (ev.clientY - r.top) * vb.height / r.height];
}

/* a path coordinate: 2 decimals at most (faster than toFixed) */
function q(v) {
	return Math.round(v * 100) / 100;
}

/* Many rectangles ([x, y, w, h, fill] each) as one path per fill: the
 * callers find the item under the mouse from its coordinates. */
function paintRects(parent, rects, cls) {
	const byFill = new Map();
	for (const r of rects) {
		const d = "M" + q(r[0]) + " " + q(r[1]) + "h" + q(r[2]) + "v" + q(r[3]) + "h" + q(-r[2]) + "z";
		if (byFill.has(r[4])) byFill.get(r[4]).push(d);
		else byFill.set(r[4], [d]);
	}
	byFill.forEach((ds, fill) => sv("path", {d: ds.join(""), fill: fill, class: cls}, parent));
}

/* labels [x, text] along y, anchored so that the first and last stay inside; skips overlaps */
function axisLabels(svg, items, y, cls, cw) {
	let lastEnd = -1e9;
	items.forEach(function (it, i) {
		const w = it[1].length * cw, anchor = i === 0 ? "start" : i === items.length - 1 ? "end" : "middle";
		const left = anchor === "start" ? it[0] : anchor === "end" ? it[0] - w : it[0] - w / 2;
		if (left < lastEnd + 6) return;
		svText(svg, it[0], y, it[1], {class: cls, "text-anchor": anchor});
		lastEnd = left + w;
	});
}

/* the outline of the item under the mouse */
function outline(svg) {
	const r = sv("rect", {class: "hover-cell", visibility: "hidden"}, svg);
	return {
		at(x, y, w, h) {
			r.setAttribute("x", x);
			r.setAttribute("y", y);
			r.setAttribute("width", Math.max(1, w));
			r.setAttribute("height", h);
			r.setAttribute("visibility", "visible");
		},
		off() { r.setAttribute("visibility", "hidden"); }
	};
}

/* the last index i of sorted xs with xs[i] <= x, or -1 */
function bisect(xs, x) {
	let lo = 0, hi = xs.length;
	while (lo < hi) {
		const mid = (lo + hi) >> 1;
		if (xs[mid] <= x) lo = mid + 1;
		else hi = mid;
	}
	return lo - 1;
}

function truncate(s, n) {
	return s.length <= n ? s : s.slice(0, Math.max(1, n - 1)) + "\u2026";
}

/* category k: Okabe-Ito, hatched from the 9th on; catCss: the same for HTML */
let uid = 0;
function catFill(svg, k) {
	const c = OI[k % OI.length];
	if (k < OI.length) return c;
	const id = "hatch-" + (++uid), p = sv("pattern", {id: id, width: 6, height: 6, patternUnits: "userSpaceOnUse",
		patternTransform: "rotate(45)"}, svg.querySelector("defs") || sv("defs", {}, svg));
	sv("rect", {width: 6, height: 6, fill: "#fff"}, p);
	sv("rect", {width: 3, height: 6, fill: c}, p);
	return "url(#" + id + ")";
}

function catCss(k) {
	const c = OI[k % OI.length];
	return k < OI.length ? c : "repeating-linear-gradient(45deg, " + c + " 0 3px, #fff 3px 6px)";
}

function swatch(css) {
	const s = el("span", {class: "swatch"});
	s.style.background = css;
	return s;
}

/* ---- numbers ---- */

/* counts: 1.2M, 34.5k; exact below 1000 */
function fmtCount(n) {
	if (!isNum(n)) return DASH;
	if (Math.abs(n) < 1000) return Number.isInteger(n) ? String(n) : n.toFixed(Math.abs(n) < 10 ? 2 : 1);
	const u = ["k", "M", "G", "T", "P"];
	let v = n / 1000, i = 0;
	for (; Math.abs(v) >= 999.95 && i < u.length - 1; i++) v /= 1000;
	return v.toFixed(1) + u[i];
}

/* exact, digits grouped: 3,197,275 (by hand: toLocaleString is slow to start) */
function fmtExact(n) {
	if (!isNum(n)) return DASH;
	const s = Number.isInteger(n) ? Math.abs(n).toFixed(0) : Math.abs(n).toFixed(6).replace(/\.?0+$/, "");
	if (/e/.test(s)) return String(n);
	const dot = s.indexOf("."), int = dot < 0 ? s : s.slice(0, dot);
	return (n < 0 ? "-" : "") + int.replace(/\B(?=(\d{3})+$)/g, ",") + (dot < 0 ? "" : s.slice(dot));
}

function fmtBytes(n) {
	if (!isNum(n)) return DASH;
	if (Math.abs(n) < 1024) return n + " B";
	const u = ["KiB", "MiB", "GiB", "TiB", "PiB"];
	let v = n / 1024, i = 0;
	for (; Math.abs(v) >= 1024 && i < u.length - 1; i++) v /= 1024;
	return (v >= 100 ? v.toFixed(0) : v.toFixed(1)).replace(/\.0$/, "") + " " + u[i];
}

function fmtPct(x) {
	if (!isNum(x)) return DASH;
	return x > 0 && x < 0.0005 ? "<0.1%" : (x * 100).toFixed(1) + "%";
}

function fmtSec(s) {
	if (!isNum(s)) return DASH;
	return Math.abs(s) < 1 ? +(s * 1000).toFixed(s < 0.01 ? 2 : 1) + " ms" : s.toFixed(s < 100 ? 2 : 0) + " s";
}

/* [1,2,3,4,7] -> "1-4, 7" */
function fmtIds(ids) {
	const a = ids.filter(isNum).sort((x, y) => x - y), out = [];
	for (let i = 0, j; i < a.length; i = j + 1) {
		for (j = i; j + 1 < a.length && a[j + 1] === a[j] + 1; j++);
		out.push(j > i ? a[i] + DASH + a[j] : String(a[i]));
	}
	return out.join(", ");
}

function metricLabel(m) {
	return METRIC_TEXT[m] ? m + " (" + METRIC_TEXT[m] + ")" : m;
}

/* nice ticks over [lo, hi] */
function ticks(lo, hi, count) {
	if (!(hi > lo)) return {step: 1, list: [lo]};
	const raw = (hi - lo) / count, p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;
	const step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p, list = [];
	for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) list.push(+v.toPrecision(12));
	return {step: step, list: list};
}

/* hex addresses: "0x55d0..." -> 16 lower-case digits (sortable as strings), or null */
function hexPad(s) {
	const h = str(s).toLowerCase().replace(/^0x/, "");
	return /^[0-9a-f]{1,16}$/.test(h) ? "0000000000000000".slice(h.length) + h : null;
}

/* b - a for padded hex strings, exact below 2^53 */
function hexDiff(a, b) {
	const hi = parseInt(b.slice(0, 8), 16) - parseInt(a.slice(0, 8), 16);
	return hi * 4294967296 + parseInt(b.slice(8), 16) - parseInt(a.slice(8), 16);
}

function hexShow(p) {
	return "0x" + (p.replace(/^0+/, "") || "0");
}

/* ---- the tooltip: one positioned div for every view ---- */

const tip = el("div", {id: "ameba-tooltip", class: "tooltip", role: "tooltip"});
tip.hidden = true;

/* lines: strings, or [css colour, string] for a row with a swatch; the first is the head */
function showTip(ev, lines) {
	tip.textContent = "";
	lines.forEach((l, i) => tip.appendChild(el("div", {class: i ? "tip-row" : "tip-head"},
		Array.isArray(l) ? [swatch(l[0]), l[1]] : l)));
	tip.hidden = false;
	const w = tip.offsetWidth, h = tip.offsetHeight;
	let x = ev.clientX + 14, y = ev.clientY + 14;
	if (x + w > window.innerWidth - 4) x = Math.max(4, ev.clientX - w - 14);
	if (y + h > window.innerHeight - 4) y = Math.max(4, ev.clientY - h - 14);
	tip.style.left = x + "px";
	tip.style.top = y + "px";
}

/* fn(ev) -> lines or null: one listener per chart; ol: its outline, hidden on leave */
function hover(node, fn, ol) {
	node.addEventListener("mousemove", function (ev) {
		const lines = fn(ev);
		if (lines && lines.length) showTip(ev, lines);
		else tip.hidden = true;
	});
	node.addEventListener("mouseleave", function () {
		tip.hidden = true;
		if (ol) ol.off();
	});
}

/* ---- the report ---- */

let R = null;			/* the report */
let V = null;			/* R.views, or null */
const S = {metric: null, metrics: []};
const objByName = new Map();	/* object name -> index in R.objects (the names linked) */
const heatByName = new Map();	/* object name -> index in V.heat (the drawn ones) */
const threadById = new Map();	/* ameba id -> thread */

/* The index in R.objects of the first object named name, or undefined:
 * only for the names the page links (scanReport) */
function objIndex(name) {
	return objByName.get(name);
}

function noViews(what) {
	return "This report has no " + what + ": it has no \u201cviews\u201d member (written by an ameba that " +
	       "did not record views for the HTML report).";
}

function empty(b, sentence) {
	b.appendChild(el("p", {class: "empty-note", text: sentence}));
	return "empty";
}

/* a caption; hint: how to use the chart (not printed) */
function caption(b, text, hint) {
	const h = hint ? el("span", {class: "hint", text: " " + hint}) : null;
	return b.appendChild(el("p", {class: "caption"}, [text, h]));
}

function note(b, text) {
	return b.appendChild(el("p", {class: "note", text: text}));
}

/* a link to an object's row (objects table) or, failing that, its heat strip */
function objLink(name) {
	const i = objIndex(name), h = heatByName.get(name);
	if (i !== undefined) return el("a", {href: "#obj-" + (i + 1), class: "obj-link", text: name});
	if (h !== undefined) return el("a", {href: "#heat-" + (h + 1), class: "obj-link", text: name});
	return el("span", {class: "obj-name", text: name});
}

/* a bar of share x (0..1) */
function shareBar(x, cls) {
	const fill = el("span", {class: "sev-fill"});
	fill.style.width = (Math.max(0, Math.min(1, isNum(x) ? x : 0)) * 100).toFixed(2) + "%";
	return el("span", {class: "sev-bar " + (cls || ""), title: fmtExact(x)}, fill);
}

function gradientLegend(label, lo, hi) {
	const bar = el("span", {class: "grad"});
	bar.style.background = VIRIDIS_CSS;
	return el("div", {class: "grad-legend"}, [el("span", {text: label}), el("span", {class: "muted", text: lo}),
		bar, el("span", {class: "muted", text: hi}), swatch(ZERO), el("span", {class: "muted", text: "none"})]);
}

/* ---- view: summary (the header) ---- */

function drawSummary(b) {
	const sum = isObj(R.summary) ? R.summary : {}, nf = arr(R.findings).length;
	const verdict = str(sum.verdict) || (nf ? "findings" : "nothing significant"), bad = verdict === "findings";
	b.appendChild(el("div", {class: "summary-head"}, [
		el("div", {class: "summary-title"}, [el("div", {class: "eyebrow", text: "ameba memory report"}),
			el("h1", {id: "report-program", text: str(R.program) || "(program unknown)"})]),
		el("div", {id: "verdict", class: "verdict verdict-" + (bad ? "bad" : "ok"), "data-verdict": verdict},
			bad ? [el("strong", {text: String(nf)}), nf === 1 ? " finding" : " findings"] :
			el("strong", {text: verdict === "nothing significant" ? "Nothing significant" : verdict}))]));

	const dl = b.appendChild(el("dl", {id: "facts", class: "facts"}));
	const fact = (label, value, cls) => value != null && value !== "" &&
		dl.appendChild(el("div", {class: "fact " + (cls || "")}, [el("dt", {text: label}), el("dd", null, value)]));
	const cmd = arr(R.command).map(a => /[\s"'\\]/.test(a) ? JSON.stringify(String(a)) : String(a)).join(" ");
	fact("Command", el("code", {text: cmd || DASH}), "wide");
	fact("Backend", str(R.backend) + (R.exact === true ? " (exact counts)" : R.exact === false ? " (sampled)" : ""));
	fact("Simulation", R.sim_mode ? str(R.sim_mode) : null);
	if (isObj(R.sampling) && isNum(R.sampling.fraction_simulated))
		fact("Simulated", fmtPct(R.sampling.fraction_simulated) + " of the accesses, " +
		     fmtExact(R.sampling.bursts) + " bursts");
	const st = isObj(R.strategy) ? R.strategy : {}, params = isObj(st.params) ? Object.keys(st.params) : [];
	fact("Strategy", [el("span", {text: str(st.name) || DASH}), params.length ? el("details", {class: "params"}, [
		el("summary", {text: params.length + " parameters"}),
		el("code", {text: params.map(k => k + "=" + str(st.params[k])).join(" ")})]) : null]);
	fact("Metric", metricLabel(str(R.metric)));
	fact("Duration", fmtSec(R.duration_s) + (isNum(R.measured_s) ? ", " + fmtSec(R.measured_s) + " measured" : "") +
	     (isNum(R.iterations) ? ", " + R.iterations + " experiments" : ""));
	fact("Ended", str(R.reason) + (R.partial ? " (partial: the search did not end on its own)" : ""),
	     R.partial ? "partial" : "");
	const tg = R.target;
	if (isObj(tg))
		fact("Target", str(tg.state) + (isNum(tg.exit_status) ? ", exit status " + tg.exit_status : "") +
		     (tg.signal ? ", signal " + tg.signal : "") + (isNum(tg.wall_s) ? ", ran " + fmtSec(tg.wall_s) : ""));
	const cov = isObj(R.coverage) ? R.coverage : {}, cm = str(cov.metric || R.metric);
	if (isNum(cov.coverage))
		fact("Coverage", fmtPct(cov.coverage) + " of " + cm +
		     (isNum(cov.threshold) ? " (threshold " + fmtPct(cov.threshold) + ")" : ""));
	fact("Agent CPU", isNum(R.agent_cpu_s) ? fmtSec(R.agent_cpu_s) : null);

	const callout = (cls, id, kids) => b.appendChild(el("div", {class: "callout " + cls, id: id}, kids));
	if (R.schema !== "ameba-report" || R.version !== 1)
		callout("warn", "schema-warning", "This page knows reports of schema \u201cameba-report\u201d version 1; " +
			"this one says " +
			JSON.stringify(str(R.schema)) + " version " + str(R.version) + ": it draws what it recognises.");
	if (R.error) callout("warn", "report-error", "Error: " + str(R.error));
	const missing = arr(cov.missing).map(m => el("li", {text: str(m)}));
	if (isNum(cov.coverage) && isNum(cov.threshold) && cov.coverage < cov.threshold)
		callout("warn", "coverage-warning", [el("strong", {text: "Coverage " + fmtPct(cov.coverage) +
			" is under the " + fmtPct(cov.threshold) + " threshold"}),
			": the figures account for only part of the program's " + cm + (isNum(cov.factor) ?
			", and every finding's confidence was multiplied by " + cov.factor.toFixed(3) + "." : "."),
			missing.length ? el("ul", null, missing) : null]);
	else if (missing.length)
		callout("note", "coverage-notes", [el("strong", {text: "Coverage notes"}), el("ul", null, missing)]);
	const warns = arr(R.warnings);
	if (warns.length)
		b.appendChild(el("details", {class: "callout warn", id: "warnings", open: warns.length <= 3}, [
			el("summary", {text: warns.length + (warns.length === 1 ? " warning" : " warnings") +
				" about plugins (refused, disabled or replaced)"}),
			el("ul", null, warns.map(w => el("li", {text: str(w)})))]));
	const pr = isObj(R.html_pruned) ? R.html_pruned : {};
	const parts = [pr.objects > 0 ? fmtExact(pr.objects) + " objects" : "",
		       pr.threads > 0 ? fmtExact(pr.threads) + " threads" : ""];
	if (parts.join(""))
		callout("note", "pruned-notice", "To keep this page small, " + parts.filter(Boolean).join(" and ") +
			" of the lowest rank were left out (the page lists the first ones); the JSON report has them all.");
	return "drawn";
}

/* ---- view: findings ---- */

function contextNode(c) {
	const o = c.object;
	if (isObj(o) && o.name != null) {
		const name = str(o.name), h = heatByName.get(name);
		const bits = [str(o.kind), fmtBytes(o.size),
			      isNum(o.blocks) && o.blocks !== 1 ? fmtExact(o.blocks) + " blocks" : ""];
		const heat = h !== undefined && objIndex(name) !== undefined;
		return [objLink(name), " (" + bits.filter(Boolean).join(", ") + ")", heat ?
			el("a", {href: "#heat-" + (h + 1), class: "small-link", text: "heat strip"}) : null];
	}
	if (c.kind === "region" && c.region) return "region " + str(c.region);
	if (c.kind === "line" && c.line) return el("code", {text: "line " + str(c.line)});
	return "the whole program";
}

function findingCard(f, absorbed) {
	const c = isObj(f.context) ? f.context : {}, th = arr(c.threads), wi = isObj(f.what_if) ? f.what_if : {};
	const sp = isNum(f.predicted_speedup) ? "\u00d7" + f.predicted_speedup.toFixed(2) : null;
	const card = el(absorbed ? "div" : "article", {class: absorbed ? "finding absorbed-finding" : "finding",
		id: absorbed ? null : "finding-" + str(f.rank), "data-rank": str(f.rank)}, [
		el("div", {class: "finding-head"}, [
			absorbed ? null : el("span", {class: "rank", text: "#" + str(f.rank)}),
			el("span", {class: "property", text: str(f.property)}),
			f.refined_from ? el("span", {class: "muted", text: "refines " + str(f.refined_from)}) : null,
			sp ? el("span", {class: "speedup", text: sp + " predicted"}) : null]),
		el("div", {class: "finding-meters"}, [
			shareBar(f.severity), el("span", {class: "sev-text", text: fmtPct(f.severity) + " severity"}),
			el("span", {class: "conf", text: "confidence " +
				(isNum(f.confidence) ? f.confidence.toFixed(2) : DASH)}),
			isNum(f.severity_own) ? el("span", {class: "muted", text: "own " + fmtPct(f.severity_own) +
				(f.overlaps ? ", less what " + str(f.overlaps) + " counts" : "")}) : null]),
		el("div", {class: "finding-context"}, ["on ", contextNode(c),
			th.length ? " \u00b7 thread" + (th.length > 1 ? "s " : " ") + fmtIds(th) : null]),
		f.evidence ? el("p", {class: "evidence"}, [el("span", {class: "label", text: "Evidence"}),
			str(f.evidence)]) : null,
		f.advice ? el("p", {class: "advice"}, [el("span", {class: "label", text: "Advice"}), str(f.advice)]) : null,
		sp && wi.fix ? el("p", {class: "whatif", text: "Predicted speedup " + sp + ": simulated with " +
			str(wi.fix) + (isNum(wi.runtime_cycles) && isNum(wi.runtime_cycles_fixed) ? " (" +
			fmtCount(wi.runtime_cycles) + " \u2192 " + fmtCount(wi.runtime_cycles_fixed) + " cycles)." : ".")}) :
		!sp && wi.error ? el("p", {class: "whatif muted", text: "No speedup prediction: " + str(wi.error)}) : null]);
	const ab = arr(f.absorbed);
	if (!absorbed && ab.length)
		card.appendChild(el("details", {class: "absorbed"}, [el("summary", {text: "explains: " +
			ab.map(a => str(a.property)).join(", ")}), ab.map(a => findingCard(a, true))]));
	return card;
}

function drawFindings(b) {
	const fs = arr(R.findings), sum = isObj(R.summary) ? R.summary : {}, top = arr(sum.top_objects).filter(isObj);
	b.dataset.findings = String(fs.length);
	if (fs.length) return fs.forEach(f => b.appendChild(findingCard(f, false))), "drawn";
	b.appendChild(el("p", {id: "nothing-significant", class: "nothing", text: "Nothing significant: no property held " +
		"with a severity of at least " + fmtPct(isNum(sum.threshold) ? sum.threshold : 0.02) + "."}));
	if (!top.length) return note(b, "The report names no object where the memory time goes either."), "drawn";
	b.appendChild(el("h3", {text: "Where the memory time goes"}));
	b.appendChild(el("table", {class: "data", id: "top-objects"}, [
		el("thead", null, el("tr", null, ["object", "kind", "size", "blocks", "share"].map((h, i) =>
			el("th", {class: i > 1 ? "num" : null, text: h})))),
		el("tbody", null, top.map(o => el("tr", null, [
			el("td", null, [objLink(str(o.name)),
				o.provisional ? el("span", {class: "badge", text: "provisional"}) : null]),
			el("td", {text: str(o.kind)}), el("td", {class: "num", text: fmtBytes(o.size)}),
			el("td", {class: "num", text: fmtExact(o.blocks)}),
			el("td", {class: "num"}, [shareBar(o.stall_share, "small"),
				" " + fmtPct(o.stall_share) + " of " + str(o.metric)])])))]));
	return "drawn";
}

/* ---- view: timeline (stacked shares per interval) ---- */

function drawTimeline(b) {
	const m = S.metric;
	if (!V) return empty(b, noViews("per-interval series"));
	const st0 = arr(V.interval_start_s), series = arr(V.series).filter(isObj);
	if (!st0.length || !series.length)
		return empty(b, "This report has no per-interval series: no counter measured a single object on its own " +
			     "during the search, so there is nothing to split the program's count by.");
	const sm = arr(V.series_metrics), tot = isObj(V.series_total) ? V.series_total[m] : null;
	if (sm.indexOf(m) < 0 || !Array.isArray(tot))
		return empty(b, "There is no per-interval series of " + m + ": the series count " +
			     (sm.length ? sm.join(", ") : "no metric") + ". Choose one of those in the metric selector.");
	/* the intervals: [st, ends), sanitised */
	const n = st0.length, len = arr(V.interval_s), st = new Array(n), ends = new Array(n);
	for (let i = 0; i < n; i++) {
		st[i] = isNum(st0[i]) ? st0[i] : i ? ends[i - 1] : 0;
		const next = isNum(st0[i + 1]) && st0[i + 1] > st[i] ? st0[i + 1] - st[i] : 0.001;
		const l = isNum(len[i]) && len[i] > 0 ? len[i] : next;
		ends[i] = st[i] + l;
	}
	/* shares of the program's count: the objects, then the rest ("other") */
	const shown = series.slice(0, CAP.series), K = shown.length;
	const raw = shown.map(s => arr(isObj(s.values) ? s.values[m] : null));
	const share = shown.map(() => new Float64Array(n)), other = new Float64Array(n);
	let nulls = 0, scaledN = 0;
	for (let i = 0; i < n; i++) {
		const T = tot[i], known = isNum(T) && T > 0;
		let sum = 0;
		for (let k = 0; k < K; k++) {
			const v = raw[k][i];
			if (!isNum(v)) nulls++;
			sum += share[k][i] = known && isNum(v) ? Math.max(0, v) / T : 0;
		}
		if (sum > 1) {	/* separate counters of one interval can disagree a little */
			for (let k = 0; k < K; k++) share[k][i] /= sum;
			sum = 1;
			scaledN++;
		}
		other[i] = known ? 1 - sum : 0;
	}

	const W = 1000, H = 330, ml = 50, mr = 14, mt = 12, mb = 44, PW = W - ml - mr, PH = H - mt - mb;
	const t0 = Math.min(0, st[0]), t1 = Math.max(ends[n - 1], t0 + 1e-9);
	const X = t => ml + (t - t0) / (t1 - t0) * PW, Y = s => mt + (1 - s) * PH;
	const svg = makeSvg(W, H, "timeline", "share of " + m + " per interval, by object");
	sv("rect", {x: ml, y: mt, width: PW, height: PH, class: "plot-bg"}, svg);
	/* each layer a stepped area from its base, bottom up */
	const base = new Float64Array(n);
	shown.map((s, k) => [share[k], catFill(svg, k)]).concat([[other, OTHER]]).forEach(function (L) {
		let top = "", bot = "";
		for (let i = 0; i < n; i++) {
			const y = q(Y(base[i] + L[0][i]));
			top += (i ? "L" : "M") + q(X(st[i])) + "," + y + "L" + q(X(ends[i])) + "," + y;
		}
		for (let i = n - 1; i >= 0; i--) {
			const y = q(Y(base[i]));
			bot += "L" + q(X(ends[i])) + "," + y + "L" + q(X(st[i])) + "," + y;
			base[i] += L[0][i];
		}
		sv("path", {d: top + bot + "Z", fill: L[1], class: "area"}, svg);
	});
	for (const p of [0, 0.25, 0.5, 0.75, 1]) {
		sv("line", {x1: ml, x2: ml + PW, y1: Y(p), y2: Y(p), class: p ? "grid" : "axis"}, svg);
		svText(svg, ml - 6, Y(p) + 4, Math.round(p * 100) + "%", {class: "tick-label", "text-anchor": "end"});
	}
	const tk = ticks(t0, t1, 8), dec = Math.max(0, -Math.floor(Math.log10(tk.step)));
	for (const t of tk.list) {
		sv("line", {x1: X(t), x2: X(t), y1: mt + PH, y2: mt + PH + 5, class: "axis"}, svg);
		svText(svg, X(t), mt + PH + 18, t.toFixed(dec) + " s", {class: "tick-label", "text-anchor": "middle"});
	}
	svText(svg, ml + PW / 2, H - 6, "seconds since the search began", {class: "axis-title", "text-anchor": "middle"});
	const ol = outline(svg), over = sv("rect", {x: ml, y: mt, width: PW, height: PH, class: "overlay"}, svg);
	hover(over, function (ev) {
		const i = Math.max(0, bisect(st, t0 + (svgPoint(svg, ev)[0] - ml) / PW * (t1 - t0))), T = tot[i];
		ol.at(X(st[i]), mt, X(ends[i]) - X(st[i]), PH);
		const lines = ["interval " + (i + 1) + " of " + n + ": " + fmtSec(st[i]) + " " + DASH + " " +
			fmtSec(ends[i]), isNum(T) ? "program: " + fmtExact(T) + " " + m :
			"program total unknown: no share (drawn as a gap)"];
		for (let k = K - 1; k >= 0; k--) {
			const v = raw[k][i];
			lines.push([catCss(k), str(shown[k].name) + ": " + (isNum(v) ? fmtExact(v) + " (" +
				(isNum(T) && T > 0 ? fmtPct(v / T) : DASH) + ")" :
				"not measured on its own (drawn as 0)")]);
		}
		if (isNum(T)) lines.push([OTHER, "other: " + fmtPct(other[i]) + " of the program"]);
		return lines;
	}, ol);

	caption(b, "The share of the program's " + metricLabel(m) + " that each object had in each interval (" + n +
		" intervals over " + fmtSec(t1 - t0) + "); grey: the rest of the program.", "Hover for the exact counts.");
	b.appendChild(el("div", {class: "figure"}, svg));
	b.appendChild(el("ul", {class: "legend"}, shown.map((s, k) => el("li", {title: str(s.name)}, [swatch(catCss(k)),
		el("span", {class: "legend-label", text: str(s.name)}),
		s.kind ? el("span", {class: "muted legend-kind", text: str(s.kind)}) : null])).concat(
		el("li", null, [swatch(OTHER),
			el("span", {class: "legend-label", text: "other (the rest of the program)"})]))));
	if (series.length > K)
		note(b, (series.length - K) + " more objects have series; they are counted in \u201cother\u201d.");
	if (nulls)
		note(b, nulls + " points were not measured (the object was not counted on its own in that interval): " +
		     "drawn as 0, their share is in \u201cother\u201d.");
	if (scaledN)
		note(b, "In " + scaledN + " intervals the objects' counts add up to more than the program's " +
		     "(separate counters): their shares are scaled to 100%.");
	return "drawn";
}

/* ---- view: heat strips ---- */

/* byte-offset ticks: a power-of-two step, about 8 ticks, and the end */
function byteTicks(size) {
	let step = 1;
	while (step * 8 < size) step *= 2;
	const out = [];
	for (let v = 0; v <= size; v += step) out.push(v);
	if (size - out[out.length - 1] > step / 2) out.push(size);
	return out;
}

function drawHeatStrip(b, h, n) {
	const size = isNum(h.size) && h.size > 0 ? h.size : 0;
	const bb = isNum(h.bucket_bytes) && h.bucket_bytes > 0 ? h.bucket_bytes : 1;
	const counts = arr(h.counts), n0 = counts.length, name = str(h.name), metric = str(h.metric);
	/* more than CAP.buckets buckets: f neighbours merged into one */
	const f = Math.max(1, Math.ceil(n0 / CAP.buckets)), nb = Math.ceil(n0 / f), bpd = f * bb;
	const span = Math.max(size, n0 * bb) || 1, cnt = new Float64Array(nb);
	let total = 0;
	counts.forEach((v, i) => { if (isNum(v)) { cnt[Math.floor(i / f)] += v; total += v; } });
	const max = cnt.reduce((a, v) => Math.max(a, v), 0);
	const fields = arr(h.fields).filter(x => isObj(x) && isNum(x.offset)).sort((a, c) => a.offset - c.offset);
	const ix = objIndex(name);
	const box = b.appendChild(el("div", {class: "heat-entry figure", id: "heat-" + n, "data-buckets": String(nb)}, [
		el("h3", {class: "entry-head"}, [el("span", {class: "entry-name", text: name}),
			el("span", {class: "muted", text: [fmtBytes(size), metric, fmtExact(h.samples) + " samples",
				fmtBytes(bpd) + " a bucket" + (f > 1 ? " (" + f + " merged)" : ""),
				str(h.addr)].filter(Boolean).join(" \u00b7 ")}),
			ix !== undefined ? el("a", {href: "#obj-" + (ix + 1), class: "small-link", text: "object row"}) :
			null]),
		h.per_block ? el("p", {class: "note",
			text: "Offsets inside each block of the site: all its blocks add to one strip."}) : null]));

	const W = 1000, ml = 8, PW = W - 16, sy = 4, sh = 30, H = fields.length ? 86 : 58;
	const XS = o => ml + Math.min(o, span) / span * PW;
	const svg = box.appendChild(makeSvg(W, H, "heat-strip", "estimated " + metric + " per address bucket of " + name));
	const rects = [];
	for (let j = 0; j < nb; j++) {
		const x0 = XS(j * bpd);
		rects.push([x0, sy, XS(Math.min(span, (j + 1) * bpd)) - x0 + (j + 1 < nb ? 0.4 : 0), sh,
			cnt[j] > 0 ? viridis(cnt[j] / max) : ZERO]);
	}
	paintRects(svg, rects, "bucket");
	sv("rect", {x: ml, y: sy, width: PW, height: sh, class: "frame"}, svg);
	const bt = byteTicks(span);
	sv("path", {d: bt.map(o => "M" + q(XS(o)) + " " + (sy + sh) + "v5").join(""), class: "axis"}, svg);
	axisLabels(svg, bt.map(o => [XS(o), fmtBytes(o)]), sy + sh + 17, "tick-label", CH);
	if (fields.length) {	/* field boundaries (2 units apart at least), names where there is room */
		const fy = sy + sh + 24;
		let lastTick = -1e9, lastLabel = -1e9, d = "";
		fields.forEach(function (fd, i) {
			const x = XS(fd.offset), label = str(fd.name);
			const x1 = i + 1 < fields.length ? XS(fields[i + 1].offset) : XS(fd.offset + (fd.size || 0));
			if (x - lastTick >= 2) {
				d += "M" + q(x) + " " + fy + "v8";
				lastTick = x;
			}
			if (x >= lastLabel + 4 && x1 - x >= label.length * CH + 4) {
				svText(svg, x + 2, fy + 20, label, {class: "field-label"});
				lastLabel = x + label.length * CH;
			}
		});
		sv("path", {d: d, class: "field-tick"}, svg);
	}
	const ol = outline(svg), over = sv("rect", {x: ml, y: 0, width: PW, height: H, class: "overlay"}, svg);
	hover(over, function (ev) {
		const j = Math.max(0, Math.min(nb - 1, Math.floor((svgPoint(svg, ev)[0] - ml) / PW * span / bpd)));
		const a = j * bpd, e = Math.min(span, (j + 1) * bpd);
		ol.at(XS(a), sy, XS(e) - XS(a), sh);
		const lines = [name + ": bytes " + fmtBytes(a) + " " + DASH + " " + fmtBytes(e),
			"offsets [" + fmtExact(a) + ", " +
			fmtExact(e) + ")", "estimated " + metric + ": " + fmtExact(cnt[j]),
			"share of the object's events: " + (total > 0 ? fmtPct(cnt[j] / total) : DASH)];
		/* the fields overlapping [a, e): from the first that ends after a */
		const names = [];
		let i = bisect(fields.map(x => x.offset + (x.size || 1)), a) + 1, more = 0;
		for (; i < fields.length && fields[i].offset < e; i++)
			if (names.length < 12) names.push(str(fields[i].name));
			else more++;
		if (names.length) lines.push("fields: " + names.join(", ") + (more ? " and " + more + " more" : ""));
		return lines;
	}, ol);
}

function drawHeat(b) {
	if (!V) return empty(b, noViews("address heat strips"));
	const hs = arr(V.heat), smp = isObj(V.samples) ? V.samples : null, drawn = hs.slice(0, CAP.heat);
	if (!hs.length)
		return empty(b, "This report has no heat strips: they are drawn from address samples, and " +
			     (smp ? "the " + fmtExact(smp.taken) + " samples taken landed in no object." :
			      "this run took none."));
	caption(b, "Estimated events per address bucket inside each object (samples scaled to counts" +
		(smp ? "; " + fmtExact(smp.taken) + " samples of " + str(smp.metric) + " taken" : "") +
		"). Each strip is coloured relative to its own largest bucket.", "Hover for the figures and the fields.");
	b.appendChild(gradientLegend("events:", "0", "the strip's maximum"));
	drawn.slice(0, CAP.eager).forEach((h, i) => drawHeatStrip(b, isObj(h) ? h : {}, i + 1));
	if (drawn.length > CAP.eager)
		more(b, "heat-more", (drawn.length - CAP.eager) + " more heat strips",
		     d => drawn.slice(CAP.eager).forEach((h, i) => drawHeatStrip(d, isObj(h) ? h : {}, CAP.eager + i + 1)));
	if (hs.length > CAP.heat)
		note(b, (hs.length - CAP.heat) + " more objects have heat strips; the first " + CAP.heat + " are drawn.");
	return "drawn";
}

/* ---- view: thread x object matrix (or per-thread bars) ---- */

function threadLabel(id) {
	const t = threadById.get(id);
	return "thread " + id + (t && isNum(t.tid) ? " (tid " + t.tid + ")" : "");
}

function drawThreadBars(b, m) {
	const ths = arr(R.threads).filter(t => isObj(t.totals) && isNum(t.totals[m]));
	const why = V && V.thread_matrix ? "" :
		"The per-object split is missing: this report has no thread \u00d7 object matrix" +
		(V ? "" : " (no \u201cviews\u201d member)") + ". ";
	if (!ths.length)
		return empty(b, why + "Nor do its threads have totals of " + m +
			     " (the strategy gave no per-thread program figures).");
	b.dataset.viewVariant = "thread-bars";
	const shown = ths.length <= CAP.bars ? ths :
		ths.slice().sort((x, y) => y.totals[m] - x.totals[m]).slice(0, CAP.bars);
	const max = shown.reduce((a, t) => Math.max(a, t.totals[m]), 0) || 1;
	const W = 1000, ml = 150, rh = 20, H = shown.length * rh + 8, PW = W - ml - 70;
	const svg = makeSvg(W, H, "thread-bars", "per-thread totals of " + m);
	shown.forEach(function (t, i) {
		const y = 4 + i * rh, w = Math.max(0, t.totals[m]) / max * PW;
		svText(svg, ml - 8, y + 14, "T" + str(t.id) + (isNum(t.tid) ? " \u00b7 " + t.tid : ""),
		       {class: "row-label", "text-anchor": "end"});
		sv("rect", {x: ml, y: y + 3, width: Math.max(w, 0.5), height: rh - 6, fill: OI[4], class: "bar"}, svg);
		svText(svg, ml + w + 6, y + 14, fmtCount(t.totals[m]), {class: "tick-label"});
	});
	hover(svg, function (ev) {
		const t = shown[Math.floor((svgPoint(svg, ev)[1] - 4) / rh)];
		if (!t) return null;
		return [threadLabel(t.id), m + ": " + fmtExact(t.totals[m]), t.exited ? "exited" : "running at the end"];
	});
	caption(b, why + "Per-thread totals of " + metricLabel(m) + " over all objects" +
		(ths.length > CAP.bars ? " (the " + CAP.bars + " largest of " + ths.length + " threads)" : "") + ".");
	b.appendChild(el("div", {class: "figure"}, svg));
	return "drawn";
}

function drawMatrix(b) {
	const m = S.metric, tm = V && V.thread_matrix;
	if (!isObj(tm) || !Array.isArray(tm.objects) || !Array.isArray(tm.threads)) return drawThreadBars(b, m);
	const ms = arr(tm.metrics);
	if (ms.indexOf(m) < 0)
		return empty(b, "The thread \u00d7 object matrix has no counts of " + m + " (it has " +
			     (ms.length ? ms.join(", ") : "none") + "): choose one of those in the metric selector.");
	b.dataset.viewVariant = "matrix";
	const objs = tm.objects.filter(o => isObj(o) && isObj(o.values) && Array.isArray(o.values[m]));
	if (!objs.length || !tm.threads.length)
		return empty(b, "The thread \u00d7 object matrix is empty: no object of the final measurement " +
			     "has per-thread " + m + ".");
	const rows = objs.slice(0, CAP.rows), cols = tm.threads.slice(0, CAP.cols), NR = rows.length, C = cols.length;
	const val = (o, c) => isNum(o.values[m][c]) ? o.values[m][c] : null;
	let max = 0, restSum = 0;
	const rowSum = objs.map(o => tm.threads.reduce((s, t, c) => s + (val(o, c) || 0), 0));
	const colSum = tm.threads.map((t, c) => objs.reduce((s, o) => s + (val(o, c) || 0), 0));
	objs.forEach((o, r) => tm.threads.forEach((t, c) => {
		if (r < CAP.rows && c < CAP.cols) max = Math.max(max, val(o, c) || 0);
		else restSum += val(o, c) || 0;
	}));

	const lw = 230, cw = Math.max(14, Math.min(64, Math.floor((1000 - lw - 10) / C))), chh = 26, rh = 22;
	const svg = makeSvg(lw + C * cw + 10, chh + NR * rh + 6, "matrix", "thread by object matrix of " + m);
	const cells = [], labels = sv("g", {class: "cell-labels"});
	cols.forEach((id, c) => (C <= 32 || c % Math.ceil(C / 32) === 0) &&
		svText(svg, lw + c * cw + cw / 2, chh - 8, "T" + str(id), {class: "col-label", "text-anchor": "middle"}));
	rows.forEach(function (o, r) {
		const y = chh + r * rh, name = str(o.name), ix = objIndex(name);
		svText(ix !== undefined ? sv("a", {href: "#obj-" + (ix + 1)}, svg) : svg, lw - 8, y + 15,
		       truncate(name, Math.floor((lw - 12) / CH)),
		       {class: "row-label" + (ix !== undefined ? " link" : ""), "text-anchor": "end"});
		for (let c = 0; c < C; c++) {
			const v = val(o, c), t = v && max > 0 ? v / max : 0;
			cells.push([lw + c * cw, y, cw - 1, rh - 1, v === null ? "#fff" : v > 0 ? viridis(t) : ZERO]);
			if (cw >= 40 && v > 0)
				svText(labels, lw + c * cw + cw / 2, y + 15, fmtCount(v),
				       {class: "cell-label", "text-anchor": "middle", style: "fill:" + inkOn(t)});
		}
	});
	paintRects(svg, cells, "cells");
	svg.appendChild(labels);
	const ol = outline(svg);
	hover(svg, function (ev) {
		const pt = svgPoint(svg, ev), r = Math.floor((pt[1] - chh) / rh), c = Math.floor((pt[0] - lw) / cw);
		ol.off();
		if (r < 0 || r >= NR) return null;
		const o = rows[r], v = val(o, c);
		if (c < 0 || c >= C)
			return pt[0] < lw ? [str(o.name), m + " over all threads: " + fmtExact(rowSum[r])] : null;
		ol.at(lw + c * cw, chh + r * rh, cw - 1, rh - 1);
		return [str(o.name) + " \u00d7 " + threadLabel(cols[c]),
			m + ": " + (v === null ? "not measured" : fmtExact(v)),
			"of the object's: " + (rowSum[r] > 0 && v !== null ? fmtPct(v / rowSum[r]) : DASH),
			"of the thread's (these objects): " + (colSum[c] > 0 && v !== null ? fmtPct(v / colSum[c]) : DASH)];
	}, ol);
	caption(b, "Each object's " + metricLabel(m) + " by thread, from the final measurement: rows objects, " +
		"columns threads (ameba ids).", "Hover for the exact counts.");
	b.appendChild(gradientLegend(m + ":", "0", fmtCount(max)));
	b.appendChild(el("div", {class: "figure scroll-x"}, svg));
	if (objs.length > NR || tm.threads.length > C)
		note(b, "Not drawn: " + [objs.length > NR ? (objs.length - NR) + " more objects" : "",
			tm.threads.length > C ? (tm.threads.length - C) + " more threads" : ""].filter(Boolean).join(" and ") +
			", with " + fmtExact(restSum) + " " + m + " between them.");
	return "drawn";
}

/* ---- view: false-sharing line maps ---- */

/* the finding on object name, a FalseSharing one first */
function findingFor(name) {
	const fs = arr(R.findings).filter(f => isObj(f.context) && isObj(f.context.object) &&
		str(f.context.object.name) === name);
	return fs.find(f => /FalseSharing/.test(str(f.property))) || fs[0] || null;
}

function drawLineEntry(b, e) {
	const name = str(e.name), wb = isNum(e.word_bytes) && e.word_bytes > 0 ? e.word_bytes : 8, metric = str(e.metric);
	const lines = arr(e.lines), shown = lines.slice(0, CAP.lines).map(l => isObj(l) ? l : {}), f = findingFor(name);
	const grids = el("div", {class: "grids"});
	const box = b.appendChild(el("div", {class: "lines-entry figure", "data-finding": f ? str(f.rank) : null}, [
		el("h3", {class: "entry-head"}, [el("span", {class: "entry-name", text: name}), el("span", {class: "muted",
			text: [metric, fmtExact(e.samples) + " samples", wb + "-byte words", str(e.addr)]
				.filter(Boolean).join(" \u00b7 ")})]),
		f ? el("p", {class: "belongs"}, ["Belongs to finding ", el("a", {href: "#finding-" + str(f.rank),
			text: "#" + str(f.rank) + " " + str(f.property)}),
			" (" + fmtPct(f.severity) + " severity)."]) : null,
		grids]));
	/* the entry's threads, one colour each, and one intensity scale */
	const ids = new Set();
	let max = 0;
	shown.forEach(l => arr(l.words).forEach(w => arr(isObj(w) ? w.threads : null).forEach(p => {
		if (!Array.isArray(p) || !isNum(p[0])) return;
		ids.add(p[0]);
		if (isNum(p[1])) max = Math.max(max, p[1]);
	})));
	const tids = Array.from(ids).sort((x, y) => x - y), tshown = tids.slice(0, CAP.lineThreads);
	const colour = new Map(tids.map((id, i) => [id, OI[i % OI.length]]));
	shown.forEach(function (l) {
		/* words by offset inside the line; (thread, word) -> count */
		const byOff = new Map(), val = new Map(), lineOff = isNum(l.offset) ? l.offset : 0;
		let lineBytes = 64;
		arr(l.words).forEach(w => {
			if (!isObj(w) || !isNum(w.offset)) return;
			byOff.set(w.offset, w);
			lineBytes = Math.max(lineBytes, Math.ceil((w.offset + wb) / 64) * 64);
			arr(w.threads).forEach(p => Array.isArray(p) && isNum(p[1]) &&
				val.set(p[0] + "/" + w.offset, p[1]));
		});
		const offs = [];
		for (let o = 0; o < lineBytes; o += wb) offs.push(o);
		const tb = el("tbody");
		tshown.forEach(function (id) {
			const head = el("th", {class: "thread"}, [swatch(colour.get(id)), "T" + id]);
			const tr = tb.appendChild(el("tr", null, head));
			const base = [1, 3, 5].map(k => parseInt(colour.get(id).substr(k, 2), 16));
			for (const o of offs) {
				const v = val.get(id + "/" + o) || 0, td = tr.appendChild(document.createElement("td"));
				td.className = "cell";
				if (!(v > 0)) continue;
				/* the thread's colour over white, stronger with the count */
				const a = 0.15 + 0.85 * v / (max || 1);
				const rgb = base.map(x => Math.round(x * a + 255 * (1 - a)));
				td.style.cssText = "background:rgb(" + rgb.join(",") + ");color:" +
					(0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] < 140 ? "#fff" : "#000");
				td.textContent = fmtCount(v);
			}
		});
		const tbl = el("table", {class: "line-grid"}, [
			el("caption", {text: "line at +" + fmtExact(lineOff) + (l.addr ? " (" + str(l.addr) + ")" : "")}),
			el("thead", null, el("tr", null, [el("th", {class: "corner", text: "thread \\ word"})]
				.concat(offs.map(o => {
				const w = byOff.get(o);
				return el("th", {class: "word"}, [el("div", {text: "+" + o}), w && w.field ?
					el("div", {class: "field", title: str(w.field), text: truncate(str(w.field), 12)}) :
					null]);
			})))), tb]);
		hover(tbl, function (ev) {
			const td = ev.target.closest ? ev.target.closest("td") : null;
			if (!td || !td.parentNode || td.parentNode.parentNode !== tb) return null;
			const id = tshown[td.parentNode.sectionRowIndex], o = offs[td.cellIndex - 1], w = byOff.get(o);
			const v = val.get(id + "/" + o) || 0;
			const wordSum = tids.reduce((s, t) => s + (val.get(t + "/" + o) || 0), 0);
			return [[colour.get(id), threadLabel(id) + ", word +" + o +
				(w && w.field ? " (" + str(w.field) + ")" : "")],
				"byte " + fmtExact(lineOff + o) + " of the object",
				"estimated " + metric + ": " + fmtExact(v),
				"of the word's: " + (wordSum > 0 ? fmtPct(v / wordSum) : DASH)];
		});
		grids.appendChild(el("div", {class: "scroll-x"}, tbl));
	});
	if (lines.length > shown.length || tids.length > tshown.length)
		note(box, "Not drawn: " + [lines.length > shown.length ? (lines.length - shown.length) + " more lines" : "",
			tids.length > tshown.length ? (tids.length - tshown.length) + " more threads" : ""]
			.filter(Boolean).join(" and ") + ".");
}

function drawLines(b) {
	if (!V) return empty(b, noViews("false-sharing line maps"));
	const ls = arr(V.lines), drawn = ls.slice(0, CAP.lineObjs).map(e => isObj(e) ? e : {}), k = CAP.eager / 2;
	if (!ls.length)
		return empty(b, "This report has no line maps: they come from sampled coherence misses, and " +
			     (V.samples ? "no object had sampled coherence misses (or the backend counts none)." :
			      "this run took no samples."));
	caption(b, "Who touched which words of the contended cache lines: sampled coherence misses by thread (rows) and " +
		"word (columns), as estimated events (samples scaled to counts). Threads on different words of one line: " +
		"false sharing; several threads on one word: true sharing.", "Hover for the exact counts.");
	drawn.slice(0, k).forEach(e => drawLineEntry(b, e));
	if (drawn.length > k)
		more(b, "lines-more", (drawn.length - k) + " more objects' line maps",
		     d => drawn.slice(k).forEach(e => drawLineEntry(d, e)));
	if (ls.length > CAP.lineObjs)
		note(b, (ls.length - CAP.lineObjs) + " more objects have line maps; the first " + CAP.lineObjs +
		     " are drawn.");
	return "drawn";
}

/* ---- lazily drawn <details> ---- */

const lazyBuilds = [];

/* build() now if det is open, else when it is first opened (or printed) */
function lazy(det, build) {
	let done = false;
	const run = function () {
		if (done) return;
		done = true;
		build();
		det.dataset.built = "1";
	};
	det.dataset.built = "0";
	det.ameba_build = run;
	if (det.open) run();
	else det.addEventListener("toggle", () => det.open && run());
	lazyBuilds.push(run);
}

/* a closed <details id=id> whose content fill(div) draws when first opened */
function more(b, id, summary, fill) {
	const div = el("div"), det = el("details", {id: id, class: "more"}, [el("summary", {text: summary}), div]);
	lazy(det, () => fill(div));
	return b.appendChild(det);
}

/* ---- view: search trace ---- */

/* the trace's rows: regions with padded hex bounds, at most CAP.regions
 * (the largest), in address order; the sorted region boundaries */
function traceData(rows) {
	let cut = 0, maxShare = 0;
	const bset = new Set();
	const data = rows.map(function (iv) {
		iv = isObj(iv) ? iv : {};
		const T = isNum(iv.total) && iv.total > 0 ? iv.total : null;
		let regs = arr(iv.regions).filter(r => Array.isArray(r) && hexPad(r[0]) && hexPad(r[1])).map(r =>
			({lo: hexPad(r[0]), hi: hexPad(r[1]), n: isNum(r[2]) ? r[2] : 0,
			  name: r[3] == null ? null : str(r[3])}));
		if (regs.length > CAP.regions) {
			cut += regs.length - CAP.regions;
			regs = regs.sort((x, y) => y.n - x.n).slice(0, CAP.regions);
		}
		regs.sort((x, y) => x.lo < y.lo ? -1 : x.lo > y.lo ? 1 : 0).forEach(r => {
			bset.add(r.lo);
			bset.add(r.hi);
			r.share = T ? r.n / T : null;
			if (T) maxShare = Math.max(maxShare, r.share);
		});
		return {iv: iv, regs: regs, T: T};
	});
	return {data: data, bounds: Array.from(bset).sort(), cut: cut, maxShare: maxShare};
}

function drawTrace(b) {
	const strat = isObj(R.strategy) ? str(R.strategy.name) : "";
	const tr = V && isObj(V.trace) ? V.trace : null, ivs = tr ? arr(tr.intervals) : [];
	if (!ivs.length) {
		if (/^objects(,|$)/.test(strat))
			return empty(b, "The objects strategy measures every object in every interval, " +
				     "so there is no search to trace.");
		if (!V) return empty(b, noViews("search trace"));
		return empty(b, "This report has no search trace: the strategy (" + (strat || "unknown") +
			     ") counted no address spans, only whole objects.");
	}
	const metric = str(tr.metric || R.metric), rows = ivs.slice(0, CAP.trace), fig = el("div", {class: "figure"});

	function build() {	/* when the <details> is first open: a 400 x 64 trace is 25,600 regions */
		const td = traceData(rows), data = td.data, bounds = td.bounds, NB = bounds.length, maxShare = td.maxShare;
		const pos = new Map(bounds.map((a, i) => [a, i]));
		const lw = 120, top = 46, rh = 16, gap = 3, W = 1000, PW = W - lw - 10;
		const H = top + data.length * (rh + gap) + 6;
		const X = a => lw + (NB > 1 ? pos.get(a) / (NB - 1) : 0) * PW;	/* ordinal: every boundary one step */
		const svg = makeSvg(W, H, "trace", "the search's regions per interval"), rects = [], xs = [];
		if (NB <= 1000)
			sv("path", {class: "axis", d: bounds.map(a => "M" + q(X(a)) + " " + (top - 6) + "v4").join("")}, svg);
		const nl = Math.min(NB, 7), picks = [];
		for (let k = 0; k < nl; k++) picks.push(bounds[nl > 1 ? Math.round(k * (NB - 1) / (nl - 1)) : 0]);
		axisLabels(svg, picks.map(a => [X(a), hexShow(a)]), top - 12, "addr-label", 6);
		svText(svg, lw, 12, "address (each region boundary one step: not to scale) \u2192", {class: "axis-title"});
		const labels = sv("g", {class: "region-labels"});
		data.forEach(function (d, i) {
			const y = top + i * (rh + gap);
			const when = isNum(d.iv.start_s) ? " \u00b7 " + d.iv.start_s.toFixed(2) + " s" : "";
			svText(svg, lw - 6, y + 12, "it. " + str(d.iv.i) + when,
			       {class: "row-label", "text-anchor": "end"});
			rects.push([lw, y, PW, rh, "#f2f4f6"]);
			xs.push(d.regs.map(function (r) {
				const x0 = X(r.lo), w = Math.max(1, X(r.hi) - x0);
				const t = r.share != null && maxShare > 0 ? r.share / maxShare : 0;
				const room = Math.floor((w - 6) / 5.6);
				rects.push([x0, y, w, rh, r.share != null ? viridis(t) : OTHER]);
				if (r.name && room >= 4)
					svText(labels, x0 + 3, y + 12, truncate(r.name, room), {class: "region-label",
						style: "fill:" + (r.share != null ? inkOn(t) : "#000")});
				return x0;
			}));
		});
		paintRects(svg, rects, "region");
		svg.appendChild(labels);
		const ol = outline(svg);
		hover(svg, function (ev) {
			const pt = svgPoint(svg, ev), i = Math.floor((pt[1] - top) / (rh + gap)), d = data[i];
			ol.off();
			if (!d || pt[1] - top - i * (rh + gap) > rh) return null;
			const head = "interval " + str(d.iv.i) + (isNum(d.iv.start_s) ? " at " + fmtSec(d.iv.start_s) : "");
			const j = bisect(xs[i], pt[0]), r = d.regs[j];
			if (pt[0] < lw || !r || pt[0] > X(r.hi) + 0.5)
				return [head, d.regs.length + " regions",
					"program: " + (d.T ? fmtExact(d.T) + " " + metric : "total unknown")];
			const size = hexDiff(r.lo, r.hi);
			ol.at(X(r.lo), top + i * (rh + gap), X(r.hi) - X(r.lo), rh);
			return [head, "[" + hexShow(r.lo) + ", " + hexShow(r.hi) + ")",
				r.name ? "object " + r.name : "a span (not one object)",
				"size: " + fmtBytes(size) + " (" + fmtExact(size) + " B)", metric + ": " + fmtExact(r.n),
				"share of the interval: " + (r.share != null ? fmtPct(r.share) : "unknown (no total)")];
		}, ol);
		append(fig, [gradientLegend("share:", "0", fmtPct(maxShare)), svg]);
		if (td.cut)
			note(fig, td.cut + " small regions not drawn (at most " + CAP.regions +
			     " an interval, the largest).");
	}
	const det = el("details", {id: "trace-details", open: ivs.length <= 30}, [
		el("summary", {text: ivs.length + " intervals of " + metric +
			(ivs.length > 30 ? " (click to open)" : "")}),
		caption(el("div"), "How the search split the address space: one row per interval, one rectangle per " +
			"counted region, coloured by its share of the interval's " + metric + " (grey: unknown). Named " +
			"regions are single objects; the others are spans.", "Hover for the addresses and counts."), fig]);
	lazy(det, build);
	b.appendChild(det);
	if (ivs.length > rows.length)
		note(b, "Not drawn: the last " + (ivs.length - rows.length) + " intervals (the first " + rows.length +
		     " are).");
	if (tr.intervals_left_out > 0) note(b, "The agent kept no record of " + tr.intervals_left_out + " more intervals.");
	return "drawn";
}

/* ---- tables: sortable and paged, only the shown page is built ---- */

/* st: {sort, dir, page} kept across redraws; cols: {key, label, num,
 * value(row, i) (the sort key), cell(row, i) -> kids, title(row)} */
function pagedTable(b, st, rows, cols, rowId, label) {
	const n = rows.length, thead = el("thead"), tbody = el("tbody"), info = el("span", {class: "pager-info"});
	const prev = el("button", {type: "button", class: "pager-prev", text: "\u2039 prev"});
	const next = el("button", {type: "button", class: "pager-next", text: "next \u203a"});

	function order() {	/* the sorted row indices, cached until the sort or the metric changes */
		const key = st.sort + "/" + st.dir + "/" + S.metric;
		if (st.order && st.order.length === n && st.orderKey === key) return st.order;
		const o = new Int32Array(n), col = cols.find(c => c.key === st.sort);
		for (let i = 0; i < n; i++) o[i] = i;
		if (col) {
			const keys = rows.map(col.value), d = st.dir;
			o.set(Array.from(o).sort(function (x, y) {
				const p = keys[x], r = keys[y], pn = p == null || p !== p, rn = r == null || r !== r;
				if (pn || rn) return pn === rn ? x - y : pn ? 1 : -1;	/* missing values last */
				return p < r ? -d : p > r ? d : x - y;
			}));
		}
		st.orderKey = key;
		return st.order = o;
	}
	function render() {
		const o = order(), pages = Math.max(1, Math.ceil(n / PAGE));
		st.page = Math.max(0, Math.min(st.page, pages - 1));
		const first = st.page * PAGE, last = Math.min(n, first + PAGE), frag = document.createDocumentFragment();
		for (let p = first; p < last; p++) {
			const i = o[p], row = rows[i];
			frag.appendChild(el("tr", {id: rowId(i)}, cols.map(c => el("td", {class: c.num ? "num" : null,
				title: c.title ? c.title(row) : null}, c.cell(row, i)))));
		}
		tbody.textContent = "";
		tbody.appendChild(frag);
		info.textContent = n ? "rows " + (first + 1) + DASH + last + " of " + fmtExact(n) : "no rows";
		Object.assign(info.dataset, {first: String(n ? first + 1 : 0), last: String(last), count: String(n)});
		prev.disabled = st.page === 0;
		next.disabled = st.page >= pages - 1;
		for (const th of thead.querySelectorAll("th"))
			th.setAttribute("aria-sort", th.dataset.key !== st.sort ? "none" :
				st.dir > 0 ? "ascending" : "descending");
	}
	thead.appendChild(el("tr", null, cols.map(function (c) {
		const btn = el("button", {type: "button", class: "sort", text: c.label});
		btn.addEventListener("click", function () {
			if (st.sort === c.key) st.dir = -st.dir;
			else [st.sort, st.dir] = [c.key, c.num && c.key !== "rank" && c.key !== "id" ? -1 : 1];
			st.page = 0;
			render();
		});
		return el("th", {class: c.num ? "num" : null, "data-key": c.key, scope: "col"}, btn);
	})));
	prev.addEventListener("click", () => { st.page--; render(); });
	next.addEventListener("click", () => { st.page++; render(); });
	b.appendChild(el("div", {class: "scroll-x"}, el("table", {class: "data sortable", "data-rows": String(n),
		"aria-label": label}, [thead, tbody])));
	b.appendChild(el("div", {class: "pager"}, [prev, info, next]));
	st.show = function (i) {	/* turns to the page of row i */
		st.page = Math.floor(Math.max(0, order().indexOf(i)) / PAGE);
		render();
	};
	render();
}

const objTable = {sort: null, dir: 1, page: 0};
const thrTable = {sort: null, dir: 1, page: 0};

function drawObjects(b) {
	const objs = arr(R.objects), m = S.metric, tot = o => isObj(o.totals) ? o.totals[m] : null;
	const pr = isObj(R.html_pruned) && R.html_pruned.objects > 0 ? R.html_pruned.objects : 0;
	if (!objs.length)
		return empty(b, "This report lists no objects: the search measured none" +
			     (isObj(R.coverage) && R.coverage.basis === "none" ? " (coverage basis \u201cnone\u201d)." :
			      "."));
	caption(b, "The objects and allocation sites by the run's metric, best first; share: of " + str(R.metric) +
		" over the object's own window." +
		(pr ? " " + fmtExact(pr) + " lower-ranked objects were left out of this page." : ""),
		"Click a header to sort.");
	pagedTable(b, objTable, objs, [
		{key: "rank", label: "#", num: true, value: (o, i) => i, cell: (o, i) => String(i + 1)},
		{key: "name", label: "object", value: o => str(o.name), title: o => o.site ? "site " + str(o.site) : null,
		 cell: o => [el("span", {class: "obj-name", text: str(o.name)}), o.provisional ? el("span", {class: "badge",
			title: "counted while the strategy searched, not measured after", text: "provisional"}) : null,
			heatByName.has(str(o.name)) ?
			el("a", {href: "#heat-" + (heatByName.get(str(o.name)) + 1), class: "small-link", text: "heat"}) : null]},
		{key: "kind", label: "kind", value: o => str(o.kind), cell: o => str(o.kind)},
		{key: "size", label: "size", num: true, value: o => o.size, cell: o => fmtBytes(o.size),
		 title: o => fmtExact(o.size) + " B"},
		{key: "blocks", label: "blocks", num: true, value: o => o.blocks, cell: o => fmtExact(o.blocks)},
		{key: "share", label: "share", num: true, value: o => o.share, cell: o => fmtPct(o.share),
		 title: o => fmtExact(o.share)},
		{key: "metric", label: m, num: true, value: tot, cell: o => fmtCount(tot(o)), title: o => fmtExact(tot(o))}
	], i => "obj-" + (i + 1), "objects");
	return "drawn";
}

function drawThreads(b) {
	const ths = arr(R.threads), m = S.metric, tot = (t, k) => isObj(t.totals) ? t.totals[k] : null;
	const pr = isObj(R.html_pruned) && R.html_pruned.threads > 0 ? R.html_pruned.threads : 0;
	if (!ths.length) return empty(b, "This report lists no threads.");
	if (ths.every(t => !isObj(t.totals) || !Object.keys(t.totals).length))
		note(b, "The threads have no totals: the strategy" + (isObj(R.strategy) && R.strategy.name ? " (" +
		     str(R.strategy.name) + ")" : "") + " gave no per-thread program figures.");
	if (pr) note(b, fmtExact(pr) + " threads were left out of this page.");
	const count = (k, key) => ({key: key, label: k, num: true, value: t => tot(t, k), cell: t => fmtCount(tot(t, k)),
		title: t => fmtExact(tot(t, k))});
	pagedTable(b, thrTable, ths, [
		{key: "id", label: "id", value: t => t.id, cell: t => "T" + str(t.id)},
		{key: "tid", label: "tid", num: true, value: t => t.tid, cell: t => str(t.tid)},
		{key: "exited", label: "exited", value: t => t.exited ? 1 : 0, cell: t => t.exited ? "yes" : "no"},
		count(m, "metric"), count("mem_ref", "mem_ref")
	], i => "thread-" + str(ths[i].id), "threads");
	return "drawn";
}

/* ---- the page ---- */

const VIEWS = [
	{id: "summary", draw: drawSummary},
	{id: "findings", title: "Findings", nav: "Findings", draw: drawFindings},
	{id: "timeline", title: "Over time", nav: "Timeline", draw: drawTimeline, metric: true},
	{id: "heat", title: "Inside the objects: address heat strips", nav: "Heat", draw: drawHeat},
	{id: "matrix", title: "Threads \u00d7 objects", nav: "Threads \u00d7 objects", draw: drawMatrix, metric: true},
	{id: "lines", title: "Contended cache lines", nav: "Lines", draw: drawLines},
	{id: "trace", title: "Search trace", nav: "Trace", draw: drawTrace},
	{id: "objects", title: "Objects", nav: "Objects", draw: drawObjects, metric: true},
	{id: "threads", title: "Threads", nav: "Threads", draw: drawThreads, metric: true}
];

/* draws view v into its section; a failure stays in the section */
function drawView(v) {
	const b = v.body, t = performance.now();
	let state;
	b.textContent = "";
	delete b.dataset.viewVariant;
	try {
		state = v.draw(b) || "drawn";
	} catch (e) {
		state = "error";
		b.textContent = "";
		b.appendChild(el("p", {class: "view-error", text: "This view could not be drawn: " + errText(e)}));
		console.error("ameba report: view " + v.id + " failed", e);
		noteError("view " + v.id + ": " + errText(e));
	}
	v.section.dataset.viewState = state;
	v.section.dataset.renderMs = (performance.now() - t).toFixed(1);
	if (b.dataset.viewVariant) v.section.dataset.viewVariant = b.dataset.viewVariant;
	else delete v.section.dataset.viewVariant;
}

/* One pass over the objects and threads: indexes the names the findings
 * and the views link (objByName), and returns every metric with counts
 * (the selector's choices, in the report's order). An object costs a Set
 * lookup and an enumeration of its totals: no index of 100,000 names. */
function scanReport() {
	const want = new Set(), seen = new Set(R.metric ? [str(R.metric)] : []), order = arr(R.metrics).map(str);
	const add = o => isObj(o) && o.name != null && want.add(str(o.name));
	arr(R.findings).forEach(f => [f].concat(arr(f.absorbed)).forEach(g => isObj(g.context) && add(g.context.object)));
	arr(isObj(R.summary) && R.summary.top_objects).forEach(add);
	if (V) [V.heat, V.series, V.lines, isObj(V.thread_matrix) && V.thread_matrix.objects].forEach(l => arr(l).forEach(add));
	arr(V && V.series_metrics).forEach(m => seen.add(str(m)));
	arr(V && isObj(V.thread_matrix) && V.thread_matrix.metrics).forEach(m => seen.add(str(m)));
	const objs = arr(R.objects);
	for (let i = 0; i < objs.length; i++) {
		const o = objs[i];
		if (want.has(o.name)) {
			objByName.set(o.name, i);
			want.delete(o.name);
		}
		if (isObj(o.totals)) for (const k in o.totals) if (!seen.has(k)) seen.add(k);
	}
	for (const t of arr(R.threads)) if (isObj(t.totals)) for (const k in t.totals) if (!seen.has(k)) seen.add(k);
	const rank = x => order.indexOf(x) < 0 ? 1e9 : order.indexOf(x);
	return Array.from(seen).sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/* makes element id exist (a heat strip drawn later) and opens the <details> around it */
function revealTarget(id) {
	const more = /^heat-/.test(id) && !document.getElementById(id) && document.getElementById("heat-more");
	if (more && more.ameba_build) more.ameba_build();
	const t = document.getElementById(id);
	for (let d = t ? t.closest("details") : null; d; d = d.parentElement && d.parentElement.closest("details"))
		d.open = true;
	return t;
}

/* shows the row of the n-th object (turning the table's page) and flashes it */
function goToObject(n) {
	if (!(n >= 1 && n <= arr(R.objects).length) || !objTable.show) return;
	objTable.show(n - 1);
	const row = document.getElementById("obj-" + n);
	if (!row) return;
	row.scrollIntoView({block: "center"});
	row.classList.remove("flash");
	void row.offsetWidth;	/* restarts the animation */
	row.classList.add("flash");
}

/* follows location.hash: an object row, or any other anchor; #only=view-NAME
 * shows that view alone, its <details> open (one picture a view) */
function followHash() {
	const h = location.hash.slice(1), mm = /^obj-(\d+)$/.exec(h), only = /^only=([\w-]+)$/.exec(h);
	if (mm) return goToObject(+mm[1]);
	if (only) {
		const sec = document.getElementById(only[1]);
		if (!sec || !sec.classList.contains("view")) return;
		body.dataset.amebaOnly = only[1];
		sec.classList.add("only");
		sec.querySelectorAll("details").forEach(d => { d.open = true; if (d.ameba_build) d.ameba_build(); });
		return;
	}
	const t = h && revealTarget(h);
	if (t) t.scrollIntoView();
}

function build() {
	const app = document.getElementById("ameba-app") || body.appendChild(el("div", {id: "ameba-app"}));
	const src = document.getElementById("ameba-report");
	app.textContent = "";
	body.appendChild(tip);
	try {
		const t = performance.now();
		R = JSON.parse(src ? src.textContent : "");
		body.dataset.amebaParseMs = (performance.now() - t).toFixed(1);
	} catch (e) {
		app.appendChild(el("p", {class: "view-error", text: "The report's JSON could not be read: " + errText(e)}));
		return noteError("report JSON: " + errText(e));
	}
	if (!isObj(R)) {
		app.appendChild(el("p", {class: "view-error", text: "The report is not a JSON object."}));
		return noteError("report JSON: not an object");
	}
	const tp = performance.now();
	/* entries that are not objects would only make the views fail */
	for (const k of ["findings", "objects", "threads"]) if (R[k] != null) R[k] = arr(R[k]).filter(isObj);
	arr(R.findings).forEach(f => { if (f.absorbed != null) f.absorbed = arr(f.absorbed).filter(isObj); });
	if (R.warnings != null) R.warnings = arr(R.warnings).filter(w => w != null);
	V = isObj(R.views) ? R.views : null;
	arr(V && V.heat).slice(0, CAP.heat).forEach((h, i) =>
		isObj(h) && !heatByName.has(str(h.name)) && heatByName.set(str(h.name), i));
	arr(R.threads).forEach(t => threadById.set(t.id, t));
	S.metrics = scanReport();
	S.metric = body.dataset.amebaMetric = R.metric ? str(R.metric) : S.metrics[0] || "";
	body.dataset.amebaPrepMs = (performance.now() - tp).toFixed(1);

	/* the toolbar (view links, the metric selector) after the summary, then the views */
	const sel = el("select", {id: "metric-select", "aria-label": "metric"},
		S.metrics.map(m => el("option", {value: m, text: metricLabel(m), selected: m === S.metric})));
	const nav = el("nav", {id: "ameba-nav", class: "toolbar"}, [
		el("ul", null, VIEWS.filter(v => v.nav).map(v =>
			el("li", null, el("a", {href: "#view-" + v.id, text: v.nav})))),
		el("label", {class: "metric-pick"}, [el("span", {text: "Metric"}), sel])]);
	for (const v of VIEWS) {
		v.section = app.appendChild(el("section", {id: "view-" + v.id, class: "view view-" + v.id,
			"data-view-state": "pending"},
			v.title ? el("h2", {text: v.title}) : null));
		v.body = v.section.appendChild(el("div", {class: "view-body"}));
		if (v.id === "summary") app.appendChild(nav);
		drawView(v);
	}
	app.appendChild(el("footer", {id: "ameba-footer"}, [["ameba " + (str(R.ameba_version) || "?"),
		"schema " + str(R.schema) + " version " + str(R.version), "started " + (str(R.started) || "?"),
		"ended " + (str(R.ended) || "?"), ""].join(" \u00b7 "), el("span", {id: "render-ms"})]));

	sel.addEventListener("change", function () {
		S.metric = body.dataset.amebaMetric = sel.value;
		VIEWS.filter(v => v.metric).forEach(drawView);
	});
	/* in-page links: an object row turns the table's page; the others may need a <details> opened */
	document.addEventListener("click", function (ev) {
		const a = ev.target && ev.target.closest ? ev.target.closest("a") : null;
		const href = a ? a.getAttribute("href") || "" : "", mm = /^#obj-(\d+)$/.exec(href);
		if (!mm) {
			if (href.startsWith("#")) revealTarget(href.slice(1));
			return;
		}
		ev.preventDefault();
		goToObject(+mm[1]);
		try {
			history.replaceState(null, "", href);
		} catch (e) {
			/* file: URLs may refuse; the row is shown anyway */
		}
	});
	window.addEventListener("hashchange", followHash);
	/* printing: every lazy part drawn, every <details> open; restored after */
	let closed = [];
	window.addEventListener("beforeprint", function () {
		lazyBuilds.forEach(run => run());
		closed = Array.from(document.querySelectorAll("details:not([open])"));
		closed.forEach(d => { d.open = true; });
	});
	window.addEventListener("afterprint", function () {
		closed.forEach(d => { d.open = false; });
		closed = [];
	});
	followHash();
}

try {
	build();
} catch (e) {
	console.error("ameba report: drawing failed", e);
	noteError("drawing failed: " + errText(e));
} finally {
	const ms = performance.now() - T0, out = document.getElementById("render-ms");
	body.dataset.amebaRenderMs = ms.toFixed(1);
	if (out) out.textContent = "drawn in " + ms.toFixed(0) + " ms";
	body.dataset.amebaRendered = "1";
}
})();
