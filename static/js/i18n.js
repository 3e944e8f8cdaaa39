// The interface strings, rendered into the page by Django (json_script id "sb-strings").
let strings = null;

function load() {
  if (strings === null) {
    const node = document.getElementById("sb-strings");
    strings = node ? JSON.parse(node.textContent) : {};
  }
  return strings;
}

export function t(name, params = {}) {
  const text = load()[name] ?? name;
  return text.replace(/\{(\w+)\}/g, (match, p) => (p in params ? String(params[p]) : match));
}
