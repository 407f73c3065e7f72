// The sign-in page's round trip: where the shell sends a visitor without a
// session, and where sign-in may send them back. `next` comes from the URL,
// so anyone can craft it: only a path on this origin is followed.

// "/signin?next=<this page>", for a page that found it has no session.
export function signInPath(loc = window.location) {
  return `/signin?next=${encodeURIComponent(loc.pathname + loc.search + loc.hash)}`;
}

// `raw` if it is a path on `origin` (one leading "/", not "//" or "/\", which
// browsers read as another host), else "/". Never the sign-in page itself.
export function safeNextPath(raw, origin = window.location.origin) {
  if (typeof raw !== 'string' || !raw.startsWith('/')) return '/';
  if (raw.startsWith('//') || raw.startsWith('/\\')) return '/';
  let url;
  try {
    url = new URL(raw, origin);
  } catch {
    return '/';
  }
  // The URL parser drops tabs and newlines, so "/\t/host" becomes "//host":
  // the origin check catches what the prefix check cannot.
  if (url.origin !== origin) return '/';
  if (url.pathname === '/signin' || url.pathname === '/signin.html') return '/';
  return url.pathname + url.search + url.hash;
}
