//! A cancel's request: the one URL and body every cancel is sent with (`cancel()`'s and the
//! keepalive cancels of a stop, a logout and the page's end alike), and the one bar on it:
//! after a 401, to an endpoint found absent, to a task framework switched off.

use super::super::options::GuardOptions;
use super::super::response::Contract;
use super::cancels::{contract_of, unauthenticated_outcome, At, Barred};
use super::io::{GuardId, Method};
use super::requests::{CancelStep, Purpose};
use super::servers::Presence;
use super::{Machine, Platform};

impl<P: Platform> Machine<P> {
    /// Cancel `job` may send nothing (a 401 came): it settles `unauthenticated`.
    pub(super) fn cancel_unauthenticated(&mut self, id: GuardId, job: &str) {
        if let Some(flow) = self.cancel_of(id, job).map(|c| c.flow.clone()) {
            self.cancel_finished(id, job, unauthenticated_outcome(&flow));
        }
    }

    /// Why guard `id` may send no cancel under `contract`, if it may not: after a 401 (until
    /// the next login), to an endpoint found absent, or to a task framework switched off. Every
    /// cancel request asks this first, whether its answer is read or not.
    pub(super) fn cancel_barred(&mut self, id: GuardId, contract: Contract) -> Option<Barred> {
        let guard = self.guard(id)?;
        // A task guard's stream answered 404: its task framework is switched off.
        let task_guard = guard.options.contract == Contract::Task;
        let (unauthenticated, off) = (
            guard.unauthenticated,
            guard.stream_absent && task_guard && contract == Contract::Task,
        );
        let template = guard.options.cancel_template(contract).to_owned();
        let template = self.server_key(id, &template);
        if unauthenticated {
            Some(Barred::Unauthenticated)
        } else if off || self.servers.cancel(&template, contract) == Some(Presence::Absent) {
            Some(Barred::Absent)
        } else {
            None
        }
    }

    /// The cancel request of `job` for guard `id`: its URL and body, under `contract` (`None`:
    /// its record's), with the tab id its record was made with on the task contract.
    pub(super) fn cancel_request(
        &mut self,
        id: GuardId,
        job: &str,
        contract: Option<Contract>,
        tab: Option<&str>,
    ) -> Option<(Contract, String, Option<String>)> {
        let guard = self.guard(id)?;
        let contract = contract.unwrap_or_else(|| contract_of(&guard.store.check_cancel(job)));
        let recorded = match contract {
            Contract::Task => guard.store.cancel_tab(job).map(|t| t.to_string()),
            Contract::AsyncEvent => None,
        };
        let tab = tab.map(str::to_owned).or(recorded);
        let url = guard.options.cancel_url_for(job, contract);
        Some((
            contract,
            url,
            GuardOptions::cancel_body(contract, tab.as_deref()),
        ))
    }

    /// Sends the cancel request of `job` once.
    pub(super) fn send_cancel(&mut self, id: GuardId, job: &str) {
        let Some(contract) = self.cancel_of(id, job).map(|c| c.contract) else {
            return;
        };
        let Some((_, url, body)) = self.cancel_request(id, job, Some(contract), None) else {
            return;
        };
        let Some(guard) = self.guard(id) else {
            return;
        };
        let timeout = guard.options.timeout_ms;
        if let Some(cancel) = guard.cancels.iter_mut().find(|c| c.job == job) {
            cancel.flow.sending();
        }
        let purpose = Purpose::Cancel {
            guard: id,
            job: job.to_owned(),
            step: CancelStep::Post,
        };
        let req = self.send(purpose, Method::Post, url, body, true, timeout);
        self.set_cancel_at(id, job, At::Sending(req, None));
    }
}
