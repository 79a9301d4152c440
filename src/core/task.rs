//! What the task framework of today's Superset sends about tasks: the `202` bodies that start
//! them (chart data: `{ task_ids, cursor, tab_id? }`; SQL Lab: `{ async_job: { task_id,
//! cursor, tab_id? } }`), the websocket's `{ task_id, status }` and the polling answer
//! `{ statuses: { <uuid>: { status, progress } }, cursor }` (Superset's
//! `superset/tasks/api.py` and `superset/charts/data/api.py`). Each is read into a wire struct and validated, so
//! a value of these types is always valid: task ids are canonical uuids, tab ids follow
//! Superset's `^[A-Za-z0-9_-]{1,64}$`, statuses are the framework's seven.

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::error::GuardError;
use super::ids::{quote, TabId, TaskId};
use super::model::{StatusName, TaskStatus};
use super::wire::{self, AnyJson, Field, Object};

/// Most task ids one `202` body may name (a chart has one per query object).
pub const MAX_TASKS_PER_BODY: usize = 100;

const TASK_STATUSES: &str = "pending, in_progress, aborting, success, failure, aborted, timed_out";

/// The tasks a `202` body started, and the tab that asked for them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submission {
    /// Canonical uuids, each once, in the body's order.
    pub task_ids: Vec<TaskId>,
    pub tab_id: Option<TabId>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct SubmissionWire {
    task_ids: Field<Vec<IdWire>>,
    async_job: Field<Object<AsyncJobWire>>,
    tab_id: Field<Option<TabId>>,
    #[allow(dead_code)]
    cursor: Option<IgnoredAny>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct AsyncJobWire {
    task_id: Field<String>,
    tab_id: Field<Option<TabId>>,
}

/// One entry of `task_ids`: a string, or anything else (refused below, with the rule).
struct IdWire(Option<String>);

impl<'de> Deserialize<'de> for IdWire {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(IdWire(Field::<String>::deserialize(d)?.valid()))
    }
}

fn invalid(message: String) -> GuardError {
    GuardError::InvalidJob(message)
}

fn task_id(id: Option<&str>, name: &str) -> Result<TaskId, GuardError> {
    id.and_then(TaskId::parse).ok_or_else(|| {
        invalid(format!(
            "`{name}` must be a task uuid (8-4-4-4-12 hex digits), not \"{}\"",
            quote(id.unwrap_or("a non-string"))
        ))
    })
}

fn tab_id(field: Field<Option<TabId>>) -> Result<Option<TabId>, GuardError> {
    match field.nullable() {
        Ok(tab) => Ok(tab),
        Err(_) => Err(invalid(
            "`tab_id` must be 1 to 64 of A-Z, a-z, 0-9, _ and - (or absent)".to_owned(),
        )),
    }
}

impl Submission {
    /// Reads a chart-data or SQL Lab `202` body. One bad id refuses the whole body.
    pub fn read<'de, D: Deserializer<'de>>(value: D) -> Result<Self, GuardError> {
        let w: SubmissionWire = wire::read(
            value,
            "expected a 202 body: { task_ids, cursor, tab_id? } or { async_job: { task_id, cursor, tab_id? } }",
        )
        .map_err(invalid)?;
        let (ids, tab) = match (w.task_ids, w.async_job) {
            (Field::Valid(ids), Field::Missing) => (ids, w.tab_id),
            (Field::Missing, Field::Valid(Object(job))) if matches!(w.tab_id, Field::Missing) => {
                (vec![IdWire(job.task_id.valid())], job.tab_id)
            }
            (Field::Missing, Field::Missing) => {
                return Err(invalid(
                    "the body names no task: expected `task_ids` or `async_job`".to_owned(),
                ))
            }
            _ => {
                return Err(invalid(
                    "expected either `task_ids` (an array of uuids) or `async_job` (an object \
                     with `task_id`)"
                        .to_owned(),
                ))
            }
        };
        if ids.is_empty() || ids.len() > MAX_TASKS_PER_BODY {
            return Err(invalid(format!(
                "`task_ids` must name 1 to {MAX_TASKS_PER_BODY} tasks"
            )));
        }
        let mut task_ids: Vec<TaskId> = Vec::with_capacity(ids.len());
        for IdWire(id) in ids {
            let id = task_id(id.as_deref(), "task_ids")?;
            if !task_ids.contains(&id) {
                task_ids.push(id);
            }
        }
        Ok(Self {
            task_ids,
            tab_id: tab_id(tab)?,
        })
    }
}

