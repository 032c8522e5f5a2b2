// What a class keeps in the browser (see browser.py): cookies the server reads back with
// st.context.cookies on the next load, and the teacher's private link, whose #teacher=
// part never reaches the server in a URL: it becomes the teacher's cookie, the address
// bar loses it, and the page reloads with the cookie.
function put(name, value, maxAge) {
  document.cookie = `${name}=${encodeURIComponent(value)}; path=/; max-age=${maxAge}; SameSite=Strict`;
}

export default function (component) {
  const { data } = component;
  for (const [name, value, maxAge] of data.set || []) put(name, value, maxAge);
  for (const name of data.clear || []) put(name, "", 0);
  if (data.adopt) {
    const found = /(?:^#|&)teacher=([A-Za-z0-9_.-]{20,120})/.exec(window.location.hash);
    if (found) {
      put(data.adopt, found[1], data.adoptAge || 14400);
      history.replaceState(null, "", window.location.pathname + window.location.search);
      window.location.reload();
    }
  }
}
