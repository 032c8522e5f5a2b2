// Browser history: Streamlit pushes an entry for every change of the page's link (a prompt
// typed, a token taken), so Back undid keystrokes one by one. A change that keeps the page
// and its view (or lesson step) now replaces the entry; a new page, view or step adds one
// (but not the view a page settles on as it opens, within SETTLE_MS of arriving).
const STEPS = ["view", "step"];
const SETTLE_MS = 2000;
let arrived = 0;
function installHistory() {
  if (window.gvHistory) return;
  window.gvHistory = true;
  const push = history.pushState.bind(history);
  history.pushState = function (state, title, url) {
    try {
      const next = new URL(url, location.href), now = new URL(location.href);
      if (next.pathname !== now.pathname) {
        arrived = performance.now();
        return push(state, title, url);
      }
      const settling = performance.now() - arrived < SETTLE_MS;
      const same = STEPS.every((k) => next.searchParams.get(k) === now.searchParams.get(k));
      if (same || settling) return history.replaceState(state, title, url);
    } catch (e) {
      // an address we cannot read: leave it to the browser
    }
    return push(state, title, url);
  };
}

export default function () {
  installHistory();
}