/// One task's new status: `None` for a status this guard does not know (one a later Superset
/// adds), an update to skip.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusChange {
    pub task_id: TaskId,
    pub status: Option<TaskStatus>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct StatusWire {
    task_id: Field<String>,
    status: Field<StatusName<TaskStatus>>,
}

/// A task's status: a string is one (a name that is not one of the framework's seven is
/// unknown: `None`); anything else breaks the rule.
fn task_status(
    field: Field<StatusName<TaskStatus>>,
    task: &str,
) -> Result<Option<TaskStatus>, GuardError> {
    match field {
        Field::Valid(StatusName(status)) => Ok(status),
        Field::Missing | Field::Invalid => Err(invalid(format!(
            "the status of task {} must be a string, one of {TASK_STATUSES}",
            quote(task)
        ))),
    }
}

impl StatusChange {
    /// Reads the websocket's `{ task_id, status }` (other fields ignored).
    pub fn read<'de, D: Deserializer<'de>>(value: D) -> Result<Self, GuardError> {
        let w: StatusWire = wire::read(value, "expected { task_id, status }").map_err(invalid)?;
        let task_id = task_id(w.task_id.valid().as_deref(), "task_id")?;
        let status = task_status(w.status, &task_id)?;
        Ok(Self { task_id, status })
    }

