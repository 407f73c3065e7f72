// The polling loop the live pages share: a turn now, then one every
// `everyMs` from the start of the last (never two at once), and `tick`
// every `tickMs` in between, while the page is visible. Nothing is asked
// while it is hidden; it asks at once when it shows again.
export class Poller {
  // turn(sentAt): the page's read, async; sentAt is performance.now() at
  // its start. tick(): redraws what changes with time alone.
  constructor({ everyMs, tickMs, turn, tick }) {
    this.everyMs = everyMs;
    this.tickMs = tickMs;
    this.turn = turn;
    this.tick = tick;
    this.turnTimer = null;
    this.tickTimer = null;
    this.running = false;
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

  // A turn now (a retry, a change made on the page), not at the next one.
  now() {
    if (this.stopped || document.hidden) return;
    window.clearTimeout(this.turnTimer);
    this.run();
  }

  resume() {
    this.pause();
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
    const sentAt = performance.now();
    try {
      await this.turn(sentAt);
    } finally {
      this.running = false;
    }
    if (!this.stopped && !document.hidden) {
      const waitMs = Math.max(0, this.everyMs - (performance.now() - sentAt));
      window.clearTimeout(this.turnTimer);
      this.turnTimer = window.setTimeout(() => this.run(), waitMs);
    }
  }
}
