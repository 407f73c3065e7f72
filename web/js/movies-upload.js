// The movie list's uploads: an "Upload a movie" button and files dropped
// anywhere on the page. Files go up one at a time, in the order they were
// chosen (a queue of at most UPLOADS_MAX): one upload at a time keeps the
// bar honest and the server's disk and probe queue calm. Each shows a real
// progress bar (bytes sent, from XMLHttpRequest) and can be cancelled; once
// the server has the file it checks it is a video, and the movie it created
// (`processing`) is handed to the list. A refusal stays on screen, saying
// what to do, until it is dismissed.
import { ApiError } from './api.js';
import { h, icon } from './dom.js';
import { formatBytes, formatProgress, limitFromMessage, movieName } from './movies-format.js';
import { uploadMovie } from './movies-api.js';

// Files waiting, uploading or refused and not yet dismissed.
const UPLOADS_MAX = 20;

const FORMATS = 'MP4, MOV, AVI, MKV or WebM';

// What a person reads when an upload is refused.
function uploadError(error, file) {
  if (error.status === 413) {
    const limit = limitFromMessage(error.message);
    const why = limit === null ? error.message.replace(/\.$/, '') : `at most ${formatBytes(limit)}`;
    return `This file (${formatBytes(file.size)}) is larger than the server accepts (${why}).`;
  }
  if (error.status === 415) {
    return `This file is not a video the server can read. Try ${FORMATS}.`;
  }
  return error.message;
}

function hasFiles(event) {
  return Boolean(event.dataTransfer) && [...event.dataTransfer.types].includes('Files');
}

export class Uploader {
  // onUploaded(movie): the movie the server created. announce(text): says
  // something to screen readers politely. goToSignIn(): the session ended.
  constructor({ onUploaded, announce, goToSignIn }) {
    this.onUploaded = onUploaded;
    this.announce = announce;
    this.goToSignIn = goToSignIn;
    this.items = []; // {file, name, state: 'waiting'|'sending'|'failed', element, ...}
    this.current = null;
    this.stopped = false;
    this.dragDepth = 0;
    this.listeners = {
      dragenter: (event) => this.dragEnter(event),
      dragover: (event) => this.dragOver(event),
      dragleave: (event) => this.dragLeave(event),
      drop: (event) => this.drop(event),
    };
    this.build();
  }

  build() {
    this.input = h('input', {
      type: 'file', id: 'movie-file', accept: 'video/*', multiple: true, hidden: true,
      'aria-label': 'Movie files to upload',
      on: { change: () => this.chosen() },
    });
    this.button = h('button', {
      type: 'button', class: 'button button-primary', id: 'upload-button',
      'aria-describedby': 'upload-hint',
      on: { click: () => this.input.click() },
    }, 'Upload a movie');
    this.refusal = h('div', { class: 'alert', role: 'alert', id: 'upload-refused', hidden: true });
    this.list = h('ul', { class: 'uploads', id: 'uploads', 'aria-label': 'Uploads' });
    this.overlay = h('div', { class: 'drop-overlay', 'aria-hidden': 'true', hidden: true },
      h('p', {}, icon('movie', 28), 'Drop to upload'));
    this.zone = h('div', { class: 'drop-zone', id: 'drop-zone' },
      h('div', { class: 'drop-zone-icon' }, icon('movie', 24)),
      h('div', { class: 'drop-zone-text' },
        h('p', { class: 'drop-zone-title', text: 'Drag video files onto this page, or' }),
        h('p', { class: 'field-hint', id: 'upload-hint',
          text: `${FORMATS}. Several files go up one after another.` })),
      this.button,
      this.input);
    this.element = h('section', { class: 'movie-uploads', 'aria-label': 'Upload movies' },
      this.zone, this.refusal, this.list, this.overlay);
  }

  // Whole-page drag and drop: files dropped anywhere on the page are
  // uploaded (and never opened by the browser in place of it).
  attach() {
    for (const [type, listener] of Object.entries(this.listeners)) {
      document.addEventListener(type, listener);
    }
  }

  // The page is left: no new upload starts, and the waiting ones are
  // forgotten. One under way is let finish (the movie is then in the list
  // when the person comes back) rather than thrown away by a click on a
  // link; a page unloaded with one under way asks first (beforeunload).
  stop() {
    this.stopped = true;
    for (const [type, listener] of Object.entries(this.listeners)) {
      document.removeEventListener(type, listener);
    }
    this.items = this.items.filter((item) => item === this.current);
  }

  dragEnter(event) {
    if (!hasFiles(event)) return;
    this.dragDepth += 1;
    this.setDragging(true);
  }

  dragOver(event) {
    if (!hasFiles(event)) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'copy';
  }

  dragLeave(event) {
    if (!hasFiles(event)) return;
    this.dragDepth = Math.max(0, this.dragDepth - 1);
    if (this.dragDepth === 0) this.setDragging(false);
  }

  drop(event) {
    if (!hasFiles(event)) return;
    event.preventDefault();
    this.dragDepth = 0;
    this.setDragging(false);
    this.add([...event.dataTransfer.files]);
  }

