//! The page's guards: every guard of the page, listed weakly with its number, the page's token
//! (the prefix of its guards' wait entries), and each guard's waiters as an abort or the page's
//! end decides over them ([`others`], [`with_views`]).

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use super::state::Inner;
use crate::core::awaited::GuardWaits;
use crate::core::random::Random;
use crate::core::waiters::Waiters;

/// The page: its token (the prefix of its guards' wait entries), its guards.
#[derive(Default)]
struct Page {
    token: Option<String>,
    next: u32,
    guards: Vec<(u32, Weak<RefCell<Inner>>)>,
}

thread_local! {
    static PAGE: RefCell<Page> = RefCell::new(Page::default());
}

/// This page's token: random, made once (`[0-9a-z]`, 11 characters).
fn page_token(page: &mut Page) -> String {
    page.token
        .get_or_insert_with(|| {
            let mut random = super::random::MathRandom;
            let mut n = (random.next_f64() * 9_007_199_254_740_992.0) as u64;
            let mut token = String::new();
            for _ in 0..11 {
                let digit = (n % 36) as u32;
                token.extend(char::from_digit(digit, 36));
                n /= 36;
            }
            token
        })
        .clone()
}

/// Lists a guard among the page's (the constructor does); its number on the page.
pub(super) fn join(inner: &Rc<RefCell<Inner>>) -> u32 {
    PAGE.with(|page| {
        let Ok(mut page) = page.try_borrow_mut() else {
            return 0;
        };
        page.guards.retain(|(_, g)| g.strong_count() > 0);
        page.next = page.next.wrapping_add(1);
        let n = page.next;
        page.guards.push((n, Rc::downgrade(inner)));
        n
    })
}

/// Takes a guard off the page's list (its `free()`): a freed guard awaits nothing, though a
/// cancel of its may still be running.
pub(super) fn leave(n: u32) {
    PAGE.with(|page| {
        if let Ok(mut page) = page.try_borrow_mut() {
            page.guards
                .retain(|(id, g)| *id != n && g.strong_count() > 0);
        }
    });
}

/// The token of guard `n`'s wait entry: `<page>-<n>`.
pub(super) fn token_of(n: u32) -> String {
    [this_page(), "-".to_owned(), n.to_string()].concat()
}

/// This page's token (the prefix of every wait entry of its guards).
pub(super) fn this_page() -> String {
    PAGE.with(|page| {
        page.try_borrow_mut()
            .map(|mut p| page_token(&mut p))
            .unwrap_or_default()
    })
}

/// The page's guards other than `me` that are alive.
pub(super) fn guards(me: Option<&Rc<RefCell<Inner>>>) -> Vec<Rc<RefCell<Inner>>> {
    PAGE.with(|page| {
        page.try_borrow()
            .map(|p| {
                p.guards
                    .iter()
                    .filter_map(|(_, g)| g.upgrade())
                    .filter(|g| me.is_none_or(|me| !Rc::ptr_eq(g, me)))
                    .collect()
            })
            .unwrap_or_default()
    })
}

/// One guard's waiters and the jobs it is cancelling, copied; `None` while it is busy (a call of
/// it is running further up the stack).
pub(super) type View = (Waiters, Vec<String>);

pub(super) fn view_of(guard: &Rc<RefCell<Inner>>) -> Option<View> {
    let g = guard.try_borrow().ok()?;
    let cancelling = g.cancels.iter().map(|(id, _)| id.clone()).collect();
    Some((g.waiting.rules.clone(), cancelling))
}

fn views(list: &[View]) -> Vec<GuardWaits<'_>> {
    list.iter()
        .map(|(waiters, cancelling)| GuardWaits {
            waiters,
            cancelling,
        })
        .collect()
}

/// The page's other guards than `me`, as an abort's decision sees them; `None` if one is busy
/// (the abort is then decided once that call has returned).
pub(super) fn others(me: &Rc<RefCell<Inner>>) -> Option<Vec<View>> {
    guards(Some(me)).iter().map(view_of).collect()
}

/// Runs `f` with `list` as the decision's views.
pub(super) fn with_views<T>(list: &[View], f: impl FnOnce(&[GuardWaits]) -> T) -> T {
    f(&views(list))
}
