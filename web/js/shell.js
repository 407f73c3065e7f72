// The app shell (index.html, served at "/" and at every section's path).
// It asks the server who is signed in first: without a session it sends the
// visitor to sign in, with `next` set to come back here; with one it shows
// the user in the header and draws the view for the URL. Links between the
// shell's pages change the view without reloading (history.pushState), so
// every view keeps a URL of its own that can be shared or reloaded.
import { ApiError, getMe, signOut } from './api.js';
import { h, icon, loadingState, messageState, setBusy } from './dom.js';
import { analyzeView } from './analyze.js';
import { homeView } from './home.js';
import { notInBuildView } from './not-built.js';
import { signInPath } from './paths.js';
import { SECTIONS } from './sections.js';

// path -> {title, view}. A view is view(main, context): it fills `main` and
// may return a function that stops what it started (timers, streams), called
// when the visitor leaves it.
const ROUTES = new Map([
  ['/', { title: null, view: homeView }],
  ...SECTIONS.map((s) => [s.path, { title: s.title, view: s.view || notInBuildView(s) }]),
]);

// Pages under a section, whose path carries a parameter: context.params
// holds its parts; `section` is the header link marked current.
const PATTERN_ROUTES = [
  { pattern: /^\/movies\/([^/]+)$/, names: ['id'], section: '/movies', title: 'Analyze',
    view: analyzeView },
];

// The route for `path`, with the parameters it carries, or null.
function routeFor(path) {
  const exact = ROUTES.get(path);
  if (exact) return { ...exact, section: path, params: {} };
  for (const route of PATTERN_ROUTES) {
    const match = route.pattern.exec(path);
    if (!match) continue;
    let params;
    try {
      params = Object.fromEntries(route.names.map((n, i) => [n, decodeURIComponent(match[i + 1])]));
    } catch {
      return null; // a malformed escape: no such page
    }
    return { ...route, params };
  }
  return null;
}

const NOT_FOUND = {
  title: 'Not found',
  view: (main) => main.replaceChildren(messageState({
    iconName: 'compass',
    title: 'There is no page here',
    body: 'The address may be mistyped, or the page may have moved.',
    actions: [h('a', { class: 'button', href: '/' }, 'Go to home')],
  })),
};

const main = document.getElementById('main');
const notice = document.getElementById('notice');
let leaveView = null;

function button(label, onClick, classes = 'button') {
  return h('button', { class: classes, type: 'button', on: { click: onClick } }, label);
}

function goToSignIn() {
  window.location.replace(signInPath());
}

function showNotice(text) {
  notice.replaceChildren(
    h('div', { class: 'alert', role: 'alert' }, icon('alert', 18), h('span', { text })));
  notice.hidden = false;
}

// The header's links, one per section (sections.js is their one list).
function drawNav() {
  document.getElementById('nav').replaceChildren(
    ...SECTIONS.map((section) => h('a', { href: section.path, text: section.title })));
}

function markCurrentNav(path) {
  for (const link of document.querySelectorAll('.nav a')) {
    if (link.getAttribute('href') === path) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

function viewFailed(error) {
  if (error instanceof ApiError && error.status === 401) return goToSignIn();
  main.replaceChildren(messageState({
    kind: 'error',
    title: 'This page could not be shown',
    body: error instanceof ApiError
      ? error.message
      : 'Something went wrong in this page. Reload to try again.',
    actions: [button('Reload', () => window.location.reload())],
  }));
  if (!(error instanceof ApiError)) console.error(error);
}

async function show(path, { user, moveFocus }) {
  if (leaveView) leaveView();
  leaveView = null;
  const route = routeFor(path) || { ...NOT_FOUND, section: null, params: {} };
  markCurrentNav(route.section);
  notice.hidden = true;
  document.title = route.title ? `${route.title} · leasehold` : 'leasehold';
  main.replaceChildren();
  try {
    const setTitle = (title) => {
      document.title = title ? `${title} · leasehold` : 'leasehold';
    };
    leaveView = (await route.view(main, {
      user, goToSignIn, params: route.params, setTitle,
    })) || null;
  } catch (error) {
    viewFailed(error);
  }
  if (moveFocus) {
    // Tell screen readers the page changed: focus its heading.
    const heading = main.querySelector('h1') || main;
    heading.setAttribute('tabindex', '-1');
    heading.focus();
  }
}

// Plain left clicks on links to the shell's own pages change the view in
// place; anything else (new tab, other pages, downloads) is left alone.
function followLinksInPlace(user) {
  document.addEventListener('click', (event) => {
    if (event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const link = event.target.closest('a[href]');
    if (!link || link.target || link.hasAttribute('download')) return;
    const url = new URL(link.href);
    if (url.origin !== window.location.origin || !routeFor(url.pathname)) return;
    if (url.hash && url.pathname === window.location.pathname) return;
    event.preventDefault();
    if (url.pathname + url.search !== window.location.pathname + window.location.search) {
      window.history.pushState(null, '', url);
    }
    show(url.pathname, { user, moveFocus: true });
  });
  window.addEventListener('popstate', () => {
    show(window.location.pathname, { user, moveFocus: true });
  });
}

function showAccount(user) {
  document.getElementById('account-name').textContent = user.display_name;
  document.getElementById('account-name').title = user.display_name;
  document.getElementById('account-role').textContent =
    user.admin ? `${user.name} · admin` : user.name;
  const signOutButton = document.getElementById('sign-out');
  signOutButton.addEventListener('click', async () => {
    setBusy(signOutButton, true);
    notice.hidden = true;
    try {
      await signOut();
    } catch (error) {
      // 401: the session had already ended, which is what was asked for.
      if (!(error instanceof ApiError && error.status === 401)) {
        setBusy(signOutButton, false);
        showNotice(`Could not sign out: ${error.message}`);
        return;
      }
    }
    window.location.assign('/signin');
  });
  document.getElementById('account').hidden = false;
}

async function start() {
  drawNav();
  markCurrentNav(routeFor(window.location.pathname)?.section);
  if (!main.querySelector('.state-loading')) main.replaceChildren(loadingState());
  let user;
  try {
    user = await getMe();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return goToSignIn();
    main.replaceChildren(messageState({
      kind: 'error',
      title: 'This page could not load',
      body: error.message,
      actions: [button('Try again', start, 'button button-primary')],
    }));
    return;
  }
  showAccount(user);
  followLinksInPlace(user);
  await show(window.location.pathname, { user, moveFocus: false });
}

start();
