// The browser half of heatcanvas.py, first part: a plotly figure's JSON read (heatmap
// traces, axes, titles, annotations, shapes, colour bars) and laid out. Its functions are
// used by heatcanvas_paint.js, which Python appends to this file.
const DT = {f4: Float32Array, f8: Float64Array, i1: Int8Array, u1: Uint8Array,
            i2: Int16Array, u2: Uint16Array, i4: Int32Array, u4: Uint32Array};
function grid(v) {  // a matrix: plotly's {dtype, bdata, shape} or nested lists
  if (v && v.bdata !== undefined) {
    let bytes;
    if (Uint8Array.fromBase64) bytes = Uint8Array.fromBase64(v.bdata);  // no string between
    else {
      const bin = atob(v.bdata);
      bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    }
    const flat = new DT[v.dtype](bytes.buffer);
    const shape = String(v.shape ?? flat.length).split(",").map(Number);
    return shape.length > 1 ? {flat, rows: shape[0], cols: shape[1]}
                            : {flat, rows: 1, cols: shape[0]};
  }
  const rows = v.length, cols = rows ? v[0].length : 0, flat = new Float64Array(rows * cols);
  for (let i = 0; i < rows; i++)
    for (let j = 0; j < cols; j++) flat[i * cols + j] = v[i][j] == null ? NaN : v[i][j];
  return {flat, rows, cols};
}
function list(v) {  // a 1-D array of labels or numbers
  if (v == null) return null;
  if (v.bdata !== undefined) return Array.from(grid(v).flat);
  return v;
}
const plain = s => String(s ?? "").replace(/<br\s*\/?>/g, "\n").replace(/<[^>]*>/g, "");
const titleOf = t => plain(t && typeof t === "object" ? t.text : t);
function rgb(c) {
  const m = /rgba?\(([^)]*)\)/.exec(c);
  if (m) return m[1].split(",").slice(0, 3).map(Number);
  let h = c.replace("#", "");
  if (h.length === 3) h = [...h].map(x => x + x).join("");
  return [0, 2, 4].map(k => parseInt(h.slice(k, k + 2), 16));
}
function scaleOf(s, reverse) {
  const stops = (Array.isArray(s) && s.length ? s : [[0, "#440154"], [1, "#fde725"]])
    .map(([t, c]) => [Number(t), rgb(c)]);
  return reverse ? stops.map(([t, c]) => [1 - t, c]).reverse() : stops;
}
function colourInto(stops, f, out, at) {  // the colour at f in [0, 1]: out[at..at+2]
  if (!(f >= 0)) f = 0; else if (f > 1) f = 1;
  if (stops.length < 2) { for (let n = 0; n < 3; n++) out[at + n] = stops[0][1][n]; return; }
  let k = 1;
  while (k < stops.length - 1 && f > stops[k][0]) k++;
  const t0 = stops[k - 1][0], c0 = stops[k - 1][1], t1 = stops[k][0], c1 = stops[k][1];
  const u = t1 > t0 ? (f - t0) / (t1 - t0) : 0;
  for (let n = 0; n < 3; n++) out[at + n] = Math.round(c0[n] + (c1[n] - c0[n]) * u);
}
function colour(stops, f) { const c = [0, 0, 0]; colourInto(stops, f, c, 0); return c; }
function niceTicks(lo, hi, most) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / Math.max(1, most), p = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map(k => k * p).find(s => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + 1e-9 * step; v += step)
    out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return out;
}
let SEP = ".,";  // the figure's layout.separators: decimal, thousands (",." in Spanish)
const loc = s => SEP === ".," ? s : s.replace(/[.,]/g, c => c === "." ? SEP[0] : SEP[1]);
const num = v => loc(Number.isInteger(v) ? String(v)
  : Math.abs(v) >= 1e4 || (Math.abs(v) < 1e-3 && v !== 0) ? v.toExponential(2)
  : String(Number(v.toPrecision(4))));
function fmt(v, spec) {
  if (typeof v !== "number") return v == null ? "" : String(v);
  if (Number.isNaN(v)) return "";  // a gap: plotly leaves the value out
  const m = /^\.(\d+)([fe%])$/.exec(spec || "");
  if (!m) return num(v);
  const d = Number(m[1]);
  return loc(m[2] === "f" ? v.toFixed(d) : m[2] === "e" ? v.toExponential(d)
                          : (100 * v).toFixed(d) + "%");
}
function axisKey(ref, letter) { return letter + "axis" + String(ref || letter).slice(1); }

