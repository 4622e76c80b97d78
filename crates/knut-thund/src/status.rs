//! Functional status: honest green/red rows of what works, as checked live.
//!
//! Each check records one row (`component`, `check`, ok or not, `detail`), emits it as a tracing
//! event, and keeps it in a process-wide list that the run summary and `thund doctor` print. A
//! row is only ever written by code that just performed the check — never assumed.

use std::sync::Mutex;

use serde::Serialize;

/// One checked fact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusRow {
    /// What was checked (`knut-thund/backend_spark`).
    pub component: String,
    /// The check (`lower_to_sdp`).
    pub check: String,
    /// Whether it worked.
    pub ok: bool,
    /// What was seen (`sc://localhost:15002`, an error message).
    pub detail: String,
}

static ROWS: Mutex<Vec<StatusRow>> = Mutex::new(Vec::new());

/// Records the outcome of a check that was just performed, and returns `ok` for chaining.
pub fn functional_status(component: &str, check: &str, ok: bool, detail: impl Into<String>) -> bool {
    let row = StatusRow { component: component.into(), check: check.into(), ok, detail: detail.into() };
    if ok {
        tracing::info!(target: "thund::status", component = %row.component, check = %row.check, detail = %row.detail, "ok");
    } else {
        tracing::warn!(target: "thund::status", component = %row.component, check = %row.check, detail = %row.detail, "failed");
    }
    if let Ok(mut rows) = ROWS.lock() {
        rows.push(row);
    }
    ok
}

/// Every row recorded so far in this process.
pub fn status_rows() -> Vec<StatusRow> {
    ROWS.lock().map(|r| r.clone()).unwrap_or_default()
}

/// Renders rows as an aligned table.
pub fn render_table(rows: &[StatusRow]) -> String {
    // Capped: Rust's formatter refuses widths past u16::MAX; a longer cell
    // overflows its column instead.
    let w0 = rows.iter().map(|r| r.component.len()).max().unwrap_or(0).clamp(9, 64);
    let w1 = rows.iter().map(|r| r.check.len()).max().unwrap_or(0).clamp(5, 64);
    let mut s = format!("{:w0$}  {:w1$}  {:4}  detail\n", "component", "check", "ok");
    for r in rows {
        let ok = if r.ok { "ok" } else { "FAIL" };
        s.push_str(&format!("{:w0$}  {:w1$}  {:4}  {}\n", r.component, r.check, ok, r.detail));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_rows_and_renders_them() {
        assert!(!functional_status("knut-thund/test", "probe", false, "refused"));
        let rows = status_rows();
        let row = rows.iter().find(|r| r.component == "knut-thund/test").unwrap();
        assert!(!row.ok);
        assert!(render_table(&rows).contains("knut-thund/test  probe"));
    }

    #[test]
    fn a_name_longer_than_any_column_overflows_it() {
        let long = "x".repeat(100_000);
        let row = StatusRow { component: long.clone(), check: long.clone(), ok: true, detail: String::new() };
        assert!(render_table(&[row]).contains(&format!("{long}  {long}  ok")));
    }
}
