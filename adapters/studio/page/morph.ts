/**
 * Brings an element's content to a string of HTML in place. The views are redrawn as events
 * arrive (several a second in a busy run): replacing them would swap a button out from under a
 * click in progress (pressed on one element, released on its replacement: no click), drop the
 * focus and what was typed. Nodes that stay (same kind, same id) keep their identity; only what
 * differs changes.
 *
 * An element marked `data-own` is drawn by code of its own (the virtual tree, the session panel):
 * once it exists, a redraw of what holds it leaves it, its attributes and its content alone.
 */
export function morph(el: Element, html: string): void {
  const template = document.createElement('template');
  template.innerHTML = html;
  sync(el, template.content);
}

function sync(into: Node, like: Node): void {
  const have = [...into.childNodes];
  const want = [...like.childNodes];
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const h = have[i];
    if (!h) {
      into.appendChild(w);
      continue;
    }
    if (h.nodeType !== w.nodeType || h.nodeName !== w.nodeName || (h instanceof Element && h.id !== (w as Element).id)) {
      into.replaceChild(w, h);
      continue;
    }
    if (!(h instanceof Element)) {
      if (h.nodeValue !== w.nodeValue) h.nodeValue = w.nodeValue;
      continue;
    }
    if (h.hasAttribute('data-own')) continue;
    const we = w as Element;
    for (const a of [...h.attributes]) {
      // a <details> the person opened stays open
      if (!we.hasAttribute(a.name) && !(a.name === 'open' && h.nodeName === 'DETAILS')) h.removeAttribute(a.name);
    }
    for (const a of [...we.attributes]) if (h.getAttribute(a.name) !== a.value) h.setAttribute(a.name, a.value);
    sync(h, we);
  }
  for (let i = have.length - 1; i >= want.length; i--) into.removeChild(have[i]!);
}
