// The Analyze page's view of a movie: one exact frame at a time, drawn on a
// canvas from the server's frame images (GET .../frames/{n}.jpg, which any
// container the server accepts yields, unlike a <video>), with the markers
// and the traced tracks drawn over it. It steps, plays at the movie's fps
// and zooms; when editable, a click places a marker on the current frame and
// a drag moves one. It knows nothing of leases or the API's writes: the page
// passes what to draw and gets told what the user did.
//
// Coordinates are the API's: pixels of the frame, from the centre of the
// top-left pixel.
import { h, icon } from './dom.js';
import { FrameTimes } from './frame-times.js';
import { frameImageUrl, videoUrl } from './movies-api.js';

// Marker colours, picked in turn; distinct on light and dark frames alike.
export const MARKER_COLOURS = ['#ff3b6b', '#1fb6ff', '#ffc400', '#2fd37d', '#b26bff',
  '#ff8a1f', '#00e0d0', '#ff6bd6'];

const IMAGES_KEPT = 96; // decoded frame images held by the page
const PRELOAD_AHEAD = 4; // frames fetched ahead of the current one (behind, stepping back)
const ZOOMS = [1, 1.5, 2, 3, 4, 6, 8];
const HIT_RADIUS_PX = 14; // how near a marker a press must be to grab it (CSS px)
const DRAG_SLOP_PX = 3; // a press that moves less is a click

export function colourOf(index) {
  return MARKER_COLOURS[index % MARKER_COLOURS.length];
}

export function formatTime(seconds) {
  const whole = Math.floor(seconds);
  const m = Math.floor(whole / 60);
  const s = seconds - m * 60;
  return `${m}:${s.toFixed(3).padStart(6, '0')}`;
}

// content: an icon's name (dom.js) or a short text ("+10").
function iconButton(label, content, onClick, extra = {}) {
  const isIcon = /^[a-z]+$/.test(content);
  return h('button', {
    type: 'button', class: 'button button-small viewer-button', 'aria-label': label, title: label,
    on: { click: onClick }, ...extra,
  }, isIcon ? icon(content, 18) : content);
}

export class FrameViewer {
  // movie: {id, width, height, frame_count, fps}. onFrame(n) after the frame
  // changes; onPlace(x, y, frame) for a click on the frame; onMove(id, x, y,
  // frame) when a drag ends; onSelect(id) for a press on a marker.
  constructor(movie, { onFrame = () => {}, onPlace = () => {}, onMove = () => {},
    onSelect = () => {} } = {}) {
    this.movie = movie;
    // Frames at the movie's rate until its own times come (setTimes).
    this.times = new FrameTimes(movie.frame_count, null, movie.fps);
    this.handlers = { onFrame, onPlace, onMove, onSelect };
    this.frame = 0;
    this.zoom = 1;
    this.images = new Map(); // frame -> {image, ready: Promise}
    this.markers = [];
    this.selectedId = null;
    this.editable = false;
    this.tracks = []; // [{id, label, colour, points: Map frame -> row}]
    this.trim = null;
    this.playing = false;
    this.playTimer = null;
    this.drag = null;
    this.destroyed = false;
    this.build();
    this.showFrame(0);
  }

  // ---- what the page tells it ----

  setMarkers(markers, { editable, selectedId }) {
    this.markers = markers;
    this.editable = editable;
    this.selectedId = selectedId;
    this.canvas.dataset.editable = String(editable);
    this.canvas.setAttribute('aria-label', this.canvasLabel());
    this.draw();
  }

  // rows: the latest trace's frame rows; markers: the movie's, for colours.
  setTracks(rows, markers) {
    const byMarker = new Map();
    markers.forEach((m, i) => byMarker.set(m.id, { id: m.id, label: m.label, colour: colourOf(i),
      points: new Map() }));
    for (const row of rows) {
      let track = byMarker.get(row.marker_id);
      if (!track) {
        track = { id: row.marker_id, label: row.label, colour: colourOf(byMarker.size),
          points: new Map() };
        byMarker.set(row.marker_id, track);
      }
      track.points.set(row.frame, row);
    }
    this.tracks = [...byMarker.values()].filter((t) => t.points.size > 0);
    this.draw();
  }

