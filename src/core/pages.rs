//! A page of the async_event stream (`GET /api/v1/async_event/`, `{ result: [event, …] }`),
//! read so that no page stops the stream.
//!
//! The page is read one event at a time by serde_json (its own nesting limit of 128 levels
//! holds the stack), and each event within the limits of every JSON from outside
//! ([`AnyJson`]: 64 levels, no `__proto__`). An event that cannot be read is skipped, and its
//! id, where it was read, still moves the cursor past it. A page read only in part (the start
//! of a page longer than the page limit, or one that breaks after some events) gives what it
//! read before that point: the next poll asks from the last id read and gets the rest.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::error::GuardError;
use super::follow::EventId;
use super::model::JobMetadata;
use super::quiet::Json;
use super::wire::AnyJson;

/// Most events one page may hold (Superset answers at most 100, `MAX_EVENT_COUNT`); the
/// events past them are read by the next poll.
pub const MAX_EVENTS_PER_PAGE: usize = 1000;

/// What a page's `result` must be.
pub const RESULT_RULE: &str = "`result` must be an array of async events";

/// A page of the async_event stream: its events of known statuses, and the id to read after
/// next time.
#[derive(Debug, Default, PartialEq)]
pub struct EventPage {
    /// The events that are valid job metadata of a status this guard knows, in order.
    pub events: Vec<JobMetadata>,
    /// The greatest valid event id read (an event skipped below counts: it was read).
    pub last_id: Option<EventId>,
    /// Events skipped: not valid job metadata (or nested too deeply), or of a status this
    /// guard does not know.
    pub skipped: usize,
    /// Of `skipped`, those of a status this guard does not know.
    pub unknown: usize,
    /// The page was read only in part: the start of a longer page, or one that broke (not
    /// JSON any more, or too many events) after what was read.
    pub partial: bool,
    /// The events read whole, skipped ones included.
    read: usize,
    /// The id of the event being read, until it is read whole.
    pending: Option<EventId>,
}

impl EventPage {
    /// Takes the page's next event: its `id` as sent, and what reading it
    /// ([`JobMetadata::read_event`]) gave. An event that could not be read, or has a status
    /// this guard does not know, is skipped, so one event the guard cannot read does not stop
    /// the stream; its id still counts (it was read).
    pub fn push(&mut self, id: Option<EventId>, event: Result<Option<JobMetadata>, GuardError>) {
        self.read += 1;
        self.pending = None;
        if id > self.last_id {
            self.last_id = id;
        }
        match event {
            Ok(Some(meta)) => self.events.push(meta),
            Ok(None) => {
                self.skipped += 1;
                self.unknown += 1;
            }
            Err(_) => self.skipped += 1,
        }
    }

    /// Reads a page from its text; `cut` says the text is only the start of the page (it was
    /// longer than the guard reads). Refused (`invalid_job`) only when nothing could be read:
    /// text that is not `{ result: [...] }`, or one that breaks before its first event's id.
    ///
    /// Where the text breaks after some events (`cut`, or JSON that breaks off), what was read
    /// before stands and the page is `partial`. The event that broke is skipped, its id moving
    /// the cursor past it, when it cannot be read any other way: the page was not cut (its
    /// JSON is broken), or it is the page's first event and the page was cut (an event larger
    /// than the page limit). An event cut short after others is read whole by the next poll.
    pub fn from_text(text: &str, cut: bool) -> Result<Self, GuardError> {
        let mut page = Self::default();
        let text = &*super::surrogates::mend(text);
        let mut json = serde_json::Deserializer::from_str(text);
        // `deserialize_any`, whose visitors refuse what they do not take with an error of
        // their own: serde_json's typed requests describe the value they meet, floats
        // included, which would bring core's float formatting into the module.
        let read = json
            .deserialize_any(PageVisitor(&mut page))
            .and_then(|found| json.end().map(|()| found));
        match read {
            Ok(true) => Ok(page),
            Ok(false) => Err(GuardError::InvalidJob(RESULT_RULE.to_owned())),
            Err(_) => {
                let pending = page.pending.take();
                if pending.is_some() && (!cut || page.read == 0) {
                    page.push(pending, Err(GuardError::InvalidJob(String::new())));
                }
                if page.read == 0 {
                    return Err(GuardError::InvalidJob(RESULT_RULE.to_owned()));
                }
                page.partial = true;
                Ok(page)
            }
        }
    }
}

/// A visitor's methods for the values it does not take: each refused with `$rule` (serde's
/// own defaults would describe the value met, floats included).
macro_rules! refuse_others {
    ($rule:expr; $($method:ident($($arg:ty)?)),+) => {
        $(
            fn $method<E: de::Error>(self $(, _: $arg)?) -> Result<Self::Value, E> {
                Err(E::custom($rule))
            }
        )+
    };
}

/// The page object: `result` read event by event; other keys passed over. Whether `result`
/// was there.
struct PageVisitor<'p>(&'p mut EventPage);

impl<'de> Visitor<'de> for PageVisitor<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(RESULT_RULE)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let page = self.0;
        let mut found = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "result" && !found {
                found = true;
                map.next_value_seed(Events(&mut *page))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<bool, A::Error> {
        Err(de::Error::custom(RESULT_RULE))
    }

    refuse_others!(RESULT_RULE; visit_bool(bool), visit_i64(i64), visit_u64(u64),
        visit_f64(f64), visit_str(&str), visit_unit());
}

/// The `result` array: each event pushed to the page as soon as it is read.
struct Events<'p>(&'p mut EventPage);

impl<'de> DeserializeSeed<'de> for Events<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Events<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(RESULT_RULE)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let page = self.0;
        loop {
            if page.read == MAX_EVENTS_PER_PAGE {
                // The events past these come with the next poll.
                return match seq.next_element::<IgnoredAny>()? {
                    Some(_) => Err(de::Error::custom("more events than a page may hold")),
                    None => Ok(()),
                };
            }
            if seq.next_element_seed(Event(&mut *page))?.is_none() {
                return Ok(());
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(de::Error::custom(RESULT_RULE))
    }

    refuse_others!(RESULT_RULE; visit_bool(bool), visit_i64(i64), visit_u64(u64),
        visit_f64(f64), visit_str(&str), visit_unit());
}

/// One event: its fields read as JSON values (its `id` noted as soon as it is read, so that
/// an event that breaks can be passed over), then read as an event whole.
struct Event<'p>(&'p mut EventPage);

impl<'de> DeserializeSeed<'de> for Event<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Event<'_> {
    /// Something that is not an object: skipped, with no id.
    fn not_an_event<E>(self) -> Result<(), E> {
        self.0
            .push(None, Err(GuardError::InvalidJob(String::new())));
        Ok(())
    }
}

impl<'de> Visitor<'de> for Event<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an async event")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let page = self.0;
        let mut fields = Map::new();
        let mut id = None;
        while let Some(key) = map.next_key::<String>()? {
            let value: Value = map.next_value()?;
            if key == "id" && id.is_none() {
                id = value.as_str().and_then(EventId::parse);
                page.pending.clone_from(&id);
            }
            fields.insert(key, value);
        }
        let event = Value::Object(fields);
        let event = AnyJson::deserialize(Json(&event))
            .map_err(|e| GuardError::InvalidJob(e.to_string()))
            .and_then(|AnyJson(event)| JobMetadata::read_event(Json(&event)));
        page.push(id, event);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        self.not_an_event()
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        self.not_an_event()
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        self.not_an_event()
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        self.not_an_event()
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        self.not_an_event()
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        self.not_an_event()
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.not_an_event()
    }
}

#[cfg(test)]
mod tests;
