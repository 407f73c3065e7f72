// How the movie list says sizes, lengths, times and names. Pure functions;
// no DOM.

const decimal1 = new Intl.NumberFormat('en', {
  minimumFractionDigits: 1, maximumFractionDigits: 1,
});
const whole = new Intl.NumberFormat('en');

// Decimal units, as file managers show them: 999 -> "999 bytes",
// 48_000_000 -> "48.0 MB".
const BYTE_UNITS = [['GB', 1e9], ['MB', 1e6], ['kB', 1e3]];

function byteUnit(bytes) {
  return BYTE_UNITS.find(([, size]) => bytes >= size) || null;
}

export function formatBytes(bytes) {
  const unit = byteUnit(bytes);
  if (!unit) return `${whole.format(bytes)} bytes`;
  return `${decimal1.format(bytes / unit[1])} ${unit[0]}`;
}

// An upload's progress in the total's unit: "12.3 of 48.0 MB".
export function formatProgress(sent, total) {
  const unit = byteUnit(total) || ['kB', 1e3];
  return `${decimal1.format(sent / unit[1])} of ${decimal1.format(total / unit[1])} ${unit[0]}`;
}

// A movie's length as m:ss, or h:mm:ss from an hour: its duration, or
// (a movie probed before durations were kept) its frames at its rate:
// 750 at 25 -> "0:30".
export function formatLength(movie) {
  const seconds = Math.round(movie.duration_s ?? movie.frame_count / movie.fps);
  const s = String(seconds % 60).padStart(2, '0');
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}:${s}`;
  return `${Math.floor(minutes / 60)}:${String(minutes % 60).padStart(2, '0')}:${s}`;
}

// "25 fps", or "16.8 fps, variable" for a movie whose rate changes.
export function formatRate(movie) {
  const fps = `${Number(movie.fps.toFixed(movie.frame_rate_varies ? 1 : 3))} fps`;
  return movie.frame_rate_varies ? `${fps}, variable` : fps;
}

export function formatFrames(n) {
  return `${whole.format(n)} frame${n === 1 ? '' : 's'}`;
}

// A wall time (Unix ms) as the local time of day ("14:03"), with the date
// before it when it is not today ("3 Dec 14:03"): a lock taken yesterday
// must not read as one taken this afternoon.
export function formatSince(ms, nowMs = Date.now()) {
  const at = new Date(ms);
  const time = at.toLocaleTimeString([], { hour: 'numeric', minute: '2-digit' });
  if (at.toDateString() === new Date(nowMs).toDateString()) return time;
  return `${at.toLocaleDateString([], { day: 'numeric', month: 'short' })} ${time}`;
}

// The API's limit on a movie's name (docs/server.md "Uploads").
const NAME_BYTES_MAX = 256;

// The name a file is uploaded under: its name without the extension
// ("run 3.mp4" -> "run 3"), control characters dropped (the API refuses
// them), cut to the API's 256 bytes of UTF-8 on a character's boundary.
export function movieName(fileName) {
  const clean = fileName.replace(/[\u0000-\u001f\u007f]/g, '').trim();
  const dot = clean.lastIndexOf('.');
  let name = dot > 0 ? clean.slice(0, dot).trim() : clean;
  if (name === '') name = 'movie';
  const encoder = new TextEncoder();
  while (encoder.encode(name).length > NAME_BYTES_MAX) name = [...name].slice(0, -1).join('');
  return name;
}

// The number of bytes in a 413's message ("... accepts (1048576 bytes)"),
// or null: the server's limit, said in the page's units.
export function limitFromMessage(message) {
  const match = /\((\d+) bytes\)/.exec(message);
  return match ? Number(match[1]) : null;
}