  setTrim(trim) {
    this.trim = trim;
  }

  // ---- the element ----

  build() {
    const { width, height } = this.movie;
    this.canvas = h('canvas', {
      class: 'viewer-canvas', role: 'img', tabindex: '0', width, height,
      'aria-label': this.canvasLabel(),
    });
    this.loading = h('div', { class: 'viewer-loading', hidden: true, 'aria-hidden': 'true' },
      h('span', { class: 'spinner' }));
    this.stage = h('div', { class: 'viewer-stage' }, this.canvas, this.loading);
    this.slider = h('input', {
      type: 'range', class: 'viewer-slider', min: '0', max: String(this.movie.frame_count - 1),
      step: '1', value: '0', 'aria-label': 'Frame',
      on: { input: () => this.showFrame(Number(this.slider.value)) },
    });
    this.position = h('p', { class: 'viewer-position', 'aria-live': 'off' });
    this.playButton = iconButton('Play', 'play', () => this.togglePlay(), { 'data-action': 'play' });
    this.zoomText = h('span', { class: 'viewer-zoom-text', text: 'Fit' });
    const transport = h('div', { class: 'viewer-transport', role: 'group',
      'aria-label': 'Frames' },
    iconButton('First frame', 'first', () => this.showFrame(0)),
    iconButton('Back 10 frames', '−10', () => this.step(-10)),
    iconButton('Previous frame', 'previous', () => this.step(-1), { 'data-action': 'previous' }),
    this.playButton,
    iconButton('Next frame', 'next', () => this.step(1), { 'data-action': 'next' }),
    iconButton('Forward 10 frames', '+10', () => this.step(10)),
    iconButton('Last frame', 'last', () => this.showFrame(this.movie.frame_count - 1)));
    const zoom = h('div', { class: 'viewer-zoom', role: 'group', 'aria-label': 'Zoom' },
      iconButton('Zoom out', '−', () => this.zoomBy(-1)),
      this.zoomText,
      iconButton('Zoom in', '+', () => this.zoomBy(1)));
    this.element = h('div', { class: 'viewer' },
      this.stage,
      h('div', { class: 'viewer-bar' }, transport, zoom),
      h('div', { class: 'viewer-scrub' }, this.slider, this.position));

    this.canvas.addEventListener('pointerdown', (e) => this.pointerDown(e));
    this.canvas.addEventListener('pointermove', (e) => this.pointerMove(e));
    this.canvas.addEventListener('pointerup', (e) => this.pointerUp(e));
    this.canvas.addEventListener('pointercancel', () => this.cancelDrag());
    this.resizeObserver = new ResizeObserver(() => this.layout());
    this.resizeObserver.observe(this.stage);
  }

  canvasLabel() {
    const { frame_count: count } = this.movie;
    const markers = this.markers.length;
    const edit = this.editable ? ' Click to place a marker on this frame; drag one to move it.'
      : '';
    return `Frame ${this.frame} of 0 to ${count - 1}, ${markers} marker${markers === 1 ? '' : 's'}.` +
      edit;
  }

  // The canvas's size on screen: the frame fitted to the stage (and to most
  // of the window's height), times the zoom; its backing store at the
  // screen's density, so that lines stay sharp.
  layout() {
    const { width, height } = this.movie;
    const stageWidth = this.stage.clientWidth || width;
    const maxHeight = Math.max(200, window.innerHeight * 0.62);
    const fit = Math.min(stageWidth / width, maxHeight / height);
    const cssWidth = Math.max(1, Math.floor(width * fit * this.zoom));
    const cssHeight = Math.max(1, Math.floor(height * fit * this.zoom));
    this.canvas.style.width = `${cssWidth}px`;
    this.canvas.style.height = `${cssHeight}px`;
    this.stage.classList.toggle('is-zoomed', this.zoom > 1);
    const density = Math.min(window.devicePixelRatio || 1, 3);
    const backingWidth = Math.min(8192, Math.round(cssWidth * density));
    const backingHeight = Math.min(8192, Math.round(cssHeight * density));
    if (this.canvas.width !== backingWidth || this.canvas.height !== backingHeight) {
      this.canvas.width = backingWidth;
      this.canvas.height = backingHeight;
    }
    this.draw();
  }

