// download.py's button: it holds its file's text and, on a click, hands it to the browser
// as a file (a blob: address made in the page; nothing is asked of the server).
export default function (component) {
  const { parentElement, data } = component;
  const button = parentElement.querySelector("button");
  button.querySelector(".gv-download-label").textContent = data.label;
  button.onclick = () => {
    const url = URL.createObjectURL(new Blob([data.text], {type: data.mime}));
    const link = Object.assign(document.createElement("a"),
                               {href: url, download: data.name, hidden: true});
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  };
}
