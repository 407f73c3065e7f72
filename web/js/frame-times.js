// Each frame's time, as the server read it from the movie's file
// (GET /api/movies/{id}/times, docs/server.md "Frame times"): a frame's time
// is never its number over the rate, which is wrong for a movie whose rate
// varies. Until the times come (or for a page that has none), the movie's
// average rate stands in.
import { getFrameTimes } from './movies-api.js';

export class FrameTimes {
  // frameCount frames; stepsUs [[count, step], ...] as the server gives
  // them, or null for frames at `fps`.
  constructor(frameCount, stepsUs, fps) {
    this.frameCount = frameCount;
    this.fps = fps;
    this.us = null;
    if (stepsUs) {
      const us = new Float64Array(frameCount);
      let n = 0;
      let t = 0;
      for (const [count, step] of stepsUs) {
        for (let i = 0; i < count && n + 1 < frameCount; i += 1) {
          t += step;
          n += 1;
          us[n] = t;
        }
      }
      if (n === frameCount - 1) this.us = us;
    }
  }

  // Frame n's time in seconds from the first frame's.
  seconds(n) {
    if (this.us) return this.us[Math.max(0, Math.min(this.frameCount - 1, n))] / 1e6;
    return n / (this.fps || 1);
  }

  // The frame on screen at `seconds`: the last whose time is not after it.
  frameAt(seconds) {
    if (!this.us) return Math.max(0, Math.min(this.frameCount - 1, Math.floor(seconds * this.fps)));
    const us = seconds * 1e6;
    let lo = 0;
    let hi = this.frameCount - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.us[mid] <= us + 0.5) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}

// The movie's times: a FrameTimes from the server's, or one at the movie's
// rate should they not come (the page still works, its times estimates).
export async function loadFrameTimes(movie) {
  try {
    const answer = await getFrameTimes(movie.id);
    return new FrameTimes(movie.frame_count, answer.steps_us, movie.fps);
  } catch {
    return new FrameTimes(movie.frame_count, null, movie.fps);
  }
}
