// Small helpers to build the pages' DOM without innerHTML (text from the
// server is always set as text), and the designed loading, empty and error
// states every view shows the same way.

// h('a', {class: 'card', href: '/fleet'}, 'Fleet', child, ...): an element.
// Props: `class`, `text`, `on` ({click: fn}), anything else as an attribute
// (skipped when null or false; true gives an empty attribute).
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value == null || value === false) continue;
    if (key === 'class') element.className = value;
    else if (key === 'text') element.textContent = value;
    else if (key === 'on') {
      for (const [event, handler] of Object.entries(value)) {
        element.addEventListener(event, handler);
      }
    } else element.setAttribute(key, value === true ? '' : value);
  }
  element.append(...children.flat().filter((child) => child != null && child !== false));
  return element;
}

// Keeps `body`'s rows those of `items`, in their order: each item's row is
// the one `rows` (a Map by key) holds for `keyOf(item)`, made by
// `makeRow(item)` ({element, ...}) when there is none; rows of keys no
// longer there are removed. `fill(row, item)` then draws each. Rows are
// moved only when out of place, so that a poll that changes nothing
// touches nothing (no focus or selection lost, nothing announced).
export function syncRows(rows, body, items, keyOf, makeRow, fill) {
  const keys = new Set(items.map(keyOf));
  for (const [key, row] of rows) {
    if (!keys.has(key)) {
      row.element.remove();
      rows.delete(key);
    }
  }
  items.forEach((item, index) => {
    const key = keyOf(item);
    let row = rows.get(key);
    if (!row) {
      row = makeRow(item);
      rows.set(key, row);
    }
    if (body.children[index] !== row.element) {
      body.insertBefore(row.element, body.children[index] || null);
    }
    fill(row, item);
  });
}

const SVG_NS = 'http://www.w3.org/2000/svg';

// 24×24 stroke icons.
const ICONS = {
  clock: ['M12 7v5l3 2', 'M21 12a9 9 0 1 1-18 0 9 9 0 0 1 18 0Z'],
  alert: [
    'M12 8v5',
    'M12 16.5v.01',
    'M10.3 3.9 2.4 17.6A2 2 0 0 0 4.1 20.6h15.8a2 2 0 0 0 1.7-3L13.7 3.9a2 2 0 0 0-3.4 0Z',
  ],
  compass: ['M21 12a9 9 0 1 1-18 0 9 9 0 0 1 18 0Z', 'm15.5 8.5-2 5-5 2 2-5 5-2Z'],
  fleet: ['M4 4h16v5H4z', 'M4 15h16v5H4z', 'M8 6.5h.01', 'M8 17.5h.01', 'M12 9v6'],
  movie: ['M4 5h16v14H4z', 'M8 5v14', 'M16 5v14', 'M4 9h4', 'M4 15h4', 'M16 9h4', 'M16 15h4'],
  play: ['M8 5.5v13l10-6.5-10-6.5Z'],
  pause: ['M9 5.5v13', 'M15 5.5v13'],
  first: ['M6 6v12', 'M18 6l-8 6 8 6V6Z'],
  last: ['M18 6v12', 'M6 6l8 6-8 6V6Z'],
  previous: ['M15 6l-6 6 6 6'],
  next: ['M9 6l6 6-6 6'],
};

export function icon(name, size = 24) {
  const svg = document.createElementNS(SVG_NS, 'svg');
  for (const [key, value] of Object.entries({
    width: size, height: size, viewBox: '0 0 24 24', fill: 'none', stroke: 'currentColor',
    'stroke-width': 1.8, 'stroke-linecap': 'round', 'stroke-linejoin': 'round',
    'aria-hidden': 'true', focusable: 'false',
  })) {
    svg.setAttribute(key, String(value));
  }
  for (const d of ICONS[name]) {
    const path = document.createElementNS(SVG_NS, 'path');
    path.setAttribute('d', d);
    svg.append(path);
  }
  return svg;
}

export function loadingState(text = 'Loading…') {
  return h('div', { class: 'state state-loading', role: 'status' },
    h('span', { class: 'spinner', 'aria-hidden': 'true' }), h('p', { text }));
}

// A state with a heading, a sentence or two and optional actions (elements).
// kind: 'empty' or 'error'.
export function messageState({
  kind = 'empty', iconName, title, body, actions = [], boxed = false,
}) {
  const classes = ['state', `state-${kind}`];
  if (boxed) classes.push('state-boxed');
  return h('div', { class: classes.join(' '), role: kind === 'error' ? 'alert' : null },
    h('div', { class: 'state-icon' }, icon(iconName || (kind === 'error' ? 'alert' : 'clock'), 28)),
    h('h2', { text: title }),
    [].concat(body).map((text) => h('p', { text })),
    actions);
}

// Sets a button busy (spinner, disabled, aria-busy) or back.
export function setBusy(button, busy) {
  button.disabled = busy;
  if (busy) button.setAttribute('aria-busy', 'true');
  else button.removeAttribute('aria-busy');
}

// Marks a list's area as showing what it showed before while what replaces
// it is asked for (dimmed, aria-busy), or as current again.
export function setLoading(area, loading) {
  area.classList.toggle('is-loading', loading);
  if (loading) area.setAttribute('aria-busy', 'true');
  else area.removeAttribute('aria-busy');
}

// Sets `element`'s text only when it changed, so that a screen reader or a
// selection is not disturbed by every poll.
export function setText(element, text) {
  if (element.textContent !== text) element.textContent = text;
}

// Sets or clears `element`'s tooltip.
export function setTitle(element, title) {
  if (title) {
    if (element.title !== title) element.title = title;
  } else {
    element.removeAttribute('title');
  }
}

// A link to `href` that, on a plain left click, calls onOpen() instead of
// navigating (the page shows it in place); other clicks (a new tab) follow
// the link.
export function inPageLink(href, title, onOpen, ...children) {
  return h('a', {
    href, class: 'conn-link', title,
    on: {
      click: (event) => {
        if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
        event.preventDefault();
        onOpen();
      },
    },
  }, ...children);
}
