// prefetch.py's element: once the page has not changed for data.after ms and the browser is
// idle, import Streamlit's plotly chart module (data.chunk, resolved against the address of
// the page's main script as Streamlit's bundler resolves it), once per tab.
export default function (component) {
  const w = window, src = component.data.chunk;
  if (w.gvPrefetch || !src) return;
  const main = document.querySelector('script[type="module"][src*="/static/js/"]');
  if (!main) return;
  w.gvPrefetch = new URL(src, main.src).href;  // the address Streamlit's import resolves to
  const idle = w.requestIdleCallback || (f => setTimeout(f, 0));
  let timer;
  const load = () => {
    watch.disconnect();
    idle(() => import(w.gvPrefetch).then(() => { w.gvPrefetched = true; }, () => {}),
         {timeout: 10000});
  };
  const quiet = () => { clearTimeout(timer); timer = setTimeout(load, component.data.after); };
  const watch = new MutationObserver(quiet);  // the page is still arriving or being drawn
  watch.observe(document.body, {childList: true, subtree: true, characterData: true});
  quiet();
}
