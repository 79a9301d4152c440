// The shell's answer memo; src/web/memo.rs says what it does and why. It decides nothing: it
// replays the core's answer while the stored text it came from is unchanged. No method throws.

const MISS = undefined;

export class Memo {
  constructor(storage, sessionKey, jobPrefix, ttlMs, limit) {
    this.storage = storage;
    this.sessionKey = sessionKey;
    this.jobPrefix = jobPrefix;
    this.ttlMs = ttlMs;
    this.limit = limit;
    this.entries = new Map();
    this.list = null;
    this.pending = null;
  }

  read(key) {
    try {
      return this.storage.getItem(key);
    } catch {
      return MISS;
    }
  }

  hit(jobId) {
    this.pending = null;
    if (typeof jobId !== "string") return MISS;
    const session = this.read(this.sessionKey);
    const record = this.read(this.jobPrefix + jobId);
    const e = this.entries.get(jobId);
    if (e !== undefined && e.session === session && e.record === record && Date.now() <= e.expires) {
      return e;
    }
    this.pending = { jobId, session, record };
    return MISS;
  }

  check(jobId) {
    return this.answer(jobId, "check");
  }

  job(jobId) {
    return this.answer(jobId, "job");
  }

  answer(jobId, kind) {
    const e = this.hit(jobId);
    if (e === MISS) return MISS;
    if (e[kind] !== MISS) return parse(e[kind]);
    if (kind === "job" && e.check !== MISS) {
      // An allowed check carries the record, which is the core's job() answer for that text.
      const check = parse(e.check);
      if (check?.allowed === true) return check.job;
    }
    this.pending = { jobId, session: e.session, record: e.record };
    return MISS;
  }

  jobs() {
    const l = this.list;
    if (l === null) return MISS;
    try {
      const session = this.read(this.sessionKey);
      if (session !== l.session) return MISS;
      // As many job keys as remembered records, and each of those unchanged: the same set.
      const { storage, jobPrefix } = this;
      let count = 0;
      for (let i = 0, n = storage.length; i < n; i++) {
        const key = storage.key(i);
        if (key !== null && key.startsWith(jobPrefix)) count++;
      }
      if (count !== l.ids.length) return MISS;
      const now = Date.now();
      const parts = new Array(l.ids.length);
      for (let i = 0; i < l.ids.length; i++) {
        const id = l.ids[i];
        const e = this.entries.get(id);
        if (e === undefined || e.job === MISS || e.session !== session || now > e.expires) return MISS;
        if (this.read(jobPrefix + id) !== e.record) return MISS;
        parts[i] = e.job;
      }
      return parse(`[${parts.join(",")}]`);
    } catch {
      return MISS;
    }
  }

  settleJob(text, unchanged) {
    return this.settle("job", text, unchanged);
  }

  settleCheck(text, unchanged) {
    return this.settle("check", text, unchanged);
  }

  settle(kind, text, unchanged) {
    const value = parse(text);
    const p = this.pending;
    this.pending = null;
    try {
      if (!unchanged || p === null || p.session === MISS || p.record === MISS) return value;
      let e = this.entries.get(p.jobId);
      if (e === undefined || e.session !== p.session || e.record !== p.record) {
        const job = kind === "job" ? value : value?.job;
        const created = job?.created_at ?? (p.record === null ? null : parse(p.record)?.created_at);
        const expires = p.record === null ? Infinity : typeof created === "number" ? created + this.ttlMs : -Infinity;
        e = { session: p.session, record: p.record, expires, job: MISS, check: MISS };
        this.put(p.jobId, e);
      }
      e[kind] = text;
    } catch {
      // Not remembered; the answer stands.
    }
    return value;
  }

  settleWrite(recordText, checkText) {
    const record = parse(recordText);
    try {
      const id = record?.job_id;
      if (typeof id === "string" && typeof record.created_at === "number") {
        const session = this.read(this.sessionKey);
        const raw = this.read(this.jobPrefix + id);
        if (typeof session === "string" && typeof raw === "string") {
          const expires = record.created_at + this.ttlMs;
          this.put(id, { session, record: raw, expires, job: recordText, check: checkText });
        }
      }
    } catch {
      // Not remembered; the answer stands.
    }
    return record;
  }

  settleList(text) {
    const records = parse(text);
    try {
      const session = this.read(this.sessionKey);
      if (session === MISS || session === null || !Array.isArray(records)) return records;
      const ids = [];
      for (const r of records) {
        const record = this.read(this.jobPrefix + r.job_id);
        if (typeof record !== "string") return records;
        let e = this.entries.get(r.job_id);
        if (e === undefined || e.session !== session || e.record !== record) {
          e = { session, record, expires: r.created_at + this.ttlMs, job: MISS, check: MISS };
          this.put(r.job_id, e);
        }
        e.job = JSON.stringify(r);
        ids.push(r.job_id);
      }
      this.list = { session, ids };
    } catch {
      this.list = null;
    }
    return records;
  }

  put(jobId, entry) {
    if (this.entries.size >= this.limit) this.clear();
    this.entries.set(jobId, entry);
  }

  clear() {
    this.entries.clear();
    this.list = null;
    this.pending = null;
  }
}

function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
