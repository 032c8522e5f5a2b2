// svgbox.py's element: puts a chart's HTML (built by svgplot.py, every text escaped) into
// the page as it is, with its PNG button (png.js, joined before this file), and marks it
// drawn.
export default function (component) {
  const root = component.parentElement.querySelector(".gv-svgbox");
  const html = component.data.html;
  if (root.gvHtml !== html) { root.innerHTML = html; root.gvHtml = html; }
  const plot = root.querySelector(".gv-svgplot");
  if (plot) pngButton(root, component.data.png, plot.dataset.title, () => pngOfSvgChart(root));
  root.dataset.drawn = "1";
}
