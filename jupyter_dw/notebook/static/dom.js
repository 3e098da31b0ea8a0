// What the widgets' ESM share, put in front of each widget's own file (widgets.py joins them):
// el(tag, attrs, ...children) builds an element; "style" is inline CSS, "on<event>" a listener.
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "style") node.style.cssText = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}
