// What every framework's test page does over the network, shared (copied into each app): the
// reference server's sign-in and sign-out, its CSRF token, and a chart query's 202. The pages
// themselves show the guard through each framework's binding.

let csrf = null;

/** The guard's `fetch` option: the page's fetch with Superset's CSRF header (read once a login). */
export function csrfFetch(input, init = {}) {
  const headers = new Headers(init.headers);
  if (csrf) headers.set("X-CSRFToken", csrf);
  return fetch(input, { ...init, headers });
}

/** Signs user 1 in on the server, then in the guard. */
export async function signIn(guard) {
  await fetch("/logout", { method: "POST" });
  const login = await fetch("/login", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ user: "1" }),
  });
  if (!login.ok) throw new Error(`login: ${login.status}`);
  csrf = (await (await fetch("/api/v1/security/csrf_token/")).json()).result;
  const me = await (await fetch("/api/v1/me/")).json();
  guard.login({ userId: me.result.id });
}

/** A chart query's 202 (a task that runs until cancelled): its body, exactly. */
export async function start202(tabId) {
  const answer = await csrfFetch("/api/v1/chart/data", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ chart: `framework check ${Date.now()}`, force: true, tab_id: tabId }),
  });
  if (answer.status !== 202) throw new Error(`chart data: ${answer.status}`);
  return answer.json();
}

/** The README's order: the guard's logout (its stops sent), then the server's. */
export async function signOut(guard) {
  const { stopped } = guard.logout();
  await stopped;
  await fetch("/logout", { method: "POST" });
  csrf = null;
}

/** The chart body each page shows through its binding (the reference server runs its task 1 s). */
export const CHART = { chart: "Revenue by region", filter: "all", durationMs: 1000 };
