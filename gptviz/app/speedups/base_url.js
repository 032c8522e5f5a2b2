// Put into index.html by base_url.py, only at the address of one of the app's pages: the
// app's root is that address without the page's name. Streamlit's client then connects
// there at once instead of probing the page's address first. A host's own setting wins.
(function () {
  var host = window.__streamlit || {}, path = location.pathname.replace(/\/+$/, "");
  if (!host.BACKEND_BASE_URL) window.__streamlit = Object.assign({}, host,
    {BACKEND_BASE_URL: location.origin + path.slice(0, path.lastIndexOf("/") + 1)});
})();
