// The Sundial console: sign in with an API key (kept in this tab's sessionStorage) and call the
// API of the same origin with it.
import { html, render, useState } from "./vendor/htm-preact-3.1.1.module.js";

const KEY = "sundial.key";

function SignIn() {
  const [key, setKey] = useState(sessionStorage.getItem(KEY) || "");
  const submit = (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY, key);
  };
  return html`<form class="sign-in" onSubmit=${submit}>
    <h1>Sundial</h1>
    <label>API key <input type="password" value=${key} onInput=${(e) => setKey(e.target.value)} /></label>
    <button type="submit">Sign in</button>
  </form>`;
}

render(html`<${SignIn} />`, document.getElementById("app"));
