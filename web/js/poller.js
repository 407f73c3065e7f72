// The polling loop the live pages share: a turn now, then one every period
// from the start of the last (never two at once), and `tick` every `tickMs`
// in between, while the page is visible. Nothing is asked while it is
// hidden; it asks at once when it shows again.
//
// The period may back off: a page that gives `maxEveryMs` above `everyMs`
// and whose turns say whether anything changed waits twice as long after
// each turn that changed nothing (1 s, 2 s, 4 s, 8 s), and comes back to
// `everyMs` after one that did, after now() (a user's action), and when the
// page shows again.
export class Poller {
  // turn(sentAt): the page's read, async, resolving true when what it read
  // changed; sentAt is performance.now() at its start. tick(): redraws what
  // changes with time alone.
  constructor({ everyMs, maxEveryMs = everyMs, tickMs, turn, tick }) {
    this.minEveryMs = everyMs;
    this.maxEveryMs = Math.max(everyMs, maxEveryMs);
    this.periodMs = everyMs;
    this.tickMs = tickMs;
    this.turn = turn;
    this.tick = tick;
    this.turnTimer = null;
    this.tickTimer = null;
    this.running = false;
    this.again = false; // now() came while a turn ran: another follows at once
    this.stopped = false;
    this.onVisibility = () => {
      if (this.stopped) return;
      if (document.hidden) this.pause();
      else this.resume();
    };
  }

  start() {
    document.addEventListener('visibilitychange', this.onVisibility);
    if (!document.hidden) this.resume();
  }

  stop() {
    this.stopped = true;
    document.removeEventListener('visibilitychange', this.onVisibility);
    this.pause();
  }

  // A turn now (a retry, a change made on the page), not at the next one,
  // and the shortest period again.
  now() {
    if (this.stopped) return;
    this.periodMs = this.minEveryMs;
    if (document.hidden) return;
    if (this.running) {
      this.again = true;
      return;
    }
    window.clearTimeout(this.turnTimer);
    this.run();
  }

  resume() {
    this.pause();
    this.periodMs = this.minEveryMs;
    this.tickTimer = window.setInterval(this.tick, this.tickMs);
    this.run();
  }

  pause() {
    window.clearTimeout(this.turnTimer);
    window.clearInterval(this.tickTimer);
    this.turnTimer = null;
    this.tickTimer = null;
  }

  async run() {
    if (this.running || this.stopped) return;
    this.running = true;
    this.again = false;
    const sentAt = performance.now();
    let changed = false;
    try {
      changed = await this.turn(sentAt);
    } finally {
      this.running = false;
    }
    if (this.again) {
      this.periodMs = this.minEveryMs;
    } else {
      this.periodMs = changed ? this.minEveryMs : Math.min(this.maxEveryMs, this.periodMs * 2);
    }
    if (!this.stopped && !document.hidden) {
      const waitMs = this.again ? 0 : Math.max(0, this.periodMs - (performance.now() - sentAt));
      window.clearTimeout(this.turnTimer);
      this.turnTimer = window.setTimeout(() => this.run(), waitMs);
    }
  }
}
