// A movie's Analyze page (/movies/{id}). Being built.
import { h } from './dom.js';

export function analyzeView(main, { params }) {
  main.replaceChildren(h('div', { class: 'page-head' }, h('h1', { text: `Movie ${params.id}` })));
}
