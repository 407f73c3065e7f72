// The landing page ("/"): who is signed in and the app's sections.
import { h, icon } from './dom.js';
import { SECTIONS } from './sections.js';

function sectionCard(section) {
  return h('a', { class: 'card', href: section.path },
    h('h2', {}, icon(section.icon, 22), section.title),
    h('p', { text: section.summary }),
    section.view ? null : h('span', { class: 'tag', text: 'Not in this build yet' }));
}

export function homeView(main, { user }) {
  main.replaceChildren(
    h('div', { class: 'page-head' },
      h('h1', { text: `Welcome, ${user.display_name}` }),
      h('p', {
        class: 'lead',
        text: 'leasehold gives a fleet of processes exclusive, self-healing ownership of ' +
          'things — streams, jobs, movies being edited — with nothing but conditional writes ' +
          'on a store you already run.',
      })),
    h('div', { class: 'cards' }, SECTIONS.map(sectionCard)),
    h('section', { class: 'account-facts', 'aria-labelledby': 'account-facts-title' },
      h('h2', { id: 'account-facts-title', text: 'Your account' }),
      h('dl', { class: 'facts' },
        h('dt', { text: 'Display name' }), h('dd', { text: user.display_name }),
        h('dt', { text: 'User name' }), h('dd', {}, h('code', { text: user.name })),
        h('dt', { text: 'Role' }), h('dd', { text: user.admin ? 'Administrator' : 'User' }))),
  );
}
