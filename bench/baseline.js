// The obvious alternative to the guard, for the benchmark: a hand-written JS guard keeping
// the same contract the simple way. One localStorage key per job (the same keys and JSON as
// the guard), JSON.parse/JSON.stringify on every call, no cache.
const TERMINAL = new Set(["done", "error", "cancelled"]);

export class BaselineGuard {
  constructor({ namespace = "superset-job-guard", ttlSeconds = 3600, maxJobs = 200 } = {}) {
    this.ns = namespace;
    this.ttlMs = ttlSeconds * 1000;
    this.maxJobs = maxJobs;
    this.sessionKey = `${namespace}:v1:session`;
    this.jobPrefix = `${namespace}:v1:job:`;
  }

  get session() {
    try {
      const s = JSON.parse(localStorage.getItem(this.sessionKey));
      return s && typeof s === "object" ? s : null;
    } catch {
      return null;
    }
  }

  owns(session, r) {
    return r.user_id === session.user_id && (session.channel_id === null || r.channel_id === session.channel_id);
  }

  read(jobId) {
    try {
      const r = JSON.parse(localStorage.getItem(this.jobPrefix + jobId));
      if (!r || r.job_id !== jobId) return null;
      if (Date.now() - r.created_at > this.ttlMs) {
        localStorage.removeItem(this.jobPrefix + jobId);
        return null;
      }
      return r;
    } catch {
      return null;
    }
  }

  jobKeys() {
    const keys = [];
    for (let i = 0; i < localStorage.length; i++) {
      const k = localStorage.key(i);
      if (k.startsWith(this.jobPrefix)) keys.push(k);
    }
    return keys;
  }

  login({ userId, channelId = null }) {
    const user = userId === null ? null : String(userId);
    const current = this.session;
    let purged = 0;
    if (!current || current.user_id !== user) {
      for (const k of this.jobKeys()) {
        localStorage.removeItem(k);
        purged++;
      }
    }
    const channel = channelId ?? (current && current.user_id === user ? current.channel_id : null);
    localStorage.setItem(this.sessionKey, JSON.stringify({ user_id: user, channel_id: channel }));
    return { purged };
  }

  logout() {
    let purged = 0;
    const doomed = [];
    for (let i = 0; i < localStorage.length; i++) {
      const k = localStorage.key(i);
      if (k.startsWith(`${this.ns}:`) || k === "last_async_event_id") doomed.push(k);
    }
    for (const k of doomed) {
      if (k.startsWith(this.jobPrefix)) purged++;
      localStorage.removeItem(k);
    }
    return { purged };
  }

  recordJob(meta) {
    const session = this.session;
    if (!session) throw new Error("no_session");
    const user = meta.user_id === null ? null : String(meta.user_id);
    if (user !== session.user_id) throw new Error("not_job_owner");
    if (session.channel_id !== meta.channel_id) {
      session.channel_id = meta.channel_id;
      localStorage.setItem(this.sessionKey, JSON.stringify(session));
    }
    const now = Date.now();
    const old = this.read(meta.job_id);
    const record = {
      channel_id: meta.channel_id, job_id: meta.job_id, user_id: user, status: meta.status,
      errors: meta.errors ?? [], result_url: meta.result_url ?? null,
      created_at: old ? old.created_at : now, updated_at: now,
    };
    localStorage.setItem(this.jobPrefix + meta.job_id, JSON.stringify(record));
    const keys = this.jobKeys();
    if (keys.length > this.maxJobs) {
      const records = keys.map((k) => JSON.parse(localStorage.getItem(k)));
      records.sort((a, b) => (TERMINAL.has(b.status) - TERMINAL.has(a.status)) || a.created_at - b.created_at);
      for (const r of records.filter((r) => r.job_id !== meta.job_id).slice(0, keys.length - this.maxJobs)) {
        localStorage.removeItem(this.jobPrefix + r.job_id);
      }
    }
    return record;
  }

  applyEvent(event) {
    const session = this.session;
    if (!session) return null;
    const r = this.read(event.job_id);
    if (!r || !this.owns(session, r) || event.channel_id !== r.channel_id) return null;
    if (TERMINAL.has(r.status)) return r;
    r.status = event.status;
    r.errors = event.errors ?? [];
    r.result_url = event.result_url ?? null;
    r.updated_at = Date.now();
    localStorage.setItem(this.jobPrefix + r.job_id, JSON.stringify(r));
    return r;
  }

  job(jobId) {
    const session = this.session;
    if (!session) return null;
    const r = this.read(jobId);
    return r && this.owns(session, r) ? r : null;
  }

  jobs() {
    const session = this.session;
    if (!session) return [];
    const out = [];
    for (const k of this.jobKeys()) {
      const r = this.read(k.slice(this.jobPrefix.length));
      if (r && this.owns(session, r)) out.push(r);
    }
    return out.sort((a, b) => a.created_at - b.created_at || (a.job_id < b.job_id ? -1 : 1));
  }

  checkCancel(jobId) {
    const session = this.session;
    if (!session) return { allowed: false, reason: "no_session", message: "No session" };
    const r = this.read(jobId);
    if (!r) return { allowed: false, reason: "unknown_job", message: `Unknown job ${jobId}` };
    if (!this.owns(session, r)) return { allowed: false, reason: "not_job_owner", message: "Not job owner" };
    if (TERMINAL.has(r.status)) return { allowed: false, reason: "already_finished", message: "Finished" };
    return { allowed: true, job: r };
  }

  /** A chart's query the plain way: one POST, its JSON (bench/startup.js times the first). */
  async query(body, { url = "/api/v1/chart/data" } = {}) {
    const answer = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      credentials: "same-origin",
    });
    if (!answer.ok) return { status: "failed", httpStatus: answer.status };
    return { status: "done", result: await answer.json() };
  }

  free() {}
}
