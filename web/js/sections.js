// The app's sections: the pages the header links to, what each is for, and
// the module that draws it. A section without `view` is not in this build:
// its page says so (not-built.js) and the home page marks it.
import { fleetView } from './fleet.js';
import { moviesView } from './movies.js';

export const SECTIONS = [
  {
    path: '/fleet',
    title: 'Fleet',
    icon: 'fleet',
    summary:
      'Workers that own upstream WebSocket connections, one owner each: which worker holds ' +
      'which connection, until when, and how far it has read.',
    view: fleetView,
  },
  {
    path: '/movies',
    title: 'Movies',
    icon: 'movie',
    summary:
      'Mark points on a movie and trace them through its frames. One person edits a movie ' +
      'at a time; everyone else watches it live.',
    view: moviesView,
  },
];
