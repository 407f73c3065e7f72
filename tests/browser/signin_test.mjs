// Sign-in and the app shell, in chromium against a real `leasehold serve`:
// wrong and right passwords, signing out, pages opened without a session
// coming back after sign-in, `next` never leaving the site, the shell's
// loading and error states, too many attempts, and the layout at laptop and
// phone sizes (screenshots of each page at both, in --screenshots).
//
//   node tests/browser/signin_test.mjs --leasehold build/bin/leasehold --screenshots DIR
import assert from 'node:assert/strict';

import {
  closeAll, closePage, LAPTOP, launchBrowser, openPage, openSignedIn, parseArgs, PHONE, run,
  screenshot, Server, signInOnPage, Store, test, waitForText,
} from './harness.mjs';

const { bin, screenshots } = parseArgs();
const store = await Store.create(bin);
const alice = await store.addUser({
  name: 'alice', displayName: 'Alice Liddell', password: 'down the rabbit hole',
});
const queen = await store.addUser({
  name: 'queen', displayName: 'The Queen of Hearts', password: 'off with their heads', admin: true,
});
const limited = await store.addUser({
  name: 'dormouse', displayName: 'Dormouse', password: 'twinkle twinkle',
});
const server = await Server.start(store);
const browser = await launchBrowser();

// A page signed in as `user`, at `path`.
async function signedInPage(user, path = '/', viewport = LAPTOP) {
  const page = await openSignedIn(browser, server, user, path, viewport);
  await page.locator('#account-name').filter({ hasText: user.displayName }).waitFor();
  return page;
}

test('the sign-in page focuses the user name and submits with Enter', async () => {
  const page = await openPage(browser);
  await page.goto(server.url('/signin'));
  assert.equal(await page.title(), 'Sign in · leasehold');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'name');
  await page.keyboard.type(alice.name);
  await page.keyboard.press('Tab');
  await page.keyboard.type(alice.password);
  await page.keyboard.press('Enter');
  await page.waitForURL(server.url('/'));
  await closePage(page);
});

test('a wrong password shows an error and keeps the visitor on the sign-in page', async () => {
  const page = await openPage(browser);
  await page.goto(server.url('/signin'));
  await signInOnPage(page, { name: alice.name, password: 'not the password' });
  await waitForText(page.getByRole('alert'), /user name or password is not right/);
  assert.equal(new URL(page.url()).pathname, '/signin');
  // Ready for another try: the password cleared and focused, the button back.
  assert.equal(await page.getByLabel('Password').inputValue(), '');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'password');
  assert.ok(await page.getByRole('button', { name: 'Sign in' }).isEnabled());
  assert.equal((await page.context().cookies()).length, 0);
  await screenshot(page, screenshots, 'signin-error-laptop');
  await closePage(page);
});

test('empty fields are named before anything is sent', async () => {
  const page = await openPage(browser);
  let posted = 0;
  page.on('request', (request) => {
    if (request.url().endsWith('/api/session')) posted += 1;
  });
  await page.goto(server.url('/signin'));
  await page.getByRole('button', { name: 'Sign in' }).click();
  await waitForText(page.getByRole('alert'), /Enter your user name/);
  assert.equal(await page.evaluate(() => document.activeElement.id), 'name');
  await page.getByLabel('User name').fill(alice.name);
  await page.getByLabel('User name').press('Enter');
  await waitForText(page.getByRole('alert'), /Enter your password/);
  assert.equal(await page.evaluate(() => document.activeElement.id), 'password');
  assert.equal(posted, 0);
  await closePage(page);
});

test('the form shows it is busy while signing in and is not sent twice', async () => {
  const page = await openPage(browser);
  let posted = 0;
  let release;
  const held = new Promise((resolve) => (release = resolve));
  await page.route('**/api/session', async (route) => {
    posted += 1;
    await held;
    await route.continue();
  });
  await page.goto(server.url('/signin'));
  await signInOnPage(page, alice);
  const submit = page.locator('#signin-submit');
  await waitForText(submit, /Signing in…/);
  assert.equal(await submit.getAttribute('aria-busy'), 'true');
  assert.ok(await submit.isDisabled());
  assert.equal(await page.getByLabel('Password').getAttribute('readonly'), '');
  await screenshot(page, screenshots, 'signin-busy-laptop');
  await page.getByLabel('Password').press('Enter');
  release();
  await page.waitForURL(server.url('/'));
  assert.equal(posted, 1);
  await closePage(page);
});

