//! A guard's own state in the machine ([`GuardState`]), and the calls that read and write its
//! records: each change is told to its listeners and to the page's other guards of its
//! namespace, as a `storage` event tells other tabs.

use super::super::error::GuardError;
use super::super::fallback::{StorageMode, StorageStatus};
use super::super::model::{JobMetadata, JobRecord};
use super::super::options::GuardOptions;
use super::super::session::Session;
use super::super::stats::StoreStats;
use super::super::store::JobStore;
use super::super::tabs::{Change, Source};
use super::super::task::{StatusChange, Submission};
use super::cancels::Cancel;
use super::following::Follow;
use super::queries::Query;
use super::waits::Waits;
use super::{Effect, GuardId, Machine, Platform};

/// One guard: its store and options, what it has running, and what it has heard of the
/// server since its last login.
pub(super) struct GuardState<P: Platform> {
    pub(super) id: GuardId,
    pub(super) store: JobStore<P::Storage, P::Clock>,
    pub(super) options: GuardOptions,
    /// The server answered 401 (to anything) since the last login: nothing is sent until the
    /// next login, in any tab.
    pub(super) unauthenticated: bool,
    /// The event stream answered 403 (a role without the permission): `follow` waits for the
    /// next login.
    pub(super) forbidden: bool,
    /// The event stream answered 404 (the task framework switched off): not followed again.
    pub(super) stream_absent: bool,
    pub(super) cancels: Vec<Cancel>,
    pub(super) waits: Waits,
    pub(super) queries: Vec<Query>,
    pub(super) follow: Follow,
    /// `free()` was called: no call reaches it; it goes once nothing of it runs.
    pub(super) freed: bool,
    /// The page ended (`pagehide`, not into the back/forward cache) while it was there: it
    /// polls no more and sends no stop again.
    pub(super) ended: bool,
    /// The page went into the back/forward cache while it was there: its `follow()` let its
    /// loop and lock go, until the page is shown again.
    pub(super) frozen: bool,
    /// Which server its requests reach: guards that send with the same `fetch` share one, and
    /// what is learned of a server is learned for all of them.
    pub(super) server: u32,
}

impl<P: Platform> GuardState<P> {
    /// Whether its records are in the origin's storage (not this page's memory alone).
    pub(super) fn shared(&self) -> bool {
        self.store.storage_status().kind != StorageMode::Memory
    }

    /// The session ended or another began: a 401's or a 403's stop is over, and what is sent
    /// is sent again.
    pub(super) fn hears_server_again(&mut self) {
        self.unauthenticated = false;
        self.forbidden = false;
    }

    /// A session signed in (here or in another tab): it hears the server again, and lists
    /// what it waits for again (what another tab's logout took belongs to the session before).
    pub(super) fn new_session(&mut self) {
        self.hears_server_again();
        self.waits.entry.taken = None;
    }

    /// Whether `follow()` may poll for it now: not after a 401 or a poll's 403 (until the next
    /// login), not where the server has no stream, not in the back/forward cache, not once the
    /// page ended or the guard was freed.
    pub(super) fn may_follow(&self) -> bool {
        !(self.unauthenticated
            || self.forbidden
            || self.stream_absent
            || self.frozen
            || self.ended
            || self.freed)
    }

    /// Whether the page's end cancels what a call awaits (`own`: the call's `cancelOnClose`,
    /// else the guard's).
    pub(super) fn cancels_on_close(&self, own: Option<bool>) -> bool {
        own.unwrap_or(self.options.cancel_on_close)
    }
}

/// A call on a freed guard.
fn freed() -> GuardError {
    GuardError::Freed
}

impl<P: Platform> Machine<P> {
    /// Adds a guard over `store` with `options`, whose requests reach `server` (the
    /// executor's number for the `fetch` they go through); its id.
    pub fn add_guard(
        &mut self,
        options: GuardOptions,
        store: JobStore<P::Storage, P::Clock>,
        server: u32,
    ) -> GuardId {
        let id = GuardId(self.id());
        self.guards.push(GuardState {
            id,
            store,
            options,
            unauthenticated: false,
            forbidden: false,
            stream_absent: false,
            cancels: Vec::new(),
            waits: Waits::default(),
            queries: Vec::new(),
            follow: Follow::default(),
            freed: false,
            ended: false,
            frozen: false,
            server,
        });
        id
    }

    /// What the page knows of `url` is kept under this key: the server guard `id` reaches,
    /// and the URL.
    pub(super) fn server_key(&self, id: GuardId, url: &str) -> String {
        let server = self
            .guards
            .iter()
            .find(|g| g.id == id)
            .map_or(0, |g| g.server);
        [server.to_string().as_str(), " ", url].concat()
    }

    /// Guard `id`, unless it was freed.
    pub(super) fn live(&mut self, id: GuardId) -> Option<&mut GuardState<P>> {
        self.guard(id).filter(|g| !g.freed)
    }

