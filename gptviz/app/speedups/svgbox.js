// svgbox.py's element: puts a chart's HTML (built by svgplot.py, every text escaped) into
// the page as it is, and marks it drawn.
export default function (component) {
  const root = component.parentElement.querySelector(".gv-svgbox");
  const html = component.data.html;
  if (root.gvHtml !== html) { root.innerHTML = html; root.gvHtml = html; }
  root.dataset.drawn = "1";
}
