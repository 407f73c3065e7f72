// A real takeover on the Fleet page (/fleet): `leasehold upstream-sim`
// streams three connections to two real `leasehold worker` processes on the
// store `serve` reads; once the page shows every connection owned, the owner
// of one is killed with SIGKILL, and the page must show the other worker
// owning it, with its last_seq moving on, within the lease's ttl and a few
// seconds. Screenshots before and after the takeover go to --screenshots.
//
//   node tests/browser/fleet_takeover_test.mjs --leasehold build/bin/leasehold \
//       --screenshots DIR
import assert from 'node:assert/strict';
import path from 'node:path';

import {
  closePage, launchBrowser, openSignedIn, parseArgs, run, screenshot, Server, spawnTracked, Store,
  test, waitForText,
} from './harness.mjs';

const { bin, screenshots } = parseArgs();

const CONNECTIONS = ['c1', 'c2', 'c3'];
const WORKERS = ['w1', 'w2'];
const LEASE_TTL_MS = 4000;
// Both workers start, acquire and stream within this.
const ALL_OWNED_WITHIN_MS = 20_000;
// The lease runs out one ttl after the dead worker's last heartbeat; the
// survivor tries it at expiry plus the clock-skew bound, and the page asks
// every second while what it shows changes (the connections stream, so it
// does): about 5 s on an idle machine, 7 s seen on a loaded one.
const TAKEN_OVER_WITHIN_MS = LEASE_TTL_MS + 8000;
// Checkpoints every second (the renew period), and the page asks every second.
const SEQ_MOVES_WITHIN_MS = 5000;
const STARTED_WITHIN_MS = 15_000;
const STOPPED_WITHIN_MS = 10_000;
const OUTPUT_BYTES_MAX = 1024 * 1024;

// A process this file starts besides the server, with its output kept for
// failure messages.
class Child {
  constructor(name, args) {
    this.name = name;
    this.process = spawnTracked(bin, args);
    this.stdout = '';
    this.stderr = '';
    const keep = (text, chunk) => (text + chunk).slice(-OUTPUT_BYTES_MAX);
    this.process.stdout.on('data', (chunk) => (this.stdout = keep(this.stdout, chunk)));
    this.process.stderr.on('data', (chunk) => (this.stderr = keep(this.stderr, chunk)));
    this.exited = new Promise((resolve) => {
      this.process.on('error', (error) => resolve({ error }));
      this.process.on('exit', (code, signal) => resolve({ code, signal }));
    });
  }

  running() {
    return this.process.exitCode === null && this.process.signalCode === null;
  }

  // Resolves with the first match of `pattern` in stdout; fails if the
  // process exits first or nothing matches within `timeoutMs`.
  async waitForStdout(pattern, timeoutMs) {
    let timer;
    let onData;
    const found = new Promise((resolve) => {
      onData = () => {
        const match = pattern.exec(this.stdout);
        if (match) resolve(match);
      };
      this.process.stdout.on('data', onData);
      onData();
    });
    const timeout = new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    const outcome = await Promise.race([found, this.exited.then(() => 'exited'), timeout]);
    clearTimeout(timer);
    this.process.stdout.off('data', onData);
    if (Array.isArray(outcome)) return outcome;
    throw new Error(`${this.name}: no ${pattern} on stdout ` +
      `(${outcome === 'exited' ? 'it exited' : `within ${timeoutMs} ms`})\n${this.stderr}`);
  }

  // If it still runs: SIGTERM, then a clean exit (code 0) within
  // STOPPED_WITHIN_MS, else SIGKILL and an error.
  async stop() {
    if (!this.running()) return;
    this.process.kill('SIGTERM');
    let timer;
    const timeout = new Promise((resolve) => (timer = setTimeout(resolve, STOPPED_WITHIN_MS)));
    const exit = await Promise.race([this.exited, timeout]);
    clearTimeout(timer);
    if (!exit) {
      this.process.kill('SIGKILL');
      throw new Error(`${this.name} did not exit within ${STOPPED_WITHIN_MS} ms of SIGTERM`);
    }
    if (exit.code !== 0) {
      throw new Error(`${this.name} exited with ${exit.signal || `code ${exit.code}`} on ` +
        `SIGTERM\n${this.stderr}`);
    }
  }
}

const children = [];
const store = await Store.create(bin);
const alice = await store.addUser({
  name: 'alice', displayName: 'Alice Liddell', password: 'down the rabbit hole',
});
const server = await Server.start(store);
const browser = await launchBrowser();

function startChild(name, args) {
  const child = new Child(name, args);
  children.push(child);
  return child;
}

async function startUpstream() {
  const upstream = startChild('upstream-sim',
    ['upstream-sim', '--listen', '127.0.0.1:0', '--rate-per-conn', '10']);
  const [, address] =
    await upstream.waitForStdout(/\{"listening":"(127\.0\.0\.1:\d+)"\}/, STARTED_WITHIN_MS);
  return address;
}

function startWorker(id) {
  return startChild(id, [
    '--store', store.uri, 'worker', '--id', id, '--lease-ttl', `${LEASE_TTL_MS / 1000}s`,
    '--renew-every', '1s', '--reconcile-every', '500ms',
    '--sink', `jsonl:${path.join(store.dir, `${id}.jsonl`)}`,
  ]);
}