  zoomBy(direction) {
    const index = ZOOMS.indexOf(this.zoom);
    const next = ZOOMS[Math.min(ZOOMS.length - 1, Math.max(0, index + direction))];
    if (next === this.zoom) return;
    // Keep the centre of what is seen in the centre.
    const centreX = (this.stage.scrollLeft + this.stage.clientWidth / 2) / this.canvas.clientWidth;
    const centreY = (this.stage.scrollTop + this.stage.clientHeight / 2) /
      this.canvas.clientHeight;
    this.zoom = next;
    this.zoomText.textContent = next === 1 ? 'Fit' : `${next}×`;
    this.layout();
    this.stage.scrollLeft = centreX * this.canvas.clientWidth - this.stage.clientWidth / 2;
    this.stage.scrollTop = centreY * this.canvas.clientHeight - this.stage.clientHeight / 2;
  }

  // ---- frames ----

  image(n) {
    let entry = this.images.get(n);
    if (entry) {
      this.images.delete(n); // most recently used last
      this.images.set(n, entry);
      return entry;
    }
    const image = new Image();
    image.decoding = 'async';
    entry = {
      image,
      ready: new Promise((resolve) => {
        image.onload = () => resolve(true);
        image.onerror = () => resolve(false);
      }),
    };
    image.src = frameImageUrl(this.movie.id, n);
    this.images.set(n, entry);
    while (this.images.size > IMAGES_KEPT) this.images.delete(this.images.keys().next().value);
    return entry;
  }

  // Each frame's own time (frame-times.js), for the position shown and
  // the pace of playing.
  setTimes(times) {
    this.times = times;
    this.showPosition();
  }

  showPosition() {
    this.position.textContent = `Frame ${this.frame} / ${this.movie.frame_count - 1} · `
      + `${formatTime(this.times.seconds(this.frame))}`;
  }

  step(delta) {
    this.showFrame(this.frame + delta);
  }

  // Shows frame n (clamped): the last frame stays on screen until n's image
  // has come, so stepping never flashes. Resolves once it is drawn.
  showFrame(n) {
    const frame = Math.max(0, Math.min(this.movie.frame_count - 1, Math.round(n)));
    const changed = frame !== this.frame;
    // Which way the frames go, for the ones fetched before they are asked.
    if (changed) this.direction = frame < this.frame ? -1 : 1;
    this.frame = frame;
    if (this.playing && this.video && !this.video.paused) {
      // Playing in the browser: it goes on from there.
      this.video.currentTime = this.times.seconds(frame) + 1e-4;
    }
    if (String(frame) !== this.slider.value) this.slider.value = String(frame);
    this.showPosition();
    this.canvas.setAttribute('aria-label', this.canvasLabel());
    if (changed) this.handlers.onFrame(frame);
    return this.fetchCurrent();
  }

  // One image asked for at a time, always the current frame's: dragging
  // the slider across a long movie asks for the frames it stops on, not
  // for every frame it passes (each may be a decode on the server).
  fetchCurrent() {
    if (!this.fetching) {
      this.fetching = (async () => {
        for (;;) {
          const frame = this.frame;
          const entry = this.image(frame);
          this.loading.hidden = entry.image.complete;
          const ok = await entry.ready;
          if (this.destroyed) return false;
          if (this.frame !== frame) continue;
          this.loading.hidden = true;
          this.shown = ok ? entry.image : null;
          this.draw();
          // Which frame is on screen (tests and tools wait for it).
          this.canvas.dataset.shownFrame = ok ? String(frame) : '';
          const step = this.direction || 1;
          for (let i = 1; i <= PRELOAD_AHEAD; ++i) {
            const next = frame + step * i;
            if (next < 0 || next >= this.movie.frame_count) break;
            this.image(next);
          }
          return ok;
        }
      })().finally(() => {
        this.fetching = null;
      });
    }
    return this.fetching;
  }

