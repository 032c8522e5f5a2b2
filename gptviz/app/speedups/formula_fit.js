// formula_fit.py's script, installed once per tab: it watches the page (formulas come and
// go with every rerun, columns change with the window, KaTeX's fonts arrive after its HTML)
// and, once per frame at most, measures every display formula in one pass and sizes them in
// another, so that the browser lays the page out once, not once per formula.
export default function (component) {
  const w = window, least = component.data.min;
  if (!w.gvFit) {
    let queued = false;
    const fit = () => {
      queued = false;
      const all = [...document.querySelectorAll(".stMarkdown .katex-display")]
        .map(d => [d, d.firstElementChild])
        .filter(([, k]) => k && k.classList.contains("katex"));
      for (const [, k] of all) k.style.fontSize = "";  // the formula's own size first
      const sizes = all.map(([d, k]) => [d.clientWidth, k.scrollWidth,
                                         parseFloat(getComputedStyle(k).fontSize)]);
      all.forEach(([, k], i) => {
        const [room, need, px] = sizes[i];
        const s = room > 0 && need > room ? Math.max(least, (room - 1) / need) : 1;
        if (s < 1) {
          k.style.fontSize = (px * s).toFixed(2) + "px";
          k.dataset.gvFit = s.toFixed(3);
        } else delete k.dataset.gvFit;
      });
    };
    w.gvFit = () => { if (!queued) { queued = true; requestAnimationFrame(fit); } };
    new MutationObserver(w.gvFit).observe(document.body, {childList: true, subtree: true});
    w.addEventListener("resize", w.gvFit);
    // KaTeX's fonts arrive after its HTML: a formula's width changes with no DOM change
    if (document.fonts) document.fonts.addEventListener("loadingdone", w.gvFit);
  }
  w.gvFit();
}
