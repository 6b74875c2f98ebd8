// The signed-in user of the console, read from its cookie session.
import { api, get, setCsrf, whenSignedOut, ApiError } from "./api.js";
import { navigate, route } from "./router.svelte.js";

export const session = $state({ loaded: false, user: null, error: "" });

export async function loadSession() {
  try {
    const r = await get("/api/v1/console/session");
    setCsrf(r.data.csrf_token);
    session.user = r.data.user;
  } catch (e) {
    session.user = null;
    if (!(e instanceof ApiError && e.status === 401)) session.error = e.message;
  } finally {
    session.loaded = true;
  }
}

export function signedIn(data) {
  setCsrf(data.csrf_token);
  session.user = data.user;
}

export async function logout() {
  try {
    await api("DELETE", "/api/v1/console/session");
  } finally {
    setCsrf("");
    session.user = null;
    navigate("/login");
  }
}

whenSignedOut(() => {
  if (!session.user) return;
  session.user = null;
  setCsrf("");
  navigate("/login?next=" + encodeURIComponent(route.path), { replace: true });
});