  // ---- playing ----

  togglePlay() {
    if (this.playing) this.pause();
    else this.play();
  }

  // Playing is the browser's own where it plays the movie's codec: the
  // movie's file (or, on S3, a presigned URL of it) in a <video>, each frame
  // it presents drawn here with the markers and tracks of the frame its
  // time says (requestVideoFrameCallback's mediaTime, frame-times.js): the
  // server sends the file and decodes nothing. Where the browser cannot
  // play it (HEVC, AVI in most browsers), the server's frame images, one
  // after another (nextTick). Paused, the frame shown is the server's exact
  // image again.
  play() {
    if (this.playing) return;
    if (this.frame >= this.movie.frame_count - 1) this.showFrame(0);
    this.playing = true;
    this.playButton.replaceChildren(icon('pause', 18));
    this.playButton.setAttribute('aria-label', 'Pause');
    this.playButton.title = 'Pause';
    this.playNatively().then((native) => {
      this.element.dataset.playing = native ? 'browser' : 'server';
      if (!native && this.playing) this.nextTick(performance.now());
    });
  }

  // Resolves whether the browser plays the movie (false: it cannot).
  async playNatively() {
    if (this.nativeFailed || typeof HTMLVideoElement.prototype.requestVideoFrameCallback
      !== 'function') return false;
    if (!this.video) {
      this.video = h('video', { class: 'viewer-video', muted: true, playsinline: true,
        preload: 'auto', 'aria-hidden': 'true' });
      this.video.muted = true;
      this.stage.append(this.video);
      this.video.src = videoUrl(this.movie.id);
    }
    const video = this.video;
    try {
      video.currentTime = this.times.seconds(this.frame) + 1e-4;
      await video.play();
    } catch {
      this.nativeFailed = true; // not a codec the browser plays, or no file
      video.removeAttribute('src');
      video.remove();
      this.video = null;
      return false;
    }
    if (!this.playing) {
      video.pause();
      return true;
    }
    const onFrame = (now, meta) => {
      if (!this.playing || this.video !== video) return;
      const frame = this.times.frameAt(meta.mediaTime + 1e-4);
      this.shown = video;
      if (frame !== this.frame) {
        this.frame = frame;
        this.slider.value = String(frame);
        this.showPosition();
        this.handlers.onFrame(frame);
      }
      this.draw();
      this.canvas.dataset.shownFrame = String(frame);
      video.requestVideoFrameCallback(onFrame);
    };
    video.requestVideoFrameCallback(onFrame);
    video.onended = () => this.pause();
    return true;
  }

  pause() {
    const wasNative = this.playing && this.video && !this.video.paused;
    this.playing = false;
    if (this.video) this.video.pause();
    if (wasNative) {
      // The exact frame, as the server decodes it, for placing markers (the
      // browser's stays on screen until it comes).
      this.fetchCurrent();
    }
    window.clearTimeout(this.playTimer);
    this.playButton.replaceChildren(icon('play', 18));
    this.playButton.setAttribute('aria-label', 'Play');
    this.playButton.title = 'Play';
  }

  // Each frame for as long as the movie shows it (its time to the next
  // frame's); a frame whose image is late holds the clock back rather than
  // being skipped, so every frame is seen.
  async nextTick(dueAt) {
    if (!this.playing || this.destroyed) return;
    const waitMs = Math.max(0, dueAt - performance.now());
    this.playTimer = window.setTimeout(async () => {
      if (!this.playing) return;
      if (this.frame >= this.movie.frame_count - 1) {
        this.pause();
        return;
      }
      await this.showFrame(this.frame + 1);
      const period = 1000 * (this.times.seconds(this.frame + 1) - this.times.seconds(this.frame));
      this.nextTick(Math.max(dueAt + period, performance.now() - period));
    }, waitMs);
  }

