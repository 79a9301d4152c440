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
mod tests {
    use super::*;
    use crate::core::model::JobStatus;
    use serde_json::json;

    const EVENT: &str = "10a0bd9a-03c8-4737-9345-f4234ba86512";

    fn event(id: Value, status: &str) -> Value {
        json!({"id": id, "channel_id": "c1", "job_id": EVENT, "user_id": "1",
               "status": status, "errors": [], "result_url": null})
    }

    fn page_of(v: Value) -> Result<EventPage, GuardError> {
        EventPage::from_text(&v.to_string(), false)
    }

    fn id(s: &str) -> Option<EventId> {
        EventId::parse(s)
    }

    #[test]
    fn a_page_from_its_text_skips_an_event_nested_too_deeply_and_applies_the_rest() {
        let deep = (0..100).fold(json!(1), |v, _| json!([v]));
        let done = json!({"id": "1700000000012-0", "channel_id": "c", "job_id": "j",
                          "user_id": "1", "status": "done"});
        let text = json!({"result": [
            {"id": "1700000000014-0", "channel_id": "c", "job_id": "j", "user_id": "1",
             "status": "error", "errors": [deep]},
            done,
        ], "other": [1.5]})
        .to_string();
        let page = EventPage::from_text(&text, false).unwrap();
        assert_eq!(
            (page.events.len(), page.skipped, page.partial),
            (1, 1, false)
        );
        // The skipped event was read: its id moves the cursor past it.
        assert_eq!(page.last_id, id("1700000000014-0"));
        for bad in ["", "[]", "{\"result\": 5}", "{\"result\": [] } x", "2.5"] {
            assert_eq!(
                EventPage::from_text(bad, false).unwrap_err().code(),
                "invalid_job",
                "{bad}"
            );
        }
    }