    /// Runs `f` on guard `id`'s store.
    fn with_store<T>(
        &mut self,
        id: GuardId,
        f: impl FnOnce(&mut JobStore<P::Storage, P::Clock>) -> Result<T, GuardError>,
    ) -> Result<T, GuardError> {
        let guard = self.live(id).ok_or_else(freed)?;
        f(&mut guard.store)
    }

    pub fn storage_status(&mut self, id: GuardId) -> Result<StorageStatus, GuardError> {
        self.with_store(id, |s| Ok(s.storage_status()))
    }

    pub fn stats(&mut self, id: GuardId) -> Result<StoreStats, GuardError> {
        self.with_store(id, |s| Ok(s.stats()))
    }

    pub fn session(&mut self, id: GuardId) -> Result<Option<Session>, GuardError> {
        self.with_store(id, |s| Ok(s.session()))
    }

    pub fn job(&mut self, id: GuardId, job_id: &str) -> Result<Option<JobRecord>, GuardError> {
        self.with_store(id, |s| Ok(s.job(job_id)))
    }

    pub fn jobs(&mut self, id: GuardId) -> Result<Vec<JobRecord>, GuardError> {
        self.with_store(id, |s| Ok(s.jobs()))
    }

    /// `checkCancel`: decided locally, nothing sent.
    pub fn check_cancel(
        &mut self,
        id: GuardId,
        job_id: &str,
    ) -> Result<super::super::cancel::CancelCheck, GuardError> {
        self.with_store(id, |s| Ok(s.check_cancel(job_id)))
    }

    /// `recordJob`.
    pub fn record_job(&mut self, id: GuardId, meta: JobMetadata) -> Result<JobRecord, GuardError> {
        let record = self.with_store(id, |s| s.record_job(meta))?;
        self.changed(id, Change::JobsChanged);
        self.settle_waits();
        Ok(record)
    }

    /// `applyEvent`: `None` is an event whose status the guard does not know (counted).
    pub fn apply_event(
        &mut self,
        id: GuardId,
        event: Option<JobMetadata>,
    ) -> Result<Option<JobRecord>, GuardError> {
        let record = self.with_store(id, |s| match event {
            Some(event) => s.apply_event(event),
            None => {
                s.skipped_unknown_status();
                Ok(None)
            }
        })?;
        if record.is_some() {
            self.changed(id, Change::JobsChanged);
        }
        self.settle_waits();
        Ok(record)
    }

    /// `recordTasks`.
    pub fn record_tasks(
        &mut self,
        id: GuardId,
        submission: Submission,
    ) -> Result<Vec<JobRecord>, GuardError> {
        let records = self.with_store(id, |s| s.record_tasks(submission))?;
        self.changed(id, Change::JobsChanged);
        self.settle_waits();
        Ok(records)
    }

    /// `applyTaskStatus` and `applyStatusChanges`: the records that changed.
    pub fn apply_task_statuses(
        &mut self,
        id: GuardId,
        changes: Vec<StatusChange>,
    ) -> Result<Vec<JobRecord>, GuardError> {
        let records = self.with_store(id, |s| Ok(s.apply_task_statuses(changes)))?;
        if !records.is_empty() {
            self.changed(id, Change::JobsChanged);
        }
        self.settle_waits();
        Ok(records)
    }

    /// Guard `id` changed its session or records: its listeners hear it, and so do the page's
    /// other guards of its namespace whose storage is the origin's, as other tabs hear a
    /// `storage` event (a page's own writes fire none).
    pub(super) fn changed(&mut self, id: GuardId, change: Change) {
        self.notify(id, change, Source::Local);
        if matches!(change, Change::Unauthorized | Change::Forbidden) {
            return;
        }
        let Some(me) = self.guard(id) else {
            return;
        };
        if !me.shared() {
            return;
        }
        let namespace = me.options.namespace.clone();
        let others: Vec<GuardId> = self
            .guards
            .iter()
            .filter(|g| g.id != id && g.options.namespace == namespace && g.shared())
            .map(|g| g.id)
            .collect();
        for other in others {
            if change != Change::JobsChanged {
                self.session_ended_here(other);
            }
            self.notify(other, change, Source::OtherTab);
        }
    }

    /// Tells guard `id`'s listeners of `change`; something new to follow wakes its
    /// `follow()`.
    /// Tells guard `id`'s listeners of `change`, unless it was freed (its listeners went with
    /// it; what it still has running ends unheard).
    pub(super) fn notify(&mut self, id: GuardId, change: Change, source: Source) {
        if self.guards.iter().any(|g| g.id == id && g.freed) {
            return;
        }
        self.emit(Effect::Notify {
            guard: id,
            change,
            source,
        });
        self.kick_follow(id);
    }

    /// The guards of the page in `namespace`.
    pub(super) fn in_namespace(&self, namespace: &str) -> Vec<GuardId> {
        self.guards
            .iter()
            .filter(|g| g.options.namespace == namespace)
            .map(|g| g.id)
            .collect()
    }
}