  // ---- drawing ----

  draw() {
    const ctx = this.canvas.getContext('2d');
    const { width } = this.movie;
    const scale = this.canvas.width / width; // backing px per frame px
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = '#111';
    ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
    if (this.shown) {
      // Zoomed in, the frame's own pixels show: that is what placing is about.
      ctx.imageSmoothingEnabled = scale < 2;
      ctx.drawImage(this.shown, 0, 0, this.canvas.width, this.canvas.height);
    }
    const density = this.canvas.width / Math.max(1, this.canvas.clientWidth || width);
    const at = (x, y) => [(x + 0.5) * scale, (y + 0.5) * scale];
    this.drawTracks(ctx, at, density);
    this.drawMarkers(ctx, at, density);
  }

  drawTracks(ctx, at, density) {
    for (const track of this.tracks) {
      const frames = [...track.points.keys()].sort((a, b) => a - b);
      ctx.lineWidth = 2 * density;
      ctx.strokeStyle = track.colour;
      ctx.globalAlpha = 0.85;
      ctx.beginPath();
      let drawing = false;
      for (const f of frames) {
        const row = track.points.get(f);
        if (row.status !== 'tracked') {
          drawing = false;
          continue;
        }
        const [x, y] = at(row.x, row.y);
        if (drawing) ctx.lineTo(x, y);
        else ctx.moveTo(x, y);
        drawing = true;
      }
      ctx.stroke();
      ctx.globalAlpha = 1;
      // Lost frames: a grey cross where the last match was.
      for (const f of frames) {
        const row = track.points.get(f);
        if (row.status === 'tracked') continue;
        const [x, y] = at(row.x, row.y);
        crossAt(ctx, x, y, 5 * density, 'rgba(200,200,200,0.9)', 2 * density);
      }
      // The current frame's point, or the nearest sampled one before it.
      const current = track.points.get(this.frame);
      if (current) {
        const [x, y] = at(current.x, current.y);
        if (current.status === 'tracked') {
          ring(ctx, x, y, 9 * density, track.colour, 3 * density);
          ctx.fillStyle = track.colour;
          ctx.beginPath();
          ctx.arc(x, y, 3 * density, 0, Math.PI * 2);
          ctx.fill();
        } else {
          crossAt(ctx, x, y, 9 * density, '#ffffff', 3 * density);
        }
      }
    }
  }

  drawMarkers(ctx, at, density) {
    // Once traced, the tracks say where things are; the markers are where
    // they started, still drawn (thinner) so that they can be edited.
    const traced = this.tracks.length > 0;
    this.markers.forEach((marker, index) => {
      const [x, y] = at(marker.x, marker.y);
      const here = marker.frame === this.frame;
      const selected = marker.id === this.selectedId;
      const colour = colourOf(index);
      ctx.save();
      ctx.globalAlpha = here ? 1 : 0.55;
      if (!here) ctx.setLineDash([4 * density, 3 * density]);
      const radius = (selected ? 11 : 8) * density;
      ring(ctx, x, y, radius, colour, (selected ? 3 : traced ? 1.5 : 2) * density);
      ctx.setLineDash([]);
      ctx.lineWidth = 1.5 * density;
      ctx.beginPath();
      ctx.moveTo(x - radius - 4 * density, y);
      ctx.lineTo(x - 3 * density, y);
      ctx.moveTo(x + 3 * density, y);
      ctx.lineTo(x + radius + 4 * density, y);
      ctx.moveTo(x, y - radius - 4 * density);
      ctx.lineTo(x, y - 3 * density);
      ctx.moveTo(x, y + 3 * density);
      ctx.lineTo(x, y + radius + 4 * density);
      ctx.stroke();
      const text = here ? marker.label : `${marker.label} (frame ${marker.frame})`;
      ctx.font = `${600} ${12 * density}px system-ui, sans-serif`;
      ctx.textBaseline = 'middle';
      const tx = x + radius + 6 * density;
      ctx.lineWidth = 3 * density;
      ctx.strokeStyle = 'rgba(0,0,0,0.75)';
      ctx.strokeText(text, tx, y - radius);
      ctx.fillStyle = '#ffffff';
      ctx.fillText(text, tx, y - radius);
      ctx.restore();
    });
  }

