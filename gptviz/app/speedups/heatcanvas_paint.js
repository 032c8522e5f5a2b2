// The browser half of heatcanvas.py, second part (after heatcanvas.js): painting a
// prepared figure, and the tooltip that names the cell under the pointer (plotly's
// hovertemplate, filled in).
function cross(G, P, key) {  // the pixel span of the axis a trace pairs with ``key``
  const tr = P.traces.find(t => t.xk === key || t.yk === key);
  return place(G, G.axes[tr.xk === key ? tr.yk : tr.xk]);
}
function richLines(text, size) {  // "<b>name</b><br><span style='font-size:10px'>shape</span>"
  return String(text ?? "").split(/<br\s*\/?>/).map(seg => {
    const px = /font-size:\s*(\d+)px/.exec(seg);
    return {text: plain(seg), bold: /<b>/.test(seg), size: px ? Number(px[1]) : size};
  });
}
function gaps(ctx, L, tr, x0, x1, y0, y1, cw, ch) {  // xgap / ygap: lines of background
  const strips = [];
  if (tr.t.xgap > 0) for (let j = 1; j < tr.z.cols; j++)
    strips.push([x0 + j * cw - tr.t.xgap / 2, y0, tr.t.xgap, y1 - y0]);
  if (tr.t.ygap > 0) for (let i = 1; i < tr.z.rows; i++)
    strips.push([x0, y0 + i * ch - tr.t.ygap / 2, x1 - x0, tr.t.ygap]);
  for (const s of strips) {
    ctx.clearRect(...s);
    if (L.plot_bgcolor) { ctx.fillStyle = L.plot_bgcolor; ctx.fillRect(...s); }
  }
}
function cellTexts(ctx, G, P, tr, cw, ch) {  // texttemplate: sized to the cell, in contrast
  const ax = G.axes[tr.xk], ay = G.axes[tr.yk], span = tr.hi - tr.lo || 1;
  ctx.textAlign = "center"; ctx.textBaseline = "middle";
  for (let i = 0; i < tr.z.rows; i++) for (let j = 0; j < tr.z.cols; j++) {
    const s = plain(cellOf(tr.text, i, j));
    if (!s) continue;
    let size = Math.min(12, ch * 0.75);
    ctx.font = `${size}px ${P.font}`;
    const w = ctx.measureText(s).width;
    if (w > cw * 0.9) size *= cw * 0.9 / w;
    if (size < 6) continue;  // too small to read: hover still names the cell
    const v = tr.z.flat[i * tr.z.cols + j];
    const [r, g, b] = Number.isFinite(v) ? colour(tr.cs, (v - tr.lo) / span) : [212, 212, 212];
    ctx.fillStyle = 0.299 * r + 0.587 * g + 0.114 * b < 140 ? "#fff" : "#262730";
    ctx.font = `${size}px ${P.font}`;
    ctx.fillText(s, at(G, ax, j), at(G, ay, i));
  }
}
function colourBar(ctx, G, P, b) {
  const span = b.tr.hi - b.tr.lo || 1, th = b.cb.thickness || 14;
  ctx.font = `12px ${P.font}`; ctx.fillStyle = P.ink;
  if (b.horizontal) {
    const w = (b.cb.len ?? 1) * G.pw, ax = G.g.l + (b.cb.x ?? 0.5) * G.pw;
    const x = b.cb.xanchor === "right" ? ax - w : b.cb.xanchor === "left" ? ax : ax - w / 2;
    const bottom = G.g.t + (1 - (b.cb.y ?? 1.02)) * G.ph, y = bottom - 18 - th;
    const grad = ctx.createLinearGradient(x, 0, x + w, 0);
    for (const [t, c] of b.tr.cs) grad.addColorStop(Math.min(1, Math.max(0, t)), `rgb(${c})`);
    ctx.fillStyle = grad; ctx.fillRect(x, y, w, th);
    ctx.fillStyle = P.ink; ctx.textAlign = "center"; ctx.textBaseline = "top";
    for (const [v, s] of b.ticks) ctx.fillText(s, x + (v - b.tr.lo) / span * w, y + th + 3);
    if (b.title) { ctx.textBaseline = "bottom"; ctx.fillText(b.title, x + w / 2, y - 3); }
    return;
  }
  const x = G.g.l + G.pw + 10, y = G.g.t, h = G.ph;
  const grad = ctx.createLinearGradient(0, y + h, 0, y);
  for (const [t, c] of b.tr.cs) grad.addColorStop(Math.min(1, Math.max(0, t)), `rgb(${c})`);
  ctx.fillStyle = grad; ctx.fillRect(x, y, 14, h);
  ctx.strokeStyle = "rgba(128,128,128,.5)"; ctx.lineWidth = 1; ctx.strokeRect(x, y, 14, h);
  ctx.fillStyle = P.ink; ctx.textAlign = "left"; ctx.textBaseline = "middle";
  for (const [v, s] of b.ticks) ctx.fillText(s, x + 20, y + h - (v - b.tr.lo) / span * h);
  if (b.title) { ctx.textBaseline = "bottom"; ctx.fillText(b.title, x, y - 4); }
}
function paint(root, P) {
  const canvas = root.querySelector("canvas"), ctx = canvas.getContext("2d");
  const W = Math.max(120, root.clientWidth || 640), G = layout(ctx, P, W), L = P.L;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(W * dpr); canvas.height = Math.round(G.H * dpr);
  canvas.style.width = W + "px"; canvas.style.height = G.H + "px";
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, W, G.H);
  P.hits = [];
  for (const tr of P.traces) {
    const ax = G.axes[tr.xk], ay = G.axes[tr.yk], [x0, x1] = place(G, ax), [y0, y1] = place(G, ay);
    if (L.plot_bgcolor) { ctx.fillStyle = L.plot_bgcolor; ctx.fillRect(x0, y0, x1 - x0, y1 - y0); }
    ctx.save();
    ctx.imageSmoothingEnabled = false;
    ctx.translate(ax.reversed ? x1 : x0, ay.reversed ? y0 : y1);
    ctx.scale(ax.reversed ? -1 : 1, ay.reversed ? 1 : -1);
    ctx.drawImage(tr.bitmap, 0, 0, x1 - x0, y1 - y0);
    ctx.restore();
    const cw = (x1 - x0) / tr.z.cols, ch = (y1 - y0) / tr.z.rows;
    gaps(ctx, L, tr, x0, x1, y0, y1, cw, ch);
    if (tr.text && /%\{text\}/.test(tr.t.texttemplate || "")) cellTexts(ctx, G, P, tr, cw, ch);
    P.hits.push({tr, ax, ay, x0, x1, y0, y1});
  }
  for (const s of L.shapes || []) {
    const xa = refPx(G, s.xref || "x", s.x0, "x"), xb = refPx(G, s.xref || "x", s.x1, "x");
    const ya = refPx(G, s.yref || "y", s.y0, "y"), yb = refPx(G, s.yref || "y", s.y1, "y");
    const box = [Math.min(xa, xb), Math.min(ya, yb), Math.abs(xb - xa), Math.abs(yb - ya)];
    if (s.fillcolor) { ctx.fillStyle = s.fillcolor; ctx.fillRect(...box); }
    const width = (s.line && s.line.width) ?? 2;
    if (width <= 0) continue;
    ctx.strokeStyle = (s.line && s.line.color) || "#444";
    ctx.lineWidth = width;
    ctx.strokeRect(...box);
  }
  ctx.fillStyle = P.ink;
  for (const [key, a] of Object.entries(G.axes)) {
    const [s0, s1] = place(G, a), [c0, c1] = cross(G, P, key), span = s1 - s0;
    const room = a.letter === "y" || !a.rotated ? a.fs * 1.3 : a.widest + 6;
    const pitch = a.letter === "x" && !a.rotated ? a.widest + 6 : a.fs * 1.1;
    const fits = Math.max(1, Math.floor(span / pitch));
    const step = Math.ceil(a.ticks.length / fits);
    ctx.font = `${a.fs}px ${P.font}`;
    a.ticks.forEach(([v, s], k) => {
      if (k % step) return;
      const p = at(G, a, v);
      ctx.save();
      if (a.letter === "y") {
        ctx.textAlign = "right"; ctx.textBaseline = "middle"; ctx.fillText(s, c0 - 6, p);
      } else if (a.rotated) {
        ctx.translate(p, a.side === "top" ? c0 - 4 : c1 + 4); ctx.rotate(-Math.PI / 2);
        ctx.textAlign = a.side === "top" ? "left" : "right"; ctx.textBaseline = "middle";
        ctx.fillText(s, 0, 0);
      } else {
        ctx.textAlign = "center"; ctx.textBaseline = a.side === "top" ? "bottom" : "top";
        ctx.fillText(s, p, a.side === "top" ? c0 - 4 : c1 + 4);
      }
      ctx.restore();
    });
    if (!a.title) continue;
    ctx.save();
    ctx.font = `14px ${P.font}`;
    const used = a.ticks.length ? (a.letter === "y" ? a.widest + 8 : room + 4) : 4;
    if (a.letter === "y") {
      ctx.translate(c0 - used - 4, (s0 + s1) / 2); ctx.rotate(-Math.PI / 2);
      ctx.textAlign = "center"; ctx.textBaseline = "bottom"; ctx.fillText(a.title, 0, 0);
    } else {
      ctx.textAlign = "center"; ctx.textBaseline = a.side === "top" ? "bottom" : "top";
      ctx.fillText(a.title, (s0 + s1) / 2, a.side === "top" ? c0 - used : c1 + used);
    }
    ctx.restore();
  }
  for (const an of L.annotations || []) {
    const x = refPx(G, an.xref || "x", an.x, "x"), y = refPx(G, an.yref || "y", an.y, "y");
    const lines = richLines(an.text, (an.font && an.font.size) || 12);
    const total = lines.reduce((h, l) => h + 1.3 * l.size, 0);
    let top = an.yanchor === "bottom" ? y - total : an.yanchor === "top" ? y : y - total / 2;
    ctx.fillStyle = (an.font && an.font.color) || P.ink;
    ctx.textAlign = an.xanchor === "left" ? "left" : an.xanchor === "right" ? "right" : "center";
    ctx.textBaseline = "top";
    for (const l of lines) {
      ctx.font = `${l.bold ? "600 " : ""}${l.size}px ${P.font}`;
      ctx.fillText(l.text, x, top + 0.15 * l.size);
      top += 1.3 * l.size;
    }
  }
  for (const b of P.bars) colourBar(ctx, G, P, b);

}
function cellOf(arr, i, j) { const row = arr[i]; return Array.isArray(row) ? row[j] : row; }
function hoverText(tr, i, j, v) {
  const recipe = tr.t.meta && tr.t.meta.hover;  // heatmaps.hover_text, written here
  if (recipe && !tr.custom) {
    const value = Number.isFinite(v) ? loc(v.toFixed(recipe.decimals)) : recipe.masked;
    return `${recipe.y[i]} (${i}) → ${recipe.x[j]} (${j})\n${value}`;
  }
  const value = k => k === "x" ? (tr.x ? tr.x[j] : j) : k === "y" ? (tr.y ? tr.y[i] : i)
    : k === "z" ? v : k === "customdata" ? cellOf(tr.custom, i, j)
    : k === "text" ? cellOf(tr.text, i, j) : "";
  return plain((tr.t.hovertemplate ?? "x: %{x}<br>y: %{y}<br>z: %{z}")
    .replace(/<extra>[\s\S]*?<\/extra>/g, "")
    .replace(/%\{(\w+)(?::([^}]*))?\}/g, (_, k, spec) => fmt(value(k), spec)));
}
function hover(root, P, e) {
  const tip = root.querySelector(".gv-heat-tip"), box = root.getBoundingClientRect();
  const r = root.querySelector("canvas").getBoundingClientRect();
  const mx = e.clientX - r.left, my = e.clientY - r.top;
  const inside = h => mx >= h.x0 && mx < h.x1 && my >= h.y0 && my < h.y1;
  const hit = [...(P.hits || [])].reverse().find(inside);
  const t = hit && hit.tr.t;
  if (!hit || t.hoverinfo === "skip" || t.hoverinfo === "none") {
    tip.style.display = "none"; return;
  }
  const {rows, cols, flat} = hit.tr.z;
  let j = Math.min(cols - 1, Math.floor((mx - hit.x0) / (hit.x1 - hit.x0) * cols));
  let i = Math.min(rows - 1, Math.floor((my - hit.y0) / (hit.y1 - hit.y0) * rows));
  if (hit.ax.reversed) j = cols - 1 - j;
  if (!hit.ay.reversed) i = rows - 1 - i;
  const v = flat[i * cols + j];
  if (!Number.isFinite(v) && t.hoverongaps === false) { tip.style.display = "none"; return; }
  tip.textContent = hoverText(hit.tr, i, j, v);
  tip.style.display = "block";
  const px = e.clientX - box.left, py = e.clientY - box.top;  // the tip lives in the root
  tip.style.left = Math.max(0, Math.min(px + 14, box.width - tip.offsetWidth - 4)) + "px";
  const below = py + 16 + tip.offsetHeight <= box.height;
  tip.style.top = Math.max(0, below ? py + 16 : py - tip.offsetHeight - 8) + "px";
}
export default function (component) {
  const root = component.parentElement.querySelector(".gv-heat");
  const P = prepare(component.data.figure), style = getComputedStyle(root);
  P.font = style.fontFamily || "sans-serif";
  P.ink = style.color || "#31333f";
  const canvas = root.querySelector("canvas"), title = titleOf(P.L.title);
  canvas.setAttribute("aria-label", title || "heatmap");
  root.querySelector(".gv-heat-title").textContent = title;  // text a reader can find
  root.gvFigure = component.data.figure;  // what is drawn, for tests in the browser
  root.gvPaint = () => {
    try { paint(root, P); root.gvHits = P.hits; root.dataset.drawn = "1"; }
    catch (err) { root.dataset.drawn = "error"; console.error("gptviz heatmap:", err); }
  };
  root.gvPaint();
  pngButton(root, component.data.png, title, () => pngOfHeatmap(root));  // png.js
  canvas.onmousemove = e => hover(root, P, e);
  canvas.onmouseleave = () => { root.querySelector(".gv-heat-tip").style.display = "none"; };
  if (!root.gvObserver) {
    let width = root.clientWidth;
    root.gvObserver = new ResizeObserver(() => {
      if (root.clientWidth === width) return;
      width = root.clientWidth;
      requestAnimationFrame(() => root.gvPaint());
    });
    root.gvObserver.observe(root);
  }
}
