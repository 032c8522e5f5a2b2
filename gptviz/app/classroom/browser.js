// What a class keeps in the browser (see browser.py): cookies the server reads back with
// st.context.cookies on the next load, and the teacher's private link, whose #teacher=
// part never reaches the server in a URL: it becomes the teacher's cookie, the address
// bar loses it, and the page reloads with the cookie.
//
// By the time this script runs, the Lesson may have set its query parameters, and
// Streamlit then rewrites the address without its # part. So the link's key is read from
// where the tab was opened (the navigation's own entry, which keeps the whole address)
// as well as from the address bar. A reload is a new navigation without the key, so the
// key is adopted once per opening of the link.
function put(name, value, maxAge) {
  document.cookie = `${name}=${encodeURIComponent(value)}; path=/; max-age=${maxAge}; SameSite=Strict`;
}

function teacherKey(hash) {
  return /(?:^#|&)teacher=([A-Za-z0-9_.-]{20,120})/.exec(hash || "");
}

function openedHash() {
  const [opened] = performance.getEntriesByType("navigation");
  if (!opened) return "";
  const at = opened.name.indexOf("#");
  return at < 0 ? "" : opened.name.slice(at);
}

export default function (component) {
  const { data } = component;
  for (const [name, value, maxAge] of data.set || []) put(name, value, maxAge);
  for (const name of data.clear || []) put(name, "", 0);
  if (data.adopt) {
    const found = teacherKey(window.location.hash) || teacherKey(openedHash());
    if (found) {
      put(data.adopt, found[1], data.adoptAge || 14400);
      history.replaceState(null, "", window.location.pathname + window.location.search);
      window.location.reload();
    }
  }
}
