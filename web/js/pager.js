// Previous and Next over a list the server answers a page at a time, each
// page asked for after the last ID of the one before it (`?after=ID`, the
// answer's next_after). Going back needs no API of its own: the `after` of
// every page before the one shown is kept, so Previous returns the way
// Next came. The range shown ("101–200 of 252") sits beside the buttons
// above the list; a second pair under a long page saves scrolling up.
//
// Hooks for tests and scripts, for an `id` of "conn": #conn-range,
// #conn-prev, #conn-next, #conn-prev-bottom and #conn-next-bottom.
import { h, icon, setText } from './dom.js';
import { formatCount } from './fleet-format.js';

// A page shorter than this has no pager under it: the one above is in view.
const BOTTOM_ROWS_MIN = 20;

export class Pager {
  // id: the prefix of the elements' IDs. pageSize: the `limit` asked for.
  // label: said before a range ("Movies 101–200"), or ''. onPage(fromBottom):
  // `after` changed by a button (the list asks for its new page at once).
  constructor({ id, pageSize, label = '', onPage }) {
    this.pageSize = pageSize;
    this.label = label;
    this.onPage = onPage;
    this.after = ''; // the ID the shown page starts after; '' for the first
    this.previous = []; // the `after` of each page before it, for "Previous"
    this.nextAfter = ''; // the shown page's next_after; '' on the last
    this.range = h('p', { class: 'range', id: `${id}-range`, 'aria-live': 'polite' });
    this.prevButton = pageButton(`${id}-prev`, 'Previous', 'previous', () => this.back(false));
    this.nextButton = pageButton(`${id}-next`, 'Next', 'next', () => this.forward(false));
    this.element = h('div', { class: 'pager' }, this.range, this.prevButton, this.nextButton);
    this.bottomPrev = pageButton(`${id}-prev-bottom`, 'Previous', 'previous',
      () => this.back(true));
    this.bottomNext = pageButton(`${id}-next-bottom`, 'Next', 'next', () => this.forward(true));
    this.bottom = h('div', { class: 'pager pager-bottom', hidden: true },
      this.bottomPrev, this.bottomNext);
  }

  // The number of the shown page's first item, counted from 1.
  firstNumber() {
    return this.previous.length * this.pageSize + 1;
  }

  onFirstPage() {
    return this.previous.length === 0;
  }

  forward(fromBottom) {
    if (!this.nextAfter) return;
    this.previous.push(this.after);
    this.after = this.nextAfter;
    this.nextAfter = '';
    this.onPage(fromBottom);
  }

  back(fromBottom) {
    if (this.previous.length === 0) return;
    this.after = this.previous.pop();
    this.nextAfter = '';
    this.onPage(fromBottom);
  }

  // Back to the first page, without telling onPage (the caller asks).
  reset() {
    this.after = '';
    this.previous = [];
    this.nextAfter = '';
  }

  // Shows the buttons and the range. waiting: the shown page's answer has
  // not come yet (the buttons wait for it). nextAfter: its next_after.
  // shown: the items on it. total: how many there are in all when known
  // without reading them, else null (on the last page it is counted).
  // single: the range's text when there is only one page ("3 movies").
  show({ waiting, nextAfter = '', shown = 0, total = null, single = '' }) {
    if (!waiting) this.nextAfter = nextAfter;
    const hasNext = !waiting && Boolean(nextAfter);
    const hasPrev = this.previous.length > 0;
    this.prevButton.disabled = waiting || !hasPrev;
    this.nextButton.disabled = waiting || !hasNext;
    // A single page needs no buttons to leave it.
    const alone = !waiting && !hasPrev && !hasNext;
    this.prevButton.hidden = alone;
    this.nextButton.hidden = alone;
    this.element.classList.toggle('pager-alone', alone);
    this.bottomPrev.disabled = this.prevButton.disabled;
    this.bottomNext.disabled = this.nextButton.disabled;
    this.bottom.hidden = waiting || shown < BOTTOM_ROWS_MIN || !(hasPrev || hasNext);
    if (waiting) return;
    let text = '';
    if (shown > 0 && (hasPrev || hasNext)) {
      const first = this.firstNumber();
      const last = first + shown - 1;
      // On the last page the count is exact; before it, only the caller
      // knows it (and it may lag a little behind the pages).
      const count = hasNext ? total : last;
      text = `${formatCount(first)}–${formatCount(last)}`;
      if (count !== null) text += ` of ${formatCount(Math.max(count, last))}`;
      if (this.label) text = `${this.label} ${text}`;
    } else if (shown > 0) {
      text = single;
    }
    setText(this.range, text);
  }
}

function pageButton(id, label, iconName, onClick) {
  const children = [icon(iconName, 16), h('span', { text: label })];
  if (iconName === 'next') children.reverse();
  return h('button', {
    type: 'button', class: 'button button-small', id, 'aria-label': `${label} page`,
    disabled: true, on: { click: onClick },
  }, children);
}
