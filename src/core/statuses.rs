//! The two contracts' statuses, and a record's status of either: what crosses as a name, what
//! ends a job, and an update's status that a later Superset may add.

use serde::{Deserialize, Deserializer};

use super::names::names;

/// Declares a contract's statuses: an enum of names ([`names!`]), which of them end a job,
/// and how a record's [`Status`] compares with them.
macro_rules! statuses {
    (
        $(#[$doc:meta])*
        $name:ident ($what:literal) {
            $($variant:ident = $text:literal,)+
        }
        terminal: $($terminal:ident)|+
    ) => {
        names! {
            $(#[$doc])*
            pub enum $name ($what) {
                $($variant = $text,)+
            }
        }

        impl $name {
            /// The statuses that end it: the server keeps nothing to cancel.
            pub fn is_terminal(self) -> bool {
                matches!(self, $($name::$terminal)|+)
            }
        }

        impl PartialEq<$name> for Status {
            fn eq(&self, other: &$name) -> bool {
                *self == Status::from(*other)
            }
        }
    };
}

statuses! {
    /// An async_event job's status (`cancelled` is the cancel-era terminal status).
    JobStatus ("not an async_event job status") {
        Pending = "pending",
        Running = "running",
        Done = "done",
        Error = "error",
        Cancelled = "cancelled",
    }
    terminal: Done | Error | Cancelled
}

statuses! {
    /// A task's status (the task framework's seven, `superset_core/tasks/types.py`).
    TaskStatus ("not a task status") {
        Pending = "pending",
        InProgress = "in_progress",
        Aborting = "aborting",
        Success = "success",
        Failure = "failure",
        Aborted = "aborted",
        TimedOut = "timed_out",
    }
    terminal: Success | Failure | Aborted | TimedOut
}

/// A record's status: a job's or a task's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Job(JobStatus),
    Task(TaskStatus),
}

impl From<JobStatus> for Status {
    fn from(status: JobStatus) -> Self {
        Status::Job(status)
    }
}

impl From<TaskStatus> for Status {
    fn from(status: TaskStatus) -> Self {
        Status::Task(status)
    }
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Job(s) => s.as_str(),
            Status::Task(s) => s.as_str(),
        }
    }

    pub fn is_terminal(self) -> bool {
        match self {
            Status::Job(s) => s.is_terminal(),
            Status::Task(s) => s.is_terminal(),
        }
    }
}

/// A status as it arrives in an update: one of the contract's, or a name this guard does not
/// know (a status a later Superset adds), which skips the update rather than refusing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatusName<S>(pub Option<S>);

impl<'de> Deserialize<'de> for StatusName<JobStatus> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|name| StatusName(JobStatus::from_name(&name)))
    }
}

impl<'de> Deserialize<'de> for StatusName<TaskStatus> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|name| StatusName(TaskStatus::from_name(&name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::names::assert_names;
    use serde_json::json;

    #[test]
    fn terminal_statuses() {
        let all = [
            JobStatus::Pending,
            JobStatus::Running,
            JobStatus::Done,
            JobStatus::Error,
            JobStatus::Cancelled,
        ];
        let terminal: Vec<_> = all
            .iter()
            .filter(|s| s.is_terminal())
            .map(|s| s.as_str())
            .collect();
        assert_eq!(terminal, ["done", "error", "cancelled"]);
    }

    #[test]
    fn statuses_cross_as_their_names_both_ways() {
        for &s in JobStatus::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
            assert_eq!(
                serde_json::from_value::<JobStatus>(json!(s.as_str())).unwrap(),
                s
            );
        }
        for &s in TaskStatus::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
            assert_eq!(
                serde_json::from_value::<TaskStatus>(json!(s.as_str())).unwrap(),
                s
            );
        }
        let names: std::collections::BTreeSet<_> =
            JobStatus::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(names.len(), JobStatus::ALL.len());
        let names: std::collections::BTreeSet<_> =
            TaskStatus::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(names.len(), TaskStatus::ALL.len());
        for bad in [
            json!("Running"),
            json!("timed-out"),
            json!(""),
            json!(1),
            json!(null),
        ] {
            assert!(serde_json::from_value::<JobStatus>(bad.clone()).is_err());
            assert!(serde_json::from_value::<TaskStatus>(bad).is_err());
        }
        // Each contract's statuses only.
        assert!(serde_json::from_value::<JobStatus>(json!("success")).is_err());
        assert!(serde_json::from_value::<TaskStatus>(json!("running")).is_err());
    }

    #[test]
    fn statuses_are_named_as_their_typescript_declarations() {
        assert_names!(JobStatus);
        assert_names!(TaskStatus);
    }
}
