// A "PNG" button on the app's own charts (svgbox.py's SVG charts, heatcanvas.py's canvas
// heatmaps), as plotly's modebar has on its figures: the chart as the reader sees it (its
// title, its colours on the page's background, its legend) saved as a .png file. Joined to
// svgbox.js and to heatcanvas.js + heatcanvas_paint.js (see their Python modules).
const PNG_SCALE = 2;  // an SVG chart is drawn at twice its size on the page
const PNG_STYLE = ["fill", "fill-opacity", "stroke", "stroke-width", "stroke-opacity",
  "stroke-dasharray", "stroke-linecap", "stroke-linejoin", "opacity", "font-family",
  "font-size", "font-weight", "font-style", "text-anchor", "dominant-baseline",
  "visibility", "display"];
const PNG_ICON = '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M12 15.2a3.2 3.2 0 1 ' +
  '0 0-6.4 3.2 3.2 0 0 0 0 6.4zM9 2 7.17 4H4c-1.1 0-2 .9-2 2v12c0 1.1.9 2 2 2h16c1.1 0 2-.9 ' +
  '2-2V6c0-1.1-.9-2-2-2h-3.17L15 2H9zm3 15c-2.76 0-5-2.24-5-5s2.24-5 5-5 5 2.24 5 5-2.24 5-5 ' +
  '5z"/></svg>';

function pngBackground(el) {  // the colour the chart is seen on
  for (let e = el; e; e = e.parentElement) {
    const c = getComputedStyle(e).backgroundColor;
    if (c && c !== "transparent" && !/rgba\([^)]*,\s*0\)$/.test(c)) return c;
  }
  return "#ffffff";
}

function pngFileName(title) {  // "Attention of head 0.3" -> attention-of-head-0-3.png
  const slug = String(title || "").toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "-")
    .replace(/^-+|-+$/g, "").slice(0, 60);
  return (slug || "chart") + ".png";
}

function pngSvgImage(svg) {  // an <svg> of the page as an image, its CSS written inline
  const box = svg.getBoundingClientRect();
  const copy = svg.cloneNode(true);
  const from = [svg, ...svg.querySelectorAll("*")], to = [copy, ...copy.querySelectorAll("*")];
  from.forEach((e, i) => {
    const cs = getComputedStyle(e);
    to[i].setAttribute("style", PNG_STYLE.map(p => `${p}:${cs.getPropertyValue(p)}`).join(";"));
  });
  copy.setAttribute("xmlns", "http://www.w3.org/2000/svg");
  copy.setAttribute("width", box.width);
  copy.setAttribute("height", box.height);
  const url = URL.createObjectURL(new Blob([new XMLSerializer().serializeToString(copy)],
                                           {type: "image/svg+xml"}));
  return new Promise((resolve, reject) => {
    const img = new Image();
    img.onload = () => { URL.revokeObjectURL(url); resolve({img, w: box.width, h: box.height}); };
    img.onerror = reject;
    img.src = url;
  });
}

function pngCanvas(w, h, scale, background) {
  const canvas = document.createElement("canvas");
  canvas.width = Math.ceil(w * scale);
  canvas.height = Math.ceil(h * scale);
  const ctx = canvas.getContext("2d");
  ctx.scale(scale, scale);
  ctx.fillStyle = background;
  ctx.fillRect(0, 0, w, h);
  return [canvas, ctx];
}

async function pngOfSvgChart(root) {  // svgplot.py's chart: title, plot, legend
  const plot = root.querySelector(".gv-svgplot"), title = plot.querySelector(".gv-sp-title");
  const main = await pngSvgImage(plot.querySelector(":scope > svg"));
  const keys = [...plot.querySelectorAll(".gv-sp-key")];
  const swatches = await Promise.all(keys.map(k => pngSvgImage(k.querySelector("svg"))));
  const pad = 8, text = title.textContent.trim();
  const titleH = text ? title.getBoundingClientRect().height + 4 : 0;
  const legendH = keys.length ? 22 : 0;
  const W = main.w + 2 * pad, H = titleH + main.h + legendH + 2 * pad;
  const [canvas, ctx] = pngCanvas(W, H, PNG_SCALE, pngBackground(root));
  ctx.fillStyle = getComputedStyle(plot).color;
  ctx.textBaseline = "top";
  ctx.font = getComputedStyle(title).font;
  if (text) ctx.fillText(text, pad + 4, pad);
  ctx.drawImage(main.img, pad, pad + titleH, main.w, main.h);
  if (keys.length) {
    ctx.font = getComputedStyle(keys[0]).font;
    ctx.textBaseline = "middle";
    const widths = keys.map(k => 32 + ctx.measureText(k.textContent).width);
    let x = Math.max(pad, (W - widths.reduce((a, b) => a + b + 18, -18)) / 2);
    const y = pad + titleH + main.h + 6;
    keys.forEach((k, i) => {
      ctx.drawImage(swatches[i].img, x, y, 26, 12);
      ctx.fillText(k.textContent, x + 32, y + 6);
      x += widths[i] + 18;
    });
  }
  return canvas;
}

function pngOfHeatmap(root) {  // heatcanvas.py's heatmap: its HTML title over its canvas
  const chart = root.querySelector("canvas"), title = root.querySelector(".gv-heat-title");
  const scale = chart.width / Math.max(1, chart.clientWidth), text = title.textContent.trim();
  const titleH = text ? title.getBoundingClientRect().height : 0;
  const [canvas, ctx] = pngCanvas(chart.clientWidth, chart.clientHeight + titleH, scale,
                                  pngBackground(root));
  ctx.fillStyle = getComputedStyle(root).color;
  ctx.textBaseline = "top";
  ctx.font = getComputedStyle(title).font;
  if (text) ctx.fillText(text, 8, 4);
  ctx.drawImage(chart, 0, titleH, chart.clientWidth, chart.clientHeight);
  return canvas;
}

function pngButton(host, label, title, draw) {  // the button, once per chart
  let button = host.querySelector(":scope > .gv-png");
  if (!button) {
    button = document.createElement("button");
    button.type = "button";
    button.className = "gv-png";
    button.innerHTML = PNG_ICON;
    host.appendChild(button);
  }
  button.title = label;
  button.setAttribute("aria-label", label);
  button.onclick = async event => {
    event.stopPropagation();
    const canvas = await draw();
    canvas.toBlob(blob => {
      const a = document.createElement("a");
      a.href = URL.createObjectURL(blob);
      a.download = pngFileName(title);
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10000);
    }, "image/png");
  };
}
