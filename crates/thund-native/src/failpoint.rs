//! Failpoints: named places in the commit protocols where a test stops the process, to prove
//! that a crash at that exact step loses and duplicates nothing.
//!
//! `THUND_FAILPOINT=<point>` fails the first step of that name with an error;
//! `THUND_FAILPOINT=<point>@<flow or dataset>` only the one of that flow or dataset (its short or
//! qualified name). With `THUND_FAILPOINT_KILL` set the process aborts there instead, as a
//! `kill -9` would: no destructor, no flush, nothing written after the point.
//!
//! The points, in the order a batch reaches them:
//!
//! | point                     | where                                                          |
//! |---------------------------|----------------------------------------------------------------|
//! | `reset-after-marker`      | full refresh: the reset marker is written, nothing deleted yet |
//! | `reset-after-log`         | full refresh: the table's `_delta_log` is deleted, data not    |
//! | `reset-after-data`        | full refresh: the table is gone, its checkpoints not           |
//! | `stream-after-input`      | a streaming batch of any kind: its input recorded in `pending.json`, nothing written |
//! | `stream-after-intent`     | a streaming batch of any kind: `pending.json` written with the kind's state |
//! | `stream-after-new-columns` | a streaming table whose definition changed: its new columns committed, the batch not |
//! | `sink-after-rename`       | a file sink: the batch's files renamed into place, no marker   |
//! | `stream-after-commit`     | the rows committed (Delta commit or sink marker), checkpoint not |
//! | `cdc-after-history`, `cdc-after-vectors`, `cdc-after-commit` | an AUTO CDC batch (`streaming/cdc`), after its intent, before `stream-after-commit` |
//! | `incremental-after-values` | an incremental view with value counts: the counts committed, the state not (built from all rows: the state and the counts, the view not) |
//! | `incremental-after-state` | an incremental view: the state committed, the view not         |
//! | `incremental-after-view`  | an incremental view: both committed, the record not            |
//! | `refresh-after-commit`    | a materialized view replaced, its freshness record not         |
//! | `event-log-append`        | an event-log commit (the run goes on, with a warning)          |
//!
//! Reading one environment variable per step costs nothing next to the commits around it, so
//! the points are always compiled in: the binary tested is the binary shipped.

use std::fmt::Display;

use crate::error::{NativeError, Result};

/// Fails (or aborts) at step `point` of `scope` when `THUND_FAILPOINT` names it.
pub(crate) fn hit(point: &str, scope: impl Display) -> Result<()> {
    let Ok(wanted) = std::env::var("THUND_FAILPOINT") else { return Ok(()) };
    let matches = match wanted.split_once('@') {
        None => wanted == point,
        Some((p, s)) => {
            let scope = scope.to_string();
            p == point && (s == scope || scope.rsplit('.').next() == Some(s))
        }
    };
    if !matches {
        return Ok(());
    }
    if std::env::var_os("THUND_FAILPOINT_KILL").is_some() {
        std::process::abort();
    }
    Err(NativeError::Execution(format!("failpoint `{point}` of `{scope}`")))
}
