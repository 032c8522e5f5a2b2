// fold.py's marker. Streamlit's main area scrolls (stMain), not the document: it is the
// observer's root, so that the margin reaches below what is visible. While a page loads,
// the elements above the marker are drawn in steps (their code arrives late) and the marker
// can stand in view for a moment: it asks only once it is still in view after the page has
// not changed for data.quietMs, or after data.waitMs in view whatever changes (a Training
// run redraws its panel twice a second). One request per marker.
export default function (component) {
  const { parentElement, setStateValue, data } = component;
  const box = parentElement.querySelector(".gv-fold");
  box.querySelector(".gv-fold-what").textContent = data.what;
  if (data.now) box.querySelector(".gv-fold-now").textContent = data.now;  // its language
  if (box.gvStop) box.gvStop();
  if (box.gvSent) return;  // drawn again while its rerun is on the way
  const root = box.closest('[data-testid="stMain"]');
  let timer = null, since = null;
  const inView = () => {
    const r = box.getBoundingClientRect();
    const bottom = (root ? root.getBoundingClientRect().bottom : window.innerHeight);
    return r.top < bottom + data.margin && r.bottom > 0;
  };
  const send = () => {
    if (box.gvSent) return;
    box.gvSent = true;
    box.gvStop();
    box.classList.add("gv-fold-busy");
    setStateValue("reached", true);
  };
  const later = () => {  // in view: ask once the page has been still for data.quietMs
    clearTimeout(timer);
    since = since || performance.now();
    const wait = Math.max(0, Math.min(data.quietMs, since + data.waitMs - performance.now()));
    timer = setTimeout(() => { timer = null; if (inView()) send(); }, wait);
  };
  const away = () => { clearTimeout(timer); timer = null; since = null; };
  const seen = new IntersectionObserver(
    entries => entries.some(e => e.isIntersecting) ? later() : away(),
    {root, rootMargin: `0px 0px ${data.margin}px 0px`});
  const changes = new MutationObserver(() => { if (timer !== null) later(); });
  seen.observe(box);
  changes.observe(root || document.body, {childList: true, subtree: true});
  box.gvStop = () => { seen.disconnect(); changes.disconnect(); clearTimeout(timer); };
  box.querySelector(".gv-fold-now").onclick = send;
  return () => box.gvStop();
}