function prepare(fig) {  // parse once: traces with their matrices, colours and axes
  const L = fig.layout || {};
  SEP = typeof L.separators === "string" && L.separators.length >= 2 ? L.separators : ".,";
  const traces = (fig.data || []).map(t => {
    const z = grid(t.z || []);
    const ca = t.coloraxis ? (L[t.coloraxis] || {}) : null;
    const cs = scaleOf(ca ? ca.colorscale : t.colorscale, ca ? ca.reversescale : t.reversescale);
    return {t, z, ca, cs, x: list(t.x), y: list(t.y), custom: t.customdata || null,
            text: t.text || null, xk: axisKey(t.xaxis, "x"), yk: axisKey(t.yaxis, "y")};
  });
  const groups = new Map();  // colour range: a coloraxis's over all its traces
  for (const tr of traces) {
    const owner = tr.t.coloraxis || tr;
    if (!groups.has(owner)) groups.set(owner, []);
    groups.get(owner).push(tr);
  }
  for (const [owner, trs] of groups) {
    const s = typeof owner === "string" ? (L[owner] || {}) : owner.t;
    const shared = typeof owner === "string";
    let lo = shared ? s.cmin : s.zmin, hi = shared ? s.cmax : s.zmax;
    const mid = shared ? s.cmid : s.zmid;
    if (lo == null || hi == null) {
      let a = Infinity, b = -Infinity;
      for (const tr of trs) for (const v of tr.z.flat) {
        if (Number.isFinite(v)) { if (v < a) a = v; if (v > b) b = v; }
      }
      if (a > b) { a = 0; b = 1; }
      if (a === b) { a -= 0.5; b += 0.5; }  // one value: plotly's range around it
      if (mid != null) {
        const r = Math.max(Math.abs(a - mid), Math.abs(b - mid)) || 0.5;
        a = mid - r; b = mid + r;
      }
      lo = lo ?? a; hi = hi ?? b;
    }
    for (const tr of trs) { tr.lo = lo; tr.hi = hi; }
  }
  for (const tr of traces) {  // one image per trace, a pixel per cell; NaN is transparent
    const {flat, rows, cols} = tr.z, img = new ImageData(Math.max(cols, 1), Math.max(rows, 1));
    const span = tr.hi - tr.lo || 1, px = img.data;  // written in place: no array per cell
    for (let k = 0; k < rows * cols; k++) {
      const v = flat[k];
      if (!Number.isFinite(v)) continue;
      colourInto(tr.cs, (v - tr.lo) / span, px, 4 * k);
      px[4 * k + 3] = 255;
    }
    tr.bitmap = document.createElement("canvas");
    tr.bitmap.width = img.width; tr.bitmap.height = img.height;
    tr.bitmap.getContext("2d").putImageData(img, 0, 0);
  }
  return {L, traces};
}

