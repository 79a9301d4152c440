// The demo page: the guard in a page, with nothing but the browser. Jobs here are made up
// (metadata shaped like Superset's 202 answer); the cancel over HTTP comes with the server.
import init, { JobGuard, isGuardError } from "/pkg/superset_job_guard.js";

await init();
const guard = new JobGuard();
const $ = (id) => document.getElementById(id);

function show(text, kind) {
  $("outcome").textContent = text;
  $("outcome").className = kind;
}

function render() {
  const session = guard.session;
  $("session").textContent = session
    ? `Signed in as ${session.userId === null ? "guest" : `user ${session.userId}`}` +
      (session.channelId ? `, channel ${session.channelId}` : "")
    : "Signed out";
  const rows = guard.jobs().map((job) => {
    const tr = document.createElement("tr");
    const cells = [job.job_id, job.user_id ?? "guest"].map((text) => {
      const td = document.createElement("td");
      const code = document.createElement("code");
      code.textContent = text;
      td.append(code);
      return td;
    });
    const status = document.createElement("td");
    const badge = document.createElement("span");
    badge.className = `status ${job.status}`;
    badge.textContent = job.status;
    status.append(badge);
    const actions = document.createElement("td");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "secondary";
    button.textContent = "Check cancel";
    button.addEventListener("click", () => check(job.job_id));
    actions.append(button);
    tr.append(...cells, status, actions);
    return tr;
  });
  $("jobs").replaceChildren(...rows);
  $("empty").hidden = rows.length > 0;
}

function check(jobId) {
  const result = guard.checkCancel(jobId);
  if (result.allowed) show(`Cancel allowed for ${jobId}: this session owns it.`, "ok");
  else show(`${result.message} [${result.reason}]`, "refused");
}

function act(fn) {
  try {
    fn();
  } catch (e) {
    show(isGuardError(e) ? `${e.message} [${e.code}]` : String(e), "refused");
  }
  render();
}

$("login").addEventListener("click", () => act(() => {
  const choice = $("user").value;
  // A guest's channel is derived from its guest token; a user's is learnt from job metadata.
  const session = choice === "guest"
    ? { userId: null, channelId: `guest-${crypto.randomUUID().slice(0, 8)}` }
    : { userId: choice };
  const { purged } = guard.login(session);
  show(`Signed in.${purged ? ` Removed ${purged} job record(s) of the previous session.` : ""}`, "ok");
}));

$("logout").addEventListener("click", () => act(() => {
  const { purged } = guard.logout();
  show(`Signed out; removed ${purged} job record(s).`, "ok");
}));

$("start").addEventListener("click", () => act(() => {
  const session = guard.session;
  const job = guard.recordJob({
    channel_id: session?.channelId ?? crypto.randomUUID(),
    job_id: crypto.randomUUID(),
    user_id: session ? session.userId : null,
    status: "pending",
    errors: [],
    result_url: null,
  });
  show(`Recorded job ${job.job_id}.`, "ok");
}));

$("check").addEventListener("click", () => check($("job-id").value.trim()));

// Another tab signing out or in changes what this one may do: redraw when storage changes.
window.addEventListener("storage", render);
render();
document.body.dataset.ready = "true";