test('the right password lands in the shell, which shows the display name', async () => {
  const page = await openPage(browser);
  await page.goto(server.url('/signin'));
  await signInOnPage(page, alice);
  await page.waitForURL(server.url('/'));
  await page.getByRole('heading', { level: 1, name: 'Welcome, Alice Liddell' }).waitFor();
  assert.equal(await page.locator('#account-name').innerText(), 'Alice Liddell');
  const [cookie, ...others] = await page.context().cookies();
  assert.equal(others.length, 0, 'one session cookie');
  assert.ok(cookie.httpOnly, 'the session cookie is HttpOnly');
  assert.equal(await page.evaluate(() => document.cookie), '');
  await closePage(page);
});

test('an administrator is shown as one', async () => {
  const page = await signedInPage(queen);
  await waitForText(page.locator('#account-role'), /admin/);
  await closePage(page);
});

test('signing out returns to sign-in and ends the session', async () => {
  const page = await signedInPage(alice);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(server.url('/signin'));
  await page.goto(server.url('/'));
  await page.waitForURL(server.url('/signin?next=%2F'));
  await closePage(page);
});

for (const path of ['/', '/fleet', '/movies']) {
  test(`${path} opened without a session goes to sign-in and comes back after it`, async () => {
    const page = await openPage(browser);
    await page.goto(server.url(path));
    await page.waitForURL(server.url(`/signin?next=${encodeURIComponent(path)}`));
    await signInOnPage(page, alice);
    await page.waitForURL(server.url(path));
    await page.locator('#account-name').filter({ hasText: alice.displayName }).waitFor();
    const current = await page.locator('.nav a[aria-current="page"]').allInnerTexts();
    assert.deepEqual(current, path === '/' ? [] : [path === '/fleet' ? 'Fleet' : 'Movies']);
    await closePage(page);
  });
}

test('sign-in never sends the visitor off the site, whatever next says', async () => {
  const unsafe = ['//example.com/', '/\\example.com', 'https://example.com/', '/\t/example.com',
    'javascript:alert(1)', '/signin'];
  for (const next of unsafe) {
    const page = await openPage(browser);
    await page.goto(server.url(`/signin?next=${encodeURIComponent(next)}`));
    await signInOnPage(page, alice);
    await page.waitForURL(server.url('/'));
    await closePage(page);
  }
});

test('the header links change the view in place and the back button returns', async () => {
  const page = await signedInPage(alice);
  let documents = 0;
  page.on('request', (request) => {
    if (request.resourceType() === 'document') documents += 1;
  });
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Fleet' }).click();
  await page.waitForURL(server.url('/fleet'));
  await waitForText(page.locator('main h1'), /^Fleet$/);
  await page.getByRole('heading', { level: 2, name: /^Connections/ }).waitFor();
  assert.equal(await page.title(), 'Fleet · leasehold');
  assert.equal(await page.evaluate(() => document.activeElement.tagName), 'H1');
  await page.getByRole('link', { name: 'Movies' }).click();
  await page.waitForURL(server.url('/movies'));
  await waitForText(page.locator('main h1'), /^Movies$/);
  await page.getByRole('heading', { level: 2, name: /^All movies/ }).waitFor();
  await page.goBack();
  await page.waitForURL(server.url('/fleet'));
  await waitForText(page.locator('main h1'), /^Fleet$/);
  assert.equal(documents, 0, 'no page was reloaded');
  await closePage(page);
});

test('the shell shows a calm loading state while it asks who is signed in', async () => {
  const page = await signedInPage(alice);
  let release;
  const held = new Promise((resolve) => (release = resolve));
  await page.route('**/api/me', async (route) => {
    await held;
    await route.continue();
  });
  await page.goto(server.url('/'));
  const loading = page.locator('.state-loading');
  await loading.waitFor();
  assert.equal(await loading.getAttribute('role'), 'status');
  // It fades in after a moment, so that a quick answer shows no flash.
  await page.waitForFunction(() => getComputedStyle(
    document.querySelector('.state-loading')).opacity === '1');
  await screenshot(page, screenshots, 'home-loading-laptop');
  release();
  await page.getByRole('heading', { name: 'Welcome, Alice Liddell' }).waitFor();
  await closePage(page);
});

test('the shell says when the server fails, and Try again recovers', async () => {
  const page = await signedInPage(alice);
  await page.route('**/api/me', (route) => route.fulfill({
    status: 503,
    contentType: 'application/json',
    body: JSON.stringify({
      error: { code: 'unavailable', message: 'The store is not answering.' },
    }),
  }));
  await page.goto(server.url('/fleet'));
  await waitForText(page.locator('.state-error'), /The store is not answering/);
  await screenshot(page, screenshots, 'shell-error-laptop');
  await page.unroute('**/api/me');
  await page.getByRole('button', { name: 'Try again' }).click();
  await page.getByRole('heading', { level: 1, name: 'Fleet' }).waitFor();
  await closePage(page);
});

