//! The page around the guards: its one `pagehide` and `pageshow` listener, its `storage`
//! listener, a `BroadcastChannel` per namespace to the other tabs, and the Web Locks the
//! machine asks for. Each hands the machine what happened; none decides anything.

use std::cell::RefCell;

use js_sys::{Function, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use web_sys::{AbortController, BroadcastChannel, MessageEvent, StorageEvent};

use super::dom;
use super::exec::{dispatch, handles, take};
use crate::core::machine::{Event, LockId, StorageEvent as Stored};
use crate::core::tabs::Message;

type Listener = Closure<dyn FnMut(JsValue)>;

/// A namespace's channel: its name, the channel, and its `onmessage`.
type Channel = (String, BroadcastChannel, Closure<dyn FnMut(MessageEvent)>);

/// The page's listeners, and the channels open, by namespace.
#[derive(Default)]
struct Page {
    listening: Option<[Listener; 3]>,
    channels: Vec<Channel>,
}

thread_local! {
    static PAGE: RefCell<Page> = RefCell::new(Page::default());
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_name = queueMicrotask)]
    fn queue_microtask(callback: &JsValue) -> Result<(), JsValue>;
}

/// The protocol the page's own navigation came over (`nextHopProtocol`: `http/1.1`, `h2`,
/// `h3`, or `""` where the browser does not say); `None` without a navigation entry.
fn protocol() -> Option<String> {
    let performance = Reflect::get(&js_sys::global(), &JsValue::from_str("performance")).ok()?;
    let entries = Reflect::get(&performance, &JsValue::from_str("getEntriesByType"))
        .ok()?
        .dyn_into::<Function>()
        .ok()?
        .call1(&performance, &JsValue::from_str("navigation"))
        .ok()?;
    let first = Reflect::get(&entries, &JsValue::from_f64(0.0)).ok();
    let protocol = first
        .and_then(|e| Reflect::get(&e, &JsValue::from_str("nextHopProtocol")).ok())
        .and_then(|p| p.as_string())
        .unwrap_or_default();
    Some(protocol)
}

/// Whether `event` is `persisted` (into or out of the back/forward cache).
fn persisted(event: &JsValue) -> bool {
    Reflect::get(event, &JsValue::from_str("persisted"))
        .ok()
        .and_then(|p| p.as_bool())
        .unwrap_or(false)
}

/// Listens to the page (once), and opens `namespace`'s channel in a microtask, once the
/// page's current code has run (opening one takes about 0.1 ms in Chromium, more than the
/// rest of a guard's construction). Pages only: in Node an open channel keeps the process
/// alive.
pub(super) fn join(namespace: &str) {
    let Some(page) = dom::page() else {
        return;
    };
    let first = PAGE.with(|p| p.try_borrow().is_ok_and(|p| p.listening.is_none()));
    if first {
        // Outside the page's borrow: what the machine then does may post to a channel.
        let protocol = protocol();
        let _ = super::exec::call(|m| m.set_protocol(protocol.as_deref()));
    }
    PAGE.with(|p| {
        let Ok(mut p) = p.try_borrow_mut() else {
            return;
        };
        if p.listening.is_some() {
            return;
        }
        let hide = Closure::<dyn FnMut(JsValue)>::new(|event: JsValue| {
            dispatch(Event::PageHide {
                persisted: persisted(&event),
            })
        });
        let show = Closure::<dyn FnMut(JsValue)>::new(|event: JsValue| {
            dispatch(Event::PageShow {
                persisted: persisted(&event),
            })
        });
        let storage = Closure::<dyn FnMut(JsValue)>::new(|event: JsValue| {
            if let Some(event) = read_storage_event(event.unchecked_ref()) {
                dispatch(Event::Storage(event));
            }
        });
        for (name, listener) in [
            ("pagehide", &hide),
            ("pageshow", &show),
            ("storage", &storage),
        ] {
            let _ = page.add_event_listener_with_callback(name, listener.as_ref().unchecked_ref());
        }
        p.listening = Some([hide, show, storage]);
    });
    let namespace = namespace.to_owned();
    let open = Closure::once_into_js(move || {
        let _ = channel(&namespace);
    });
    // queueMicrotask is in every current browser; were it missing, the channel would open
    // when this tab first posts.
    let _ = queue_microtask(&open);
}

/// A `storage` event as the machine hears it; `None` when the page made its values
/// unreadable (every call reads storage again anyway).
fn read_storage_event(event: &StorageEvent) -> Option<Stored> {
    let key = dom::storage_key(event)?;
    let (old, new) = match &key {
        Some(_) => dom::storage_values(event)?,
        None => (None, None),
    };
    Some(Stored { key, old, new })
}

/// `namespace`'s channel, opened (and listened to) if it is not.
fn channel(namespace: &str) -> Option<BroadcastChannel> {
    dom::page()?;
    PAGE.with(|p| {
        let mut p = p.try_borrow_mut().ok()?;
        if let Some((_, channel, _)) = p.channels.iter().find(|(n, _, _)| n == namespace) {
            return Some(channel.clone());
        }
        let channel = BroadcastChannel::new(&["superset-job-guard:", namespace].concat()).ok()?;
        let ns = namespace.to_owned();
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            if let Some(message) = read_message(&dom::data(&event)) {
                dispatch(Event::Message {
                    namespace: ns.clone(),
                    message,
                });
            }
        });
        if !dom::set_onmessage(&channel, Some(on_message.as_ref().unchecked_ref())) {
            // A page that refuses the handler gets no channel: storage events remain.
            dom::close(&channel);
            return None;
        }
        p.channels
            .push((namespace.to_owned(), channel.clone(), on_message));
        Some(channel)
    })
}

