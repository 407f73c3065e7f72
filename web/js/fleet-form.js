// The Fleet page's "Add connection" form, for admins. It checks only that
// the required fields are filled; everything else is the server's to judge,
// and its message is shown beside the field it names ("url: ..." goes under
// the URL).
import { addConnection, ApiError, asSentence } from './api.js';
import { h, icon, setBusy } from './dom.js';

// The API's field names and the inputs that hold them.
const FIELDS = [
  {
    name: 'id',
    label: 'ID',
    hint: 'Letters, digits, “.”, “_”, “~” and “-”, up to 128.',
    placeholder: 'feed-1',
  },
  {
    name: 'url',
    label: 'URL',
    hint: 'ws:// or wss://. {next_seq} and {last_seq} are replaced when a worker connects, ' +
      'so that it resumes where the last one stopped.',
    placeholder: 'wss://feed.example.com/stream?from={next_seq}',
    inputmode: 'url',
  },
  {
    name: 'seq_field',
    label: 'Sequence field',
    hint: 'Where each message carries its sequence number: a dotted path such as data.seq. ' +
      'Empty for “seq”.',
    placeholder: 'seq',
  },
];

function fieldInput(field) {
  const id = `conn-${field.name.replace('_', '-')}`;
  const input = h('input', {
    class: 'input',
    id,
    name: field.name,
    type: 'text',
    placeholder: field.placeholder,
    inputmode: field.inputmode,
    autocomplete: 'off',
    autocapitalize: 'none',
    autocorrect: 'off',
    spellcheck: 'false',
    'aria-describedby': `${id}-hint ${id}-error`,
  });
  const error = h('p', { class: 'field-error', id: `${id}-error`, hidden: true });
  const element = h('div', { class: `field field-${field.name}` },
    h('label', { for: id, text: field.label }),
    input,
    h('p', { class: 'field-hint', id: `${id}-hint`, text: field.hint }),
    error);
  return { ...field, input, error, element };
}

// Builds the form. onAdded(connection) is called with the connection the
// server added; onCancel() when the admin closes the form.
export function connectionForm({ onAdded, onCancel }) {
  const fields = FIELDS.map(fieldInput);
  const byName = new Map(fields.map((f) => [f.name, f]));
  const stopped = h('input', { type: 'checkbox', id: 'conn-stopped', name: 'stopped' });
  const alert = h('div', { class: 'alert', role: 'alert', hidden: true });
  const submit = h('button', { type: 'submit', class: 'button button-primary', id: 'conn-submit' },
    h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Add connection');
  const cancel = h('button', { type: 'button', class: 'button', text: 'Cancel' });

  const form = h('form', {
    class: 'panel conn-form',
    id: 'add-connection',
    novalidate: true,
    'aria-labelledby': 'add-connection-title',
  },
  h('h3', { id: 'add-connection-title', text: 'Add a connection' }),
  alert,
  h('div', { class: 'form-grid' }, fields.map((f) => f.element)),
  h('div', { class: 'check' },
    stopped,
    h('label', { for: 'conn-stopped' }, 'Add it stopped',
      h('span', { class: 'field-hint', text: ' — no worker takes it until it is started.' }))),
  h('div', { class: 'form-actions' }, submit, cancel));

  function clearErrors() {
    alert.hidden = true;
    alert.replaceChildren();
    for (const f of fields) {
      f.error.hidden = true;
      f.error.textContent = '';
      f.input.removeAttribute('aria-invalid');
    }
  }

  function showFieldError(name, text) {
    const f = byName.get(name);
    f.error.replaceChildren(icon('alert', 16), h('span', { text }));
    f.error.hidden = false;
    f.input.setAttribute('aria-invalid', 'true');
    f.input.focus();
  }

  function showError(text) {
    alert.replaceChildren(icon('alert', 18), h('span', { text }));
    alert.hidden = false;
  }

  // The server names the field first ("url: WebSocket URL must ..."); the
  // ApiError's message has been made a sentence ("Url: ...").
  function failed(error) {
    if (error instanceof ApiError && error.status === 400) {
      const match = /^(id|url|seq_field): (.*)$/is.exec(error.message);
      if (match) return showFieldError(match[1].toLowerCase(), asSentence(match[2]));
    }
    if (error instanceof ApiError && error.status === 409) {
      return showFieldError('id', error.message);
    }
    return showError(error.message);
  }

  function reset() {
    form.reset();
    clearErrors();
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (submit.disabled) return;
    clearErrors();
    const value = (name) => byName.get(name).input.value.trim();
    if (!value('id')) return showFieldError('id', 'Enter an ID for the connection.');
    if (!value('url')) return showFieldError('url', 'Enter the upstream URL.');
    const body = { id: value('id'), url: value('url'), stopped: stopped.checked };
    if (value('seq_field')) body.seq_field = value('seq_field');
    setBusy(submit, true);
    try {
      const connection = await addConnection(body);
      reset();
      onAdded(connection);
    } catch (error) {
      failed(error);
    } finally {
      setBusy(submit, false);
    }
  });
  cancel.addEventListener('click', () => {
    reset();
    onCancel();
  });

  return {
    element: form,
    focus: () => byName.get('id').input.focus(),
    reset,
  };
}