// The layout: screenshots of every page at both sizes, and checks a person
// would otherwise make by eye: nothing wider than the screen, the header's
// parts all visible and apart, controls large enough to tap on a phone.
async function checkLayout(page, viewport) {
  const issues = await page.evaluate(({ width, phone }) => {
    const found = [];
    if (document.documentElement.scrollWidth > width) {
      found.push(`the page is ${document.documentElement.scrollWidth}px wide`);
    }
    const boxes = [...document.querySelectorAll('.brand, .nav a, #account-name, #sign-out')]
      .filter((e) => e.offsetParent !== null)
      .map((e) => ({ name: e.textContent.trim(), r: e.getBoundingClientRect() }));
    for (const { name, r } of boxes) {
      if (r.left < 0 || r.right > width || r.width === 0) found.push(`${name} is off screen`);
    }
    for (let i = 0; i < boxes.length; i += 1) {
      for (let j = i + 1; j < boxes.length; j += 1) {
        const a = boxes[i].r;
        const b = boxes[j].r;
        if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) {
          found.push(`${boxes[i].name} overlaps ${boxes[j].name}`);
        }
      }
    }
    // The sign-in card takes the width it is given (a grid gone wrong squeezes it).
    const card = document.querySelector('.signin-card');
    if (card && card.getBoundingClientRect().width < Math.min(width - 48, 340)) {
      found.push(`the sign-in card is ${card.getBoundingClientRect().width}px wide`);
    }
    for (const e of document.querySelectorAll('button, input, .nav a, main a.button')) {
      if (e.offsetParent === null) continue;
      const r = e.getBoundingClientRect();
      const name = e.id || e.textContent.trim();
      if (phone && r.height < 40) found.push(`${name} is ${r.height}px tall`);
      // Phones zoom into inputs whose text is smaller than 16px.
      if (e.tagName === 'INPUT' && parseFloat(getComputedStyle(e).fontSize) < 16) {
        found.push(`input ${e.id} text is under 16px`);
      }
    }
    return found;
  }, { width: viewport.width, phone: viewport === PHONE });
  assert.deepEqual(issues, [], `layout at ${viewport.width}x${viewport.height}`);
}

for (const [size, viewport] of [['laptop', LAPTOP], ['phone', PHONE]]) {
  test(`every page is laid out for a ${size} (${viewport.width}x${viewport.height})`, async () => {
    const visitor = await openPage(browser, viewport);
    await visitor.goto(server.url('/signin'));
    await checkLayout(visitor, viewport);
    await screenshot(visitor, screenshots, `signin-${size}`);
    await signInOnPage(visitor, { name: queen.name, password: 'not her password' });
    await visitor.getByRole('alert').waitFor();
    await checkLayout(visitor, viewport);
    await screenshot(visitor, screenshots, `signin-error-${size}`);
    await closePage(visitor);

    const page = await signedInPage(queen, '/', viewport);
    for (const [name, path] of [['home', '/'], ['fleet', '/fleet'], ['movies', '/movies']]) {
      await page.goto(server.url(path));
      await page.locator('main h1').waitFor();
      await checkLayout(page, viewport);
      await screenshot(page, screenshots, `${name}-${size}`);
    }
    await closePage(page);
  });
}

test('too many failed attempts say when to try again', async () => {
  const page = await openPage(browser);
  await page.goto(server.url('/signin'));
  const error = page.getByRole('alert');
  let text = '';
  for (let attempt = 0; attempt < 30 && !/Too many/.test(text); attempt += 1) {
    await signInOnPage(page, { name: limited.name, password: `wrong password ${attempt}` });
    await page.waitForFunction(() => {
      const box = document.getElementById('signin-error');
      return !box.hidden && !document.getElementById('signin-submit').hasAttribute('aria-busy');
    });
    text = await error.innerText();
  }
  assert.match(text, /Too many failed sign-in attempts\. Try again in \d+ (second|minute)s?, at /);
  assert.ok(await page.getByRole('button', { name: 'Sign in' }).isDisabled(),
    'the button waits for the time the server gave');
  await screenshot(page, screenshots, 'signin-too-many-laptop');
  await closePage(page);
});

test('no password or session cookie appears in the server log', async () => {
  const page = await signedInPage(alice);
  const [cookie] = await page.context().cookies();
  await closePage(page);
  const logs = server.logs();
  for (const secret of [alice.password, queen.password, limited.password, cookie.value]) {
    assert.ok(!logs.includes(secret), 'a secret is in the server log');
  }
});

await run({ after: () => closeAll({ browser, server, store }) });
