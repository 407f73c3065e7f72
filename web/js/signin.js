// The sign-in page (/signin?next=PATH). Sends the name and password to
// POST /api/session; on success goes to `next` (a path on this site only),
// else says what went wrong, and for too many attempts, when to try again.
import { ApiError, getMe, signIn } from './api.js';
import { h, icon, setBusy } from './dom.js';
import { safeNextPath } from './paths.js';

const form = document.getElementById('signin-form');
const nameInput = document.getElementById('name');
const passwordInput = document.getElementById('password');
const errorBox = document.getElementById('signin-error');
const submit = document.getElementById('signin-submit');
const submitLabel = document.getElementById('signin-label');
const next = safeNextPath(new URLSearchParams(window.location.search).get('next'));

// Shows `text` in the alert above the fields and focuses `field` (marked
// invalid unless `invalid` is false).
function showError(text, field, { invalid = true } = {}) {
  // Replacing the content makes screen readers announce it again, even when
  // the same message comes twice in a row.
  errorBox.replaceChildren(icon('alert', 18), h('span', { text }));
  errorBox.hidden = false;
  if (!field) return;
  if (invalid) field.setAttribute('aria-invalid', 'true');
  field.focus();
}

function clearError() {
  errorBox.hidden = true;
  errorBox.replaceChildren();
  nameInput.removeAttribute('aria-invalid');
  passwordInput.removeAttribute('aria-invalid');
}

function setSubmitting(busy) {
  setBusy(submit, busy);
  submitLabel.textContent = busy ? 'Signing in…' : 'Sign in';
  nameInput.readOnly = busy;
  passwordInput.readOnly = busy;
  form.setAttribute('aria-busy', String(busy));
}

function waitText(seconds) {
  if (seconds < 60) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minute${minutes === 1 ? '' : 's'}`;
}

function tooManyAttempts(seconds) {
  if (seconds == null) {
    showError('Too many failed sign-in attempts. Wait a minute, then try again.', passwordInput, {
      invalid: false,
    });
    return;
  }
  const clock = { hour: '2-digit', minute: '2-digit' };
  if (seconds < 60) clock.second = '2-digit';
  const at = new Date(Date.now() + seconds * 1000).toLocaleTimeString([], clock);
  showError(`Too many failed sign-in attempts. Try again in ${waitText(seconds)}, at ${at}.`,
    passwordInput, { invalid: false });
  // The button stays off until then; the message says why.
  submit.disabled = true;
  window.setTimeout(() => {
    submit.disabled = false;
  }, seconds * 1000);
}

function signInFailed(error) {
  if (error instanceof ApiError && error.status === 401) {
    passwordInput.value = '';
    // Which of the two was wrong is not known (and not told), so neither is
    // marked.
    showError('The user name or password is not right. Check both and try again.', passwordInput, {
      invalid: false,
    });
  } else if (error instanceof ApiError && error.status === 429) {
    tooManyAttempts(error.retryAfterSeconds);
  } else {
    showError(error.message || 'Signing in failed. Try again.', null);
  }
}

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  if (submit.disabled) return;
  // User names are lower case; phones like to capitalise the first letter.
  const name = nameInput.value.trim().toLowerCase();
  const password = passwordInput.value;
  clearError();
  if (!name) return showError('Enter your user name.', nameInput);
  if (!password) return showError('Enter your password.', passwordInput);
  setSubmitting(true);
  try {
    await signIn(name, password);
  } catch (error) {
    setSubmitting(false);
    signInFailed(error);
    return;
  }
  // Stays busy until the next page replaces this one.
  window.location.replace(next);
});

// Someone who already has a session goes straight on.
getMe().then(() => window.location.replace(next), () => {});