/// A message from another tab, as [`post`] writes it: `None` for anything else. (Its `shared`
/// flag, which guards of earlier versions read, is not needed: a guard whose storage is the
/// origin's believes storage, not messages.)
fn read_message(data: &JsValue) -> Option<Message> {
    let field = |k: &str| Reflect::get(data, &JsValue::from_str(k)).ok();
    Some(Message {
        kind: field("type")?.as_string()?,
        user: field("userId").and_then(|v| v.as_string()),
        guest: field("guestKey").and_then(|v| v.as_string()),
    })
}

/// Posts `message` to the other tabs on `namespace`'s channel.
pub(super) fn post(namespace: &str, message: &Message, shared: bool) {
    let Some(channel) = channel(namespace) else {
        return;
    };
    let text = |v: &Option<String>| v.as_deref().map_or(JsValue::NULL, JsValue::from_str);
    let object = Object::new();
    let _ = Reflect::set(&object, &"type".into(), &JsValue::from_str(&message.kind));
    let _ = Reflect::set(&object, &"shared".into(), &shared.into());
    let _ = Reflect::set(&object, &"userId".into(), &text(&message.user));
    let _ = Reflect::set(&object, &"guestKey".into(), &text(&message.guest));
    let _ = channel.post_message(&object);
}

#[wasm_bindgen]
extern "C" {
    /// `navigator.locks`, the Web Locks API.
    type LockManager;
    #[wasm_bindgen(method, catch)]
    fn request(
        this: &LockManager,
        name: &str,
        options: &Object,
        callback: &Function,
    ) -> Result<Promise, JsValue>;
}

/// `navigator.locks`, if the page has it.
fn locks() -> Option<LockManager> {
    let navigator = Reflect::get(&js_sys::global(), &JsValue::from_str("navigator")).ok()?;
    let locks = Reflect::get(&navigator, &JsValue::from_str("locks")).ok()?;
    let request = Reflect::get(&locks, &JsValue::from_str("request")).ok()?;
    request.is_function().then(|| locks.unchecked_into())
}

thread_local! {
    /// Called with a lock's id once the browser grants it: the machine hears it, and the lock
    /// is held until the promise it returns settles ([`unlock`]).
    static ON_LOCKED: Closure<dyn FnMut(JsValue) -> JsValue> = Closure::new(|lock: JsValue| {
        let lock = LockId(lock.as_f64().unwrap_or_default() as u32);
        let mut release = None;
        let held = Promise::new(&mut |resolve, _| release = Some(resolve));
        let wanted = handles(|h| {
            let slot = h.locks.iter_mut().find(|(l, _, _)| *l == lock)?;
            slot.2 = release;
            Some(())
        })
        .flatten()
        .is_some();
        if !wanted {
            // Let go before it came: held no longer than this.
            return Promise::resolve(&JsValue::UNDEFINED).into();
        }
        dispatch(Event::Locked(lock));
        held.into()
    });
    /// What a lock's request rejects with (aborted before it came) is not the page's.
    static IGNORE: Closure<dyn FnMut(JsValue)> = Closure::new(|_: JsValue| {});
}

/// Asks for the Web Lock `name`; without a lock manager (an insecure context, an old
/// browser), or one that refuses, the machine hears so (what follows is its to decide).
pub(super) fn lock(lock: LockId, name: &str) {
    let Some(locks) = locks() else {
        return dispatch(Event::NoLock(lock));
    };
    let controller = AbortController::new().ok();
    let options = Object::new();
    if let Some(signal) = controller.as_ref().and_then(dom::signal_of) {
        let _ = Reflect::set(&options, &JsValue::from_str("signal"), &signal);
    }
    handles(|h| h.locks.push((lock, controller, None)));
    let granted = ON_LOCKED.with(|f| super::exec::bound(f.as_ref(), lock.0));
    match locks.request(name, &options, &granted) {
        // Its rejection (aborted before it came) is not the page's.
        Ok(requested) => {
            IGNORE.with(|ignore| {
                let ignore: &Function = ignore.as_ref().unchecked_ref();
                super::exec::then2(&requested, ignore, ignore);
            });
        }
        Err(_) => {
            handles(|h| h.locks.retain(|(l, _, _)| *l != lock));
            dispatch(Event::NoLock(lock));
        }
    }
}

/// Lets lock `lock` go: held, it is released; still asked for, the asking is aborted.
pub(super) fn unlock(lock: LockId) {
    let Some((_, controller, release)) =
        handles(|h| take(&mut h.locks, |(l, _, _)| *l == lock)).flatten()
    else {
        return;
    };
    match (release, controller) {
        (Some(release), _) => {
            let _ = release.call0(&JsValue::UNDEFINED);
        }
        (None, Some(controller)) => dom::abort(&controller),
        (None, None) => {}
    }
}
