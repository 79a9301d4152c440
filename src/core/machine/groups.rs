//! A logout's `stopped`: the requests it sent with `keepalive` (stops, cancels, late answers
//! it waits for), counted in a group that settles when they are answered
//! ([`STOP_DELIVERY_MS`] at the latest), at once when nothing was sent.

use super::super::query::STOP_DELIVERY_MS;
use super::io::{Effect, GuardId, Method, PromiseId, Settled, TimerId};
use super::requests::{Purpose, Wake};
use super::{Machine, Platform};

/// Requests sent with `keepalive` whose answers a logout's `stopped` waits for.
#[derive(Debug)]
pub(super) struct Group {
    id: u32,
    promise: PromiseId,
    /// How many are not answered yet.
    left: usize,
    /// Everything of the logout was sent: it settles when `left` is 0.
    closed: bool,
    timer: Option<TimerId>,
}

impl<P: Platform> Machine<P> {
    /// A new group, for a logout whose `stopped` is `promise`.
    pub(super) fn delivery_group(&mut self, promise: PromiseId) -> u32 {
        let id = self.id();
        self.groups.push(Group {
            id,
            promise,
            left: 0,
            closed: false,
            timer: None,
        });
        id
    }

    /// Everything of group `id` was sent: it settles when the answers are in, at once if
    /// there are none, [`STOP_DELIVERY_MS`] after at the latest.
    pub(super) fn close_group(&mut self, id: u32) {
        let Some(group) = self.groups.iter_mut().find(|g| g.id == id) else {
            return;
        };
        group.closed = true;
        if group.left == 0 {
            return self.settle_group(id);
        }
        let timer = self.set_timer(Wake::Delivered(id), u64::from(STOP_DELIVERY_MS));
        if let Some(group) = self.groups.iter_mut().find(|g| g.id == id) {
            group.timer = Some(timer);
        }
    }

    pub(super) fn count_in(&mut self, group: Option<u32>) {
        if let Some(g) = group.and_then(|id| self.groups.iter_mut().find(|g| g.id == id)) {
            g.left += 1;
        }
    }

    /// One request of group `id` was answered (or failed).
    pub(super) fn delivered(&mut self, id: u32) {
        let Some(group) = self.groups.iter_mut().find(|g| g.id == id) else {
            return;
        };
        group.left = group.left.saturating_sub(1);
        if group.closed && group.left == 0 {
            self.settle_group(id);
        }
    }

    pub(super) fn delivery_timeout(&mut self, id: u32) {
        if let Some(group) = self.groups.iter_mut().find(|g| g.id == id) {
            group.timer = None;
        }
        self.settle_group(id);
    }

    fn settle_group(&mut self, id: u32) {
        let Some(at) = self.groups.iter().position(|g| g.id == id) else {
            return;
        };
        let group = self.groups.remove(at);
        if let Some(timer) = group.timer {
            self.clear_timer(timer);
        }
        self.emit(Effect::Settle {
            promise: group.promise,
            value: Settled::Nothing,
        });
    }

    /// Sends `url` (a stop, or a cancel without a record) with `keepalive`, its answer not
    /// read, counted in `group`.
    pub(super) fn send_delivery(
        &mut self,
        id: GuardId,
        url: String,
        body: Option<String>,
        group: Option<u32>,
    ) {
        self.send_keepalive(id, url, body, group, None);
    }

    /// Sends `url` as [`send_delivery`](Self::send_delivery) does; `cancel`: the cancel
    /// endpoint's key and contract, learned from its answer's status.
    pub(super) fn send_keepalive(
        &mut self,
        id: GuardId,
        url: String,
        body: Option<String>,
        group: Option<u32>,
        cancel: Option<(String, super::super::response::Contract)>,
    ) {
        let Some(guard) = self.guard(id) else {
            return;
        };
        let timeout = guard.options.timeout_ms;
        let purpose = Purpose::Delivery {
            guard: id,
            group: group.unwrap_or(0),
            cancel,
        };
        self.send(purpose, Method::Post, url, body, true, timeout);
        self.count_in(group);
    }
}