function axisTicks(ax, tr, n, letter) {  // [[index, label]] before thinning
  if (ax.showticklabels === false) return [];
  const labels = letter === "x" ? tr.x : tr.y;
  const numeric = labels && typeof labels[0] === "number";
  const toIndex = v => typeof v === "string" ? labels.indexOf(v)
    : numeric && labels.length > 1 ? (v - labels[0]) / (labels[1] - labels[0]) : v;
  if (ax.tickvals) {
    const vals = list(ax.tickvals), text = list(ax.ticktext) || vals;
    return vals.map((v, k) => [toIndex(v), plain(text[k])]);
  }
  if (labels && !numeric) return labels.map((s, k) => [k, plain(s)]);
  const lo = numeric ? labels[0] : 0, hi = numeric ? labels[labels.length - 1] : n - 1;
  return niceTicks(lo, hi, 8).map(v => [toIndex(v), num(v)]);
}
function layout(ctx, P, W) {
  const {L, traces} = P, fonts = [], axes = {};
  const m = Object.assign({l: 80, r: 80, t: 100, b: 80}, L.margin || {});
  if (titleOf(L.title)) m.t = 10;  // the title is HTML above the canvas; its room is not needed
  const H = L.height || 450;
  const pairs = traces.flatMap(tr => [[tr, tr.xk, tr.z.cols, "x"], [tr, tr.yk, tr.z.rows, "y"]]);
  for (const [tr, k, n, letter] of pairs) {
    if (axes[k]) continue;
    const ax = L[k] || {}, fs = (ax.tickfont && ax.tickfont.size) || 12;
    ctx.font = `${fs}px ${P.font}`;
    const ticks = axisTicks(ax, tr, n, letter).filter(([v]) => v >= -0.5 && v <= n - 0.5);
    const widest = Math.max(0, ...ticks.map(([, s]) => ctx.measureText(s).width));
    axes[k] = {ax, n, letter, fs, ticks, widest, domain: ax.domain || [0, 1],
               side: ax.side || (letter === "x" ? "bottom" : "left"), title: titleOf(ax.title),
               reversed: ax.autorange === "reversed"};
  }
  const need = {t: 0, b: 0, l: 0, r: 0};
  let axisT = 0;
  for (const a of Object.values(axes)) {
    const room = a.title ? 22 : 0;
    if (a.letter === "y") {
      if (a.ticks.length || room) need.l = Math.max(need.l, a.widest + 8 + room);
      continue;
    }
    const plotW = (W - m.l - m.r) * (a.domain[1] - a.domain[0]);
    const fits = a.ticks.length * (a.widest + 6) <= plotW;
    a.rotated = !fits;
    const tick = a.ticks.length ? (a.rotated ? a.widest : a.fs * 1.3) + 6 : 0;
    if (a.side === "top") axisT = Math.max(axisT, tick + room);
    else need.b = Math.max(need.b, tick + room);
  }
  for (const an of L.annotations || []) {
    if (an.yref !== "paper" || !(an.y >= 1) || an.yanchor !== "bottom") continue;
    const size = (an.font && an.font.size) || 12;
    axisT = Math.max(axisT, plain(an.text).split("\n").length * 1.3 * size + 4);
  }
  P.bars = [];
  for (const tr of traces) {
    const owner = tr.ca || tr.t;
    if (owner.showscale === false || P.bars.some(b => b.owner === (tr.t.coloraxis || tr))) continue;
    if (!tr.ca && P.bars.length) continue;  // plotly draws trace bars on top of each other
    const cb = owner.colorbar || {}, vals = list(cb.tickvals);
    const ticks = vals ? vals.map((v, k) => [v, plain((list(cb.ticktext) || vals)[k])])
                       : niceTicks(tr.lo, tr.hi, 5).map(v => [v, num(v)]);
    P.bars.push({owner: tr.t.coloraxis || tr, tr, cb, ticks, title: titleOf(cb.title),
                 horizontal: cb.orientation === "h"});
  }
  ctx.font = `12px ${P.font}`;
  for (const b of P.bars) {
    if (b.horizontal) {  // title, bar and labels stacked, above or below the plot
      const room = (b.title ? 18 : 0) + (b.cb.thickness || 10) + 20;
      if ((b.cb.y ?? 1.02) >= 1) axisT = Math.max(axisT, room + 6); else need.b += room;
      continue;
    }
    const widest = Math.max(...b.ticks.map(([, s]) => ctx.measureText(s).width));
    need.r = Math.max(need.r, 34 + widest);
  }
  need.t += axisT;
  const g = {l: Math.max(m.l, need.l + 4), r: Math.max(m.r, need.r), t: Math.max(m.t, need.t),
             b: Math.max(m.b, need.b + 4)};
  let ph = Math.max(40, H - g.t - g.b), pw = Math.max(40, W - g.l - g.r);
  const only = traces.length === 1 && traces[0], ya = only && (L[only.yk] || {});
  if (only && ya.scaleanchor === only.xk.replace("axis", "")) {  // square cells, centred
    const unit = Math.min(pw / only.z.cols, ph / only.z.rows);
    g.l += (pw - unit * only.z.cols) / 2;
    pw = unit * only.z.cols; ph = unit * only.z.rows;
  }
  return {axes, g, W, H: g.t + ph + g.b, pw, ph};
}
function place(G, a) {  // an axis's pixel span, from its domain
  const [d0, d1] = a.domain;
  return a.letter === "x" ? [G.g.l + d0 * G.pw, G.g.l + d1 * G.pw]
                          : [G.g.t + (1 - d1) * G.ph, G.g.t + (1 - d0) * G.ph];
}
function at(G, a, v) {  // the pixel of cell index ``v`` (fractional) on axis ``a``
  const [p0, p1] = place(G, a), f = (v + 0.5) / a.n;
  const up = a.letter === "y" ? !a.reversed : a.reversed;
  return up ? p1 - f * (p1 - p0) : p0 + f * (p1 - p0);
}
function refPx(G, ref, v, letter) {
  if (ref === "paper") return letter === "x" ? G.g.l + v * G.pw : G.g.t + (1 - v) * G.ph;
  const a = G.axes[axisKey(ref, letter)] || Object.values(G.axes).find(x => x.letter === letter);
  return at(G, a, v);
}