async function fleetPage(user) {
  const page = await openSignedIn(browser, server, user, '/fleet');
  await waitForText(page.locator('#fleet-freshness'), /Live/);
  return page;
}

// What the page shows of each connection: owner, epoch (the owner cell's
// title), the lease's kind ('held', 'expired', ...), last_seq (a number),
// the last message's age and the reconnects ('' when none).
function shownConnections(page) {
  return page.evaluate(() => {
    const shown = {};
    for (const row of document.querySelectorAll('tr[data-conn-id]')) {
      const text = (field) =>
        row.querySelector(`td[data-field="${field}"]`)?.innerText.trim() ?? '';
      shown[row.dataset.connId] = {
        owner: text('owner'),
        epoch: row.querySelector('td[data-field="owner"]')?.getAttribute('title') ?? '',
        lease: row.querySelector('td[data-field="lease"]')?.dataset.lease ?? '',
        lastSeq: Number(text('last_seq').replace(/,/g, '')),
        lastMessage: row.querySelector('td[data-field="last_message"] .age')?.textContent ?? '',
        reconnects: row.querySelector('[data-field="reconnects"]')?.textContent ?? '',
      };
    }
    return shown;
  });
}

// Waits until the page's connections, as shownConnections() reads them,
// satisfy `predicate`, for at most `timeoutMs`; fails saying what was shown.
async function waitForShown(page, what, predicate, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let shown;
  for (;;) {
    shown = await shownConnections(page);
    if (predicate(shown)) return shown;
    if (Date.now() > deadline) break;
    await page.waitForTimeout(100);
  }
  throw new assert.AssertionError({
    message: `not within ${timeoutMs} ms: ${what}; the page shows ${JSON.stringify(shown)}`,
  });
}

const ownedAlive = (c, owners) => c !== undefined && owners.includes(c.owner) &&
  c.lease === 'held';

test('a killed worker\'s connection is shown owned by the other, moving on', async () => {
  const address = await startUpstream();
  for (const id of CONNECTIONS) {
    const added = await store.leasehold('conn', 'add', id,
      '--url', `ws://${address}/s/${id}?from={next_seq}`);
    assert.equal(added.code, 0, `conn add ${id} failed: ${added.err}`);
  }
  const workers = Object.fromEntries(WORKERS.map((id) => [id, startWorker(id)]));

  const page = await fleetPage(alice);
  // Every connection owned by a live lease and streaming, and both workers
  // holding some (the fleet is balanced), before anything is killed.
  // The owner's figures for each: its last message a moment ago, and no
  // reconnect (the upstream never drops them).
  const before = await waitForShown(page, 'every connection owned and streaming', (shown) =>
    CONNECTIONS.every((id) => ownedAlive(shown[id], WORKERS) && shown[id].lastSeq > 0 &&
      /^(just now|\d+ s ago)$/.test(shown[id].lastMessage) && shown[id].reconnects === '') &&
    WORKERS.every((w) => CONNECTIONS.some((id) => shown[id].owner === w)),
  ALL_OWNED_WITHIN_MS);
  const victim = before.c1.owner;
  const survivor = WORKERS.find((w) => w !== victim);
  await screenshot(page, screenshots, 'fleet-takeover-before');

  const killedAt = Date.now();
  workers[victim].process.kill('SIGKILL');
  await workers[victim].exited;
  const after = await waitForShown(page, `c1 owned by ${survivor}`,
    (shown) => ownedAlive(shown.c1, [survivor]), TAKEN_OVER_WITHIN_MS);
  const shownAfterMs = Date.now() - killedAt;
  assert.notEqual(after.c1.epoch, before.c1.epoch, 'a takeover is a new epoch');
  // The new owner streams: its checkpoints move last_seq past what the page
  // showed when it first showed the new owner.
  const moved = await waitForShown(page, `c1's last_seq past ${after.c1.lastSeq}`,
    (shown) => shown.c1.owner === survivor && shown.c1.lastSeq > after.c1.lastSeq,
    SEQ_MOVES_WITHIN_MS);
  // Every connection of the dead worker moves; none is left to it.
  await waitForShown(page, `every connection owned by ${survivor}`,
    (shown) => CONNECTIONS.every((id) => ownedAlive(shown[id], [survivor])),
    TAKEN_OVER_WITHIN_MS);
  await screenshot(page, screenshots, 'fleet-takeover-after');
  console.log(`     (${survivor} was shown owning c1 ${shownAfterMs} ms after ${victim} ` +
    `was killed; its last_seq ${before.c1.lastSeq}, then ${after.c1.lastSeq}, then ` +
    `${moved.c1.lastSeq})`);
  assert.ok(workers[survivor].running(), `${survivor} exited:\n${workers[survivor].stderr}`);
  await closePage(page);
});

await run({
  after: async () => {
    const problems = [];
    // Workers first, so that none streams from an upstream that has gone.
    for (const child of [...children].reverse()) {
      try {
        await child.stop();
      } catch (error) {
        problems.push(error.message);
      }
    }
    await browser.close();
    await server.stop();
    store.remove();
    assert.deepEqual(problems, [], problems.join('\n'));
  },
});
