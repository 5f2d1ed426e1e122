// The gateway's HTTP API, with the API key a person typed (kept in this browser only).
import { $ } from "./dom.js";

const KEY_STORAGE = "agentao-key";
export const auth = { key: localStorage.getItem(KEY_STORAGE) || "" };

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || null;
  }
}

// X-Agentao-Client makes every request of ours one a browser must preflight across origins
// (the gateway answers a preflight only for origins its operator configured), and it tells
// the gateway that a person in the web UI answered a permission request.
export async function api(path, options = {}) {
  const headers = { "Content-Type": "application/json", "X-Agentao-Client": "web" };
  if (auth.key) headers.Authorization = "Bearer " + auth.key;
  const res = await fetch(path, { ...options, headers });
  const body = await res.json().catch(() => ({}));
  if (res.status === 401) {
    await askKey(keyProblem(new ApiError(401, body)));
    return api(path, options);
  }
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

export function keyProblem(error) {
  if (error.code === "missing_api_key" || !auth.key) return "This gateway needs an API key.";
  return `The gateway refused this key (${error.message}). Check it and try again.`;
}

// One dialog at a time: every request that met a 401 meanwhile waits for the same answer.
let asking = null;

export function askKey(message) {
  if (asking) return asking;
  asking = new Promise((resolve) => {
    const dialog = $("key-dialog");
    $("key-message").textContent = message;
    $("key-input").value = auth.key;
    dialog.addEventListener("close", () => {
      auth.key = $("key-input").value.trim();
      localStorage.setItem(KEY_STORAGE, auth.key);
      asking = null;
      resolve();
    }, { once: true });
    dialog.showModal();
  });
  return asking;
}

// A WebSocket cannot carry an Authorization header, and a key never goes in a URL: it is
// offered as a subprotocol next to ours, and the server answers with "agentao.v1" only.
export function subprotocols() {
  if (!auth.key) return ["agentao.v1"];
  const bytes = new TextEncoder().encode(auth.key);
  const base64 = btoa(String.fromCharCode(...bytes));
  const base64url = base64.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  return ["agentao.v1", "agentao.key." + base64url];
}