  setDragging(dragging) {
    this.overlay.hidden = !dragging;
    this.zone.classList.toggle('is-dragging', dragging);
  }

  chosen() {
    const files = [...this.input.files];
    // Cleared, so that choosing the same file again is a change too.
    this.input.value = '';
    this.add(files);
  }

  add(files) {
    this.refusal.hidden = true;
    const room = UPLOADS_MAX - this.items.length;
    if (files.length > room) {
      this.refusal.replaceChildren(icon('alert', 18), h('span', {
        text: `At most ${UPLOADS_MAX} uploads can wait at once; ` +
          `${room === 0 ? 'none was' : `only the first ${room} were`} added. ` +
          'Add the rest once these are done.',
      }));
      this.refusal.hidden = false;
    }
    for (const file of files.slice(0, Math.max(0, room))) {
      const item = this.item(file);
      this.items.push(item);
      this.list.append(item.element);
    }
    this.next();
  }

  item(file) {
    const item = { file, name: movieName(file.name), state: 'waiting' };
    item.text = h('span', { class: 'upload-text', text: 'Waiting' });
    item.fill = h('span', { class: 'upload-bar-fill' });
    item.bar = h('div', {
      class: 'upload-bar', role: 'progressbar', 'aria-label': `Uploading ${file.name}`,
      'aria-valuemin': '0', 'aria-valuemax': '100', 'aria-valuenow': '0',
    }, item.fill);
    item.error = h('p', { class: 'upload-error', role: 'alert', hidden: true });
    item.action = h('button', {
      type: 'button', class: 'button button-small upload-cancel',
      'aria-label': `Cancel uploading ${file.name}`,
      on: { click: () => this.cancel(item) },
    }, 'Cancel');
    item.element = h('li', { class: 'upload', 'data-state': 'waiting' },
      h('div', { class: 'upload-head' },
        h('span', { class: 'upload-name', text: file.name, title: file.name }),
        item.text,
        item.action),
      item.bar,
      item.error);
    return item;
  }

  async next() {
    if (this.current || this.stopped) return;
    const item = this.items.find((i) => i.state === 'waiting');
    if (!item) return;
    this.current = item;
    this.setState(item, 'sending');
    this.progress(item, 0, item.file.size);
    window.addEventListener('beforeunload', preventUnload);
    const upload = uploadMovie(item.file, item.name,
      (sent, total) => this.progress(item, sent, total));
    item.abort = upload.abort;
    try {
      const movie = await upload.done;
      this.forget(item);
      this.announce(`${item.file.name} is uploaded; it is being processed.`);
      this.onUploaded(movie);
    } catch (error) {
      this.failed(item, error);
    } finally {
      window.removeEventListener('beforeunload', preventUnload);
      this.current = null;
    }
    this.next();
  }

  progress(item, sent, total) {
    const share = total > 0 ? Math.min(1, sent / total) : 1;
    // CSSOM, not a style attribute: the page's CSP allows only its stylesheet.
    item.fill.style.width = `${(share * 100).toFixed(1)}%`;
    const percent = String(Math.round(share * 100));
    const done = total > 0 && sent >= total;
    // Once every byte is sent, the server checks that it is a video.
    const text = done ? 'Checking the video…' : formatProgress(sent, total);
    if (item.text.textContent !== text) item.text.textContent = text;
    item.bar.setAttribute('aria-valuenow', percent);
    item.bar.setAttribute('aria-valuetext', text);
    item.element.dataset.checking = String(done);
  }

  failed(item, error) {
    if (error instanceof ApiError && error.status === 401) {
      this.goToSignIn();
      return;
    }
    if (error instanceof ApiError && error.code === 'aborted') {
      this.forget(item);
      this.announce(`The upload of ${item.file.name} was cancelled.`);
      return;
    }
    if (!(error instanceof ApiError)) console.error(error);
    this.setState(item, 'failed');
    item.text.textContent = 'Not uploaded';
    item.error.replaceChildren(icon('alert', 16),
      h('span', { text: uploadError(error, item.file) }));
    item.error.hidden = false;
    item.action.textContent = 'Dismiss';
    item.action.setAttribute('aria-label', `Dismiss the error for ${item.file.name}`);
  }

  setState(item, state) {
    item.state = state;
    item.element.dataset.state = state;
  }

  // Cancel (waiting or sending) or Dismiss (failed).
  cancel(item) {
    if (item.state === 'sending') {
      item.abort();
      return; // failed() forgets it once the abort is reported
    }
    this.forget(item);
  }

  // Takes `item` off the list; focus, if it was on the item, goes to the
  // next item's button, or to the upload button.
  forget(item) {
    const index = this.items.indexOf(item);
    if (index >= 0) this.items.splice(index, 1);
    const hadFocus = item.element.contains(document.activeElement);
    item.element.remove();
    if (!hadFocus) return;
    const next = this.items[Math.min(index, this.items.length - 1)];
    (next ? next.action : this.button).focus();
  }
}

function preventUnload(event) {
  event.preventDefault();
  // Older browsers show the dialog only when returnValue is set.
  event.returnValue = '';
}
