// The API of the same origin, called with the key signed in with (kept in this tab's
// sessionStorage only). The console lives at <base>/console/ and the API at <base>/v1/, so
// <base> (e.g. "/prod/" on API Gateway, "/" locally) is this page's path without "console/...".
const KEY = "sundial.key";
export const base = location.pathname.replace(/console(\/.*)?$/, "");

// The key, or null when signed out ("" is a key: the local runtime's tenant "default").
export const signedInKey = () => sessionStorage.getItem(KEY);

// Why the last session ended (shown on the sign-in form); listeners re-render on a change.
const listeners = new Set();
export let signedOutBecause = "";
export const onSession = (listener) => (listeners.add(listener), () => listeners.delete(listener));
export function signIn(key) {
  sessionStorage.setItem(KEY, key);
  signedOutBecause = "";
  listeners.forEach((listener) => listener());
}
export function endSession(because) {
  sessionStorage.removeItem(KEY);
  signedOutBecause = because;
  listeners.forEach((listener) => listener());
}

export class ApiError extends Error {
  constructor(status, error) {
    super(error?.message || `HTTP ${status}`);
    this.status = status;
    this.code = error?.code || "";
    this.details = error?.details || [];
  }
}

// fetch a route: the answer's JSON (null for 204), or an ApiError. A 401 ends the session.
export async function api(method, path, body) {
  const headers = {};
  const key = signedInKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const answer = await fetch(base + path.replace(/^\//, ""), {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await answer.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (answer.status === 401) {
    endSession("Your API key was not accepted (unknown or revoked): sign in again.");
  }
  if (!answer.ok) throw new ApiError(answer.status, data?.error);
  return data;
}

// "?a=1&b=2" from an object, leaving out empty values.
export function query(params) {
  const kept = Object.entries(params).filter(([, value]) => value !== undefined && value !== null && value !== "");
  return kept.length ? "?" + new URLSearchParams(kept).toString() : "";
}

// The most requests one screenful of a list makes.
export const MOST_REQUESTS = 10;

// One screenful of a list route: `size` items from `params.cursor` on, as one page
// ({items, next_cursor}). A list's page may come back short, even empty, with a cursor (a
// filtered list reads a bounded number of items a request), and such a page is not the end: the
// cursor is followed, each request asking for what is still missing, until `size` items or the
// end, at most MOST_REQUESTS requests. next_cursor is where the next screenful starts (null: the
// end); `requests` how many were made.
export async function readPage(path, params, size) {
  const items = [];
  let cursor = params.cursor || null;
  let requests = 0;
  while (requests < MOST_REQUESTS) {
    const answer = await api("GET", path + query({ ...params, limit: size - items.length, cursor }));
    requests++;
    items.push(...answer.items);
    cursor = answer.next_cursor || null;
    if (!cursor || items.length >= size) break;
  }
  return { items, next_cursor: cursor, requests };
}
