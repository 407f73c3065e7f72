// The page of a section that is not in this build: it says so plainly and
// shows no made-up data.
import { h, messageState } from './dom.js';

export function notInBuildView(section) {
  return (main) => {
    main.replaceChildren(
      h('div', { class: 'page-head' }, h('h1', { text: section.title })),
      messageState({
        iconName: section.icon,
        boxed: true,
        title: 'Not in this build yet',
        body: [
          `The ${section.title} page is not part of this build of leasehold.`,
          section.planned,
        ],
        actions: [h('a', { class: 'button', href: '/' }, 'Back to home')],
      }),
    );
  };
}
