//! A cancel endpoint as the cancels find it: the first cancel to an endpoint not known yet
//! goes alone, the others wait for its answer ([`ASK_MS`] at most), and an endpoint found
//! absent (an HTML 404: Superset 6.1.0; a task framework switched off) is not asked again:
//! its cancels settle `unsupported` with no request. What is known is
//! [`servers`](super::servers)'.

use super::super::cancel_flow::{CancelFlow, CancelOutcome};
use super::super::response::{Contract, Outcome};
use super::cancels::At;
use super::io::GuardId;
use super::requests::Wake;
use super::servers::{Presence, ASK_MS};
use super::{Machine, Platform};

impl<P: Platform> Machine<P> {
    /// The cancels that waited for `template`'s first answer go (or settle, if it is absent).
    pub(super) fn release_held(&mut self, template: &str, contract: Contract) {
        if self.servers.cancel(template, contract) == Some(Presence::Asking) {
            return;
        }
        let held: Vec<(GuardId, String)> = self
            .guards
            .iter()
            .flat_map(|g| {
                g.cancels
                    .iter()
                    .filter(|c| {
                        c.at == At::Held && c.template == template && c.contract == contract
                    })
                    .map(move |c| (g.id, c.job.clone()))
            })
            .collect();
        for (id, job) in held {
            let Some(flow) = self.cancel_of(id, &job).map(|c| c.flow.clone()) else {
                continue;
            };
            match self.servers.cancel(template, contract) {
                Some(Presence::Absent) => {
                    let outcome = absent_outcome(&flow, contract);
                    self.cancel_settled(id, &job, outcome);
                }
                // Another held one asks first.
                Some(Presence::Asking) => {}
                None => {
                    let asked = Some(self.ask(template, contract));
                    if let Some(c) = self.cancel_of(id, &job) {
                        c.asked = asked;
                    }
                    self.send_cancel(id, &job);
                }
                Some(Presence::Present | Presence::Unanswered) => self.send_cancel(id, &job),
            }
        }
    }

    /// The first cancel to `template`'s endpoint goes; the next ones wait for its answer, for
    /// [`ASK_MS`] at most (a first cancel that hangs holds none of them longer).
    pub(super) fn ask(&mut self, template: &str, contract: Contract) -> super::io::TimerId {
        self.servers.asking(template, contract);
        let wake = Wake::Asked {
            template: template.to_owned(),
            contract,
        };
        self.set_timer(wake, ASK_MS)
    }

    /// `template`'s first cancel has been out for [`ASK_MS`]: the others go.
    pub(super) fn asked(&mut self, template: &str, contract: Contract) {
        self.servers.unanswered(template, contract);
        self.release_held(template, contract);
    }
}

/// A cancel to an endpoint found absent: `unsupported`, nothing sent.
pub(super) fn absent_outcome(flow: &CancelFlow, contract: Contract) -> CancelOutcome {
    let message = match contract {
        Contract::Task => {
            "The server's task framework is switched off (its task routes answer 404): nothing \
             was cancelled, the task runs on if it runs at all"
        }
        Contract::AsyncEvent => {
            "Cancel is not available on this server (no cancel endpoint answered: Superset \
             6.1.0 has none; on another, check `cancelUrl` and the page's proxy): the job runs \
             until it ends"
        }
    };
    CancelOutcome {
        outcome: Outcome::Unsupported,
        message: message.to_owned(),
        ..flow.aborted()
    }
}