  // ---- placing and dragging ----

  // The frame pixel under a pointer event, within the frame.
  pointAt(event) {
    const rect = this.canvas.getBoundingClientRect();
    const { width, height } = this.movie;
    const x = ((event.clientX - rect.left) / rect.width) * width - 0.5;
    const y = ((event.clientY - rect.top) / rect.height) * height - 0.5;
    const round = (v, max) => Math.round(Math.max(0, Math.min(max, v)) * 10) / 10;
    return { x: round(x, width - 1), y: round(y, height - 1) };
  }

  markerNear(event) {
    const rect = this.canvas.getBoundingClientRect();
    const perPx = this.movie.width / rect.width; // frame px per CSS px
    const { x, y } = this.pointAt(event);
    let best = null;
    let bestDistance = HIT_RADIUS_PX * perPx;
    for (const marker of this.markers) {
      const distance = Math.hypot(marker.x - x, marker.y - y);
      if (distance <= bestDistance) {
        best = marker;
        bestDistance = distance;
      }
    }
    return best;
  }

  pointerDown(event) {
    if (event.button !== 0) return;
    const marker = this.markerNear(event);
    if (marker) this.handlers.onSelect(marker.id);
    if (!this.editable) return;
    this.canvas.setPointerCapture(event.pointerId);
    this.drag = { marker, startX: event.clientX, startY: event.clientY, moved: false };
  }

  pointerMove(event) {
    if (!this.drag) {
      if (this.editable) this.canvas.dataset.hover = String(this.markerNear(event) !== null);
      return;
    }
    const { drag } = this;
    if (!drag.moved && Math.hypot(event.clientX - drag.startX, event.clientY - drag.startY) <
      DRAG_SLOP_PX) return;
    drag.moved = true;
    if (!drag.marker) return;
    const { x, y } = this.pointAt(event);
    drag.marker = { ...drag.marker, x, y, frame: this.frame };
    this.markers = this.markers.map((m) => (m.id === drag.marker.id ? drag.marker : m));
    this.draw();
  }

  pointerUp(event) {
    const { drag } = this;
    this.drag = null;
    if (!drag || !this.editable) return;
    if (drag.marker && drag.moved) {
      const { x, y } = this.pointAt(event);
      this.handlers.onMove(drag.marker.id, x, y, this.frame);
    } else if (!drag.marker) {
      const { x, y } = this.pointAt(event);
      this.handlers.onPlace(x, y, this.frame);
    }
  }

  cancelDrag() {
    this.drag = null;
  }

  destroy() {
    this.destroyed = true;
    this.pause();
    if (this.video) {
      this.video.removeAttribute('src');
      this.video.load();
      this.video.remove();
    }
    this.resizeObserver.disconnect();
    for (const { image } of this.images.values()) image.src = '';
    this.images.clear();
  }
}

function ring(ctx, x, y, radius, colour, width) {
  ctx.lineWidth = width + 2;
  ctx.strokeStyle = 'rgba(0,0,0,0.6)';
  ctx.beginPath();
  ctx.arc(x, y, radius, 0, Math.PI * 2);
  ctx.stroke();
  ctx.lineWidth = width;
  ctx.strokeStyle = colour;
  ctx.beginPath();
  ctx.arc(x, y, radius, 0, Math.PI * 2);
  ctx.stroke();
}

function crossAt(ctx, x, y, size, colour, width) {
  ctx.lineWidth = width;
  ctx.strokeStyle = colour;
  ctx.beginPath();
  ctx.moveTo(x - size, y - size);
  ctx.lineTo(x + size, y + size);
  ctx.moveTo(x + size, y - size);
  ctx.lineTo(x - size, y + size);
  ctx.stroke();
}
