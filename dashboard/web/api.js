// The REST API client: the bearer token, JSON in and out, errors as ApiError with the
// API's own message.

// The token lives in sessionStorage only: it goes with the tab, never into
// localStorage or a cookie.
const KEY = 'temco.token';

export const token = {
  get() {
    try { return sessionStorage.getItem(KEY) || ''; } catch { return ''; }
  },
  set(t) {
    try { sessionStorage.setItem(KEY, t); } catch { /* storage off: the token lasts until the next 401 */ }
  },
  clear() {
    try { sessionStorage.removeItem(KEY); } catch { /* nothing kept */ }
  },
};

// ApiError is a failed call: status is the HTTP status (0 when the API did not answer) and
// message the API's {"message"} when it sent one.
export class ApiError extends Error {
  // retryAfter: the seconds a refusal for the caller's rate (429) says to wait, or 0.
  constructor(status, message, retryAfter = 0) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

// unauthorized is called on every 401 (after the token is dropped) with the API's message
// and whether a token had been sent: the app asks for a token.
let unauthorized = () => {};
export function onUnauthorized(fn) {
  unauthorized = fn;
}

// call sends one request to the API (path is absolute from the origin: /v2/...).
export async function call(method, path, opts) {
  return (await send(method, path, opts)).data;
}

// send is call answering the parsed body and the response's headers. A change names the
// client (X-Temco-Client): the API takes no bodiless POST or DELETE without it, which
// pages of other sites cannot send.
async function send(method, path, { body, signal } = {}) {
  const headers = { Accept: 'application/json' };
  const t = token.get();
  if (t) headers.Authorization = `Bearer ${t}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && method !== 'HEAD') headers['X-Temco-Client'] = 'dashboard';
  let res;
  try {
    res = await fetch(path, {
      method, headers, signal, cache: 'no-store',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, `The API did not answer: ${e.message}`);
  }
  const text = await res.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!res.ok) {
    const msg = typeof data?.message === 'string' && data.message ? data.message
      : `${res.status} ${res.statusText}`.trim();
    if (res.status === 401) {
      token.clear();
      unauthorized(msg, Boolean(t));
    }
    throw new ApiError(res.status, msg, Number(res.headers.get('Retry-After')) || 0);
  }
  return { data, headers: res.headers };
}

export const get = (path, opts) => call('GET', path, opts);

// getPage reads one page of a paged list: {data, next}, next the token of the page that
// follows ('' on the last), to pass back as continue=.
export async function getPage(path, opts) {
  const { data, headers } = await send('GET', path, opts);
  return { data, next: headers.get('X-Continue') || '' };
}
export const post = (path, body, opts) => call('POST', path, { ...opts, body });

const enc = encodeURIComponent;

// digPath is a DIG's API path (r: {p, ca, v, dig}).
export const digPath = (r) =>
  `/v2/projects/${enc(r.p)}/composite-apps/${enc(r.ca)}/${enc(r.v)}/deployment-intent-groups/${enc(r.dig)}`;

// apiPath builds an API path from raw segments: apiPath('projects', p) → '/v2/projects/<p>'.
export const apiPath = (...segs) => '/v2/' + segs.map(enc).join('/');