    /// Reads a `status_changes` answer, `{ statuses: { <uuid>: { status, progress } }, cursor }`,
    /// whole: one malformed entry (not a uuid, not an object, a status that is not a string)
    /// refuses it all;
    /// an entry with a status this guard does not know is kept, as `None`, to be skipped.
    /// (`statuses` is read as the guard reads any JSON from outside: at most 64 levels deep.)
    pub fn read_all<'de, D: Deserializer<'de>>(value: D) -> Result<Vec<Self>, GuardError> {
        #[derive(Default, Deserialize)]
        #[serde(default)]
        struct ChangesWire {
            statuses: Field<AnyJson>,
            #[allow(dead_code)]
            cursor: Option<IgnoredAny>,
        }
        let w: ChangesWire = wire::read(value, "expected { statuses, cursor }").map_err(invalid)?;
        let Field::Valid(AnyJson(Value::Object(statuses))) = w.statuses else {
            return Err(invalid(
                "`statuses` must be an object of task uuids to { status, progress }".to_owned(),
            ));
        };
        statuses
            .into_iter()
            .map(|(id, entry)| {
                let task_id = task_id(Some(&id), "statuses")?;
                if !entry.is_object() {
                    return Err(invalid(format!(
                        "the entry of task {} in `statuses` must be an object {{ status, progress }}",
                        quote(&task_id)
                    )));
                }
                let status = match entry.get("status").map(Value::as_str) {
                    None => Field::Missing,
                    Some(None) => Field::Invalid,
                    Some(Some(name)) => Field::Valid(StatusName(TaskStatus::from_name(name))),
                };
                let status = task_status(status, &task_id)?;
                Ok(Self { task_id, status })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::quiet::Json;

    #[test]
    fn a_status_changes_entry_that_is_not_an_object_says_what_it_must_be() {
        let id = "4e7fa9eb-0c71-4a3e-9a35-5a0b3d1b4c01";
        let body = serde_json::json!({ "statuses": { id: "in_progress" }, "cursor": "c" });
        let e = StatusChange::read_all(Json(&body)).unwrap_err().to_string();
        assert!(e.contains("must be an object { status, progress }"), "{e}");
        let body =
            serde_json::json!({ "statuses": { id: { "status": "in_progress", "progress": 0 } } });
        let read = StatusChange::read_all(Json(&body)).unwrap();
        assert_eq!(read[0].status, Some(TaskStatus::InProgress));
    }
    use serde_json::{json, Value};

    const A: &str = "10a0bd9a-03c8-4737-9345-f4234ba86512";
    const B: &str = "2b1e0c5d-6f7a-4b8c-9d0e-1f2a3b4c5d6e";

    fn submission(v: Value) -> Result<Submission, GuardError> {
        Submission::read(Json(&v))
    }

    #[test]
    fn reads_chart_data_and_sql_lab_bodies() {
        let chart = submission(
            json!({"task_ids": [A, B.to_uppercase(), A], "cursor": "2026-09-01T10:00:00", "tab_id": "tab-1"}),
        )
        .unwrap();
        assert_eq!(chart.task_ids, [A, B]);
        assert_eq!(chart.tab_id.as_deref(), Some("tab-1"));
        let sql = submission(json!({"async_job": {"task_id": A, "cursor": "x"}})).unwrap();
        assert_eq!(
            sql,
            Submission {
                task_ids: vec![A.into()],
                tab_id: None
            }
        );
        let sql_tab =
            submission(json!({"async_job": {"task_id": A, "cursor": "x", "tab_id": "t_2"}}))
                .unwrap();
        assert_eq!(sql_tab.tab_id.as_deref(), Some("t_2"));
    }

    #[test]
    fn refuses_malformed_bodies_whole() {
        for (body, says) in [
            (json!(null), "202 body"),
            (json!([A]), "expected"),
            (json!({}), "names no task"),
            (json!({"task_ids": []}), "1 to 100"),
            (json!({"task_ids": A}), "either"),
            (json!({"task_ids": [A, "job-1"]}), "job-1"),
            (json!({"task_ids": [A, 5]}), "non-string"),
            (json!({"task_ids": [A], "tab_id": "a b"}), "tab_id"),
            (json!({"task_ids": [A], "tab_id": 3}), "tab_id"),
            (
                json!({"task_ids": [A], "async_job": {"task_id": A}}),
                "either",
            ),
            (json!({"async_job": {"task_id": "../x"}}), "uuid"),
            (json!({"async_job": {}}), "uuid"),
            (
                json!({"async_job": {"task_id": A}, "tab_id": "t"}),
                "either",
            ),
        ] {
            let err = submission(body.clone()).unwrap_err();
            assert_eq!(err.code(), "invalid_job", "{body}");
            assert!(err.to_string().contains(says), "{body}: {err}");
        }
        let many: Vec<String> = (0..=MAX_TASKS_PER_BODY)
            .map(|i| format!("10a0bd9a-03c8-4737-9345-{i:012x}"))
            .collect();
        assert!(submission(json!({ "task_ids": many })).is_err());
    }

    #[test]
    fn reads_status_messages_and_polling_answers() {
        let one =
            StatusChange::read(json!({"task_id": A, "status": "in_progress", "x": 1})).unwrap();
        assert_eq!(one.status, Some(TaskStatus::InProgress));
        let all = StatusChange::read_all(json!({
            "statuses": {A: {"status": "success", "progress": 1.0}, B: {"status": "aborting"}},
            "cursor": "2026-09-01T10:00:01"
        }))
        .unwrap();
        assert_eq!(all.len(), 2);
        assert!(all.contains(&StatusChange {
            task_id: B.into(),
            status: Some(TaskStatus::Aborting)
        }));
        assert!(
            StatusChange::read_all(json!({"statuses": {}, "cursor": "c"}))
                .unwrap()
                .is_empty()
        );
        // Statuses the framework does not have (a later Superset's, or the async_event
        // contract's) are unknown: kept as `None`, to be skipped.
        for unknown in ["paused", "done", "running", ""] {
            let one = StatusChange::read(json!({"task_id": A, "status": unknown})).unwrap();
            assert_eq!(one.status, None);
            let all = StatusChange::read_all(json!({
                "statuses": {A: {"status": unknown}, B: {"status": "success"}}
            }))
            .unwrap();
            assert_eq!(all.len(), 2);
            assert!(all.contains(&StatusChange {
                task_id: A.into(),
                status: None
            }));
        }
        for bad in [
            json!({"task_id": A, "status": 3}),
            json!({"task_id": A}),
            json!({"task_id": "x", "status": "success"}),
            json!({"status": "success"}),
        ] {
            assert_eq!(
                StatusChange::read(Json(&bad)).unwrap_err().code(),
                "invalid_job"
            );
        }
        for bad in [
            json!({"statuses": {A: {"status": null}}}),
            json!({"statuses": {A: {"progress": 1}}}),
            json!({"statuses": {"nope": {"status": "success"}}}),
            json!({"statuses": [A]}),
            json!({"cursor": "c"}),
        ] {
            assert_eq!(
                StatusChange::read_all(Json(&bad)).unwrap_err().code(),
                "invalid_job",
                "{bad}"
            );
        }
    }
}