    #[test]
    fn an_event_whose_errors_hold_a_lone_surrogate_is_read_as_json_parse_reads_it() {
        // As Python's json.dumps writes a lone surrogate (and JSON.stringify does).
        let text = r#"{"result": [{"id": "9-0", "channel_id": "c1", "job_id": "j", "user_id": "1",
            "status": "error", "errors": [{"message": "bad \ud800 byte"}], "result_url": null}]}"#;
        let page = EventPage::from_text(text, false).unwrap();
        assert_eq!((page.events.len(), page.skipped), (1, 0));
        assert_eq!(page.events[0].status, JobStatus::Error);
        assert_eq!(page.events[0].errors[0]["message"], "bad \u{FFFD} byte");
    }

    #[test]
    fn a_page_keeps_its_valid_events_and_its_greatest_id() {
        let page = page_of(json!({"result": [
            event(json!("5-0"), "done"),
            event(json!("7-1"), "paused"),
            {"id": "6-0", "job_id": 3},
            event(json!("nope"), "error"),
            event(json!(null), "running"),
            5, "x", [1, [2]], null, true,
        ]}))
        .unwrap();
        assert_eq!(page.events.len(), 3);
        assert_eq!(page.events[0].status, JobStatus::Done);
        assert_eq!(page.events[2].status, JobStatus::Running);
        assert_eq!((page.skipped, page.unknown), (7, 1));
        assert_eq!(page.last_id, id("7-1"));
        assert!(!page.partial);

        let empty = page_of(json!({"result": []})).unwrap();
        assert_eq!(
            (empty.events.len(), empty.last_id, empty.skipped),
            (0, None, 0)
        );
        for bad in [
            json!({"result": null}),
            json!({"result": {}}),
            json!({}),
            json!([]),
            json!("x"),
        ] {
            assert_eq!(
                EventPage::from_text(&bad.to_string(), false)
                    .unwrap_err()
                    .code(),
                "invalid_job"
            );
        }
    }

    #[test]
    fn more_events_than_a_page_holds_are_read_up_to_the_limit() {
        let many: Vec<Value> = (0..=MAX_EVENTS_PER_PAGE)
            .map(|i| event(json!(format!("{i}-0")), "done"))
            .collect();
        let all = page_of(json!({ "result": many[..MAX_EVENTS_PER_PAGE] })).unwrap();
        assert_eq!((all.events.len(), all.partial), (1000, false));
        let over = page_of(json!({ "result": many })).unwrap();
        assert_eq!((over.events.len(), over.partial), (1000, true));
        assert_eq!(
            over.last_id,
            id("999-0"),
            "the next poll reads on from here"
        );
    }

    /// A page of Superset's size: 100 error events, each with messages of `message_len`.
    fn superset_page(message_len: usize) -> String {
        let events: Vec<Value> = (0..100)
            .map(|i| {
                let mut e = event(json!(format!("1700000000{i:03}-0")), "error");
                e["job_id"] = json!(format!("job-{i}"));
                e["errors"] = json!([{"message": "m".repeat(message_len), "error_type": "X"}]);
                e
            })
            .collect();
        json!({ "result": events }).to_string()
    }

    #[test]
    fn a_page_of_supersets_size_is_read_whole() {
        let text = superset_page(1200);
        assert!(text.len() > 120_000, "{}", text.len());
        let page = EventPage::from_text(&text, false).unwrap();
        assert_eq!(
            (page.events.len(), page.skipped, page.partial),
            (100, 0, false)
        );
        assert_eq!(page.last_id, id("1700000000099-0"));
    }

    #[test]
    fn a_page_cut_short_gives_the_events_read_whole_and_the_next_poll_reads_on() {
        let text = superset_page(1200);
        // Cut in the middle of the 41st event.
        let at = text.match_indices("\"id\"").nth(40).unwrap().0 + 30;
        let page = EventPage::from_text(&text[..at], true).unwrap();
        assert_eq!(
            (page.events.len(), page.skipped, page.partial),
            (40, 0, true)
        );
        assert_eq!(
            page.last_id,
            id("1700000000039-0"),
            "the 41st is read next time"
        );
        // An event larger than the page limit, the first of its page: passed over.
        // (Superset writes an event's `id` first; `json!` would sort the keys.)
        let huge = format!(
            r#"{{"result": [{{"id": "1700000000100-0", "channel_id": "c1", "job_id": "{EVENT}", "user_id": "1", "status": "error", "errors": [{{"message": "{}"}}]}}]}}"#,
            "m".repeat(5000)
        );
        let page = EventPage::from_text(&huge[..2000], true).unwrap();
        assert_eq!(
            (page.events.len(), page.skipped, page.partial),
            (0, 1, true)
        );
        assert_eq!(page.last_id, id("1700000000100-0"));
        // Cut before any id: nothing to go on from.
        assert!(EventPage::from_text(&huge[..12], true).is_err());
    }

    #[test]
    fn a_page_that_breaks_after_some_events_passes_over_the_broken_one() {
        let deeper_than_serde_json_reads = (0..200).fold(json!(1), |v, _| json!([v]));
        let text = format!(
            r#"{{"result": [{}, {{"id": "2-0", "errors": {deeper_than_serde_json_reads}}}, {}]}}"#,
            event(json!("1-0"), "done"),
            event(json!("3-0"), "done"),
        );
        let page = EventPage::from_text(&text, false).unwrap();
        assert_eq!(
            (page.events.len(), page.skipped, page.partial),
            (1, 1, true)
        );
        assert_eq!(
            page.last_id,
            id("2-0"),
            "past the broken event; 3-0 comes next"
        );
        // Broken JSON after two events.
        let text = format!(
            "{{\"result\": [{}, {}, {{\"id\": \"9-0\", \"x\": tru",
            event(json!("7-0"), "done"),
            event(json!("8-0"), "running")
        );
        let page = EventPage::from_text(&text, false).unwrap();
        assert_eq!(
            (page.events.len(), page.skipped, page.partial),
            (2, 1, true)
        );
        assert_eq!(page.last_id, id("9-0"));
    }
}
