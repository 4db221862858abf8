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
