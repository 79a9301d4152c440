//! A cancel's answers, read as [`CancelFlow`] needs them: the `POST`'s status and body (a
//! declared length over the limit is not read), a task's status read back, and the task
//! framework's probe; what follows is the flow's.

use super::super::cancel_flow::Answer as CancelAnswer;
use super::super::endpoints::{declared_too_long, read_status, reading, Limit, Read};
use super::super::response::Reply;
use super::cancels::At;
use super::io::{Answer, Body, GuardId, ReqId};
use super::requests::CancelStep;
use super::{Machine, Platform};

impl<P: Platform> Machine<P> {
    pub(super) fn cancel_answered(
        &mut self,
        id: GuardId,
        job: &str,
        step: CancelStep,
        req: ReqId,
        answer: &Answer,
    ) {
        if let Some(c) = self.cancel_of(id, job) {
            c.answered = true;
        }
        let status = answer.status;
        let read = reading(status, answer.redirected, answer.content_type.as_deref());
        match step {
            CancelStep::Post => match read {
                Read::Decided(reply) => {
                    self.end(req, true);
                    self.cancel_after(id, job, status_answer(answer, reply));
                }
                Read::Text if declared_too_long(answer.content_length.as_deref(), Limit::Body) => {
                    self.end(req, false);
                    self.cancel_after(id, job, status_answer(answer, Reply::NotJson));
                }
                Read::Text => {
                    let pending = Some((status, answer.retry_after.clone()));
                    self.set_cancel_at(id, job, At::Sending(req, pending));
                    self.read_body(req, Limit::Body);
                }
            },
            CancelStep::Status => {
                if (200..=299).contains(&status) && read == Read::Text {
                    self.read_body(req, Limit::Body);
                } else {
                    self.end(req, true);
                    self.cancel_status(id, job, None);
                }
            }
            CancelStep::Framework => {
                self.end(req, true);
                self.framework_answered(id, job, status == 404);
            }
        }
    }

    pub(super) fn cancel_body(
        &mut self,
        id: GuardId,
        job: &str,
        step: CancelStep,
        req: ReqId,
        body: Body,
    ) {
        self.end(req, false);
        match step {
            CancelStep::Post => {
                let Some(At::Sending(_, Some((status, retry_after)))) =
                    self.cancel_of(id, job).map(|c| c.at.clone())
                else {
                    return;
                };
                let reply = match body {
                    Body::Text(text) => Reply::from_text(&text),
                    // A 2xx's body that broke: the status is the server's yes.
                    Body::Broken if (200..=299).contains(&status) => Reply::Unreadable,
                    _ => Reply::NotJson,
                };
                self.cancel_after(
                    id,
                    job,
                    CancelAnswer::Status {
                        status,
                        retry_after,
                        reply,
                    },
                );
            }
            CancelStep::Status => {
                let status = match body {
                    Body::Text(text) => read_status(&text),
                    _ => None,
                };
                self.cancel_status(id, job, status);
            }
            CancelStep::Framework => {}
        }
    }

    pub(super) fn cancel_failed(
        &mut self,
        id: GuardId,
        job: &str,
        step: CancelStep,
        timed_out: bool,
    ) {
        match step {
            CancelStep::Post => {
                // No answer, or its body did not come in time.
                let answer = match self.cancel_of(id, job).map(|c| c.at.clone()) {
                    Some(At::Sending(_, Some(_))) | None => CancelAnswer::TimedOut,
                    _ if timed_out => CancelAnswer::TimedOut,
                    _ => CancelAnswer::NetworkError,
                };
                self.cancel_after(id, job, answer);
            }
            CancelStep::Status => self.cancel_status(id, job, None),
            CancelStep::Framework => self.framework_answered(id, job, false),
        }
    }

    pub(super) fn cancel_status(
        &mut self,
        id: GuardId,
        job: &str,
        status: Option<super::super::model::TaskStatus>,
    ) {
        let Some(cancel) = self.cancel_of(id, job) else {
            return;
        };
        let outcome = cancel.flow.after_status(status);
        self.cancel_finished(id, job, outcome);
    }
}

/// A cancel's answer of `status`, its body meaning `reply`.
pub(super) fn status_answer(answer: &Answer, reply: Reply) -> CancelAnswer {
    CancelAnswer::Status {
        status: answer.status,
        retry_after: answer.retry_after.clone(),
        reply,
    }
}
