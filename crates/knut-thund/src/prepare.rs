//! Preparing a run, once, for every backend: a loaded pipeline, the run options and a backend's
//! [`Capabilities`] in; a validated, planned and checked [`PreparedRun`] out, or every problem at
//! once.
//!
//! ```text
//!  Pipeline + RunOptions + Capabilities ─prepare→ PreparedRun { pipeline, plan, options, run id }
//!     validate()          graph problems, with file:line
//!     plan(selection)     stages; unknown or conflicting selectors
//!     capabilities.check  what the backend lacks, with file:line
//! ```
//!
//! [`prepare_for`] is the sequence every caller uses: prepare against what the backend can run
//! before contacting anything (so a pipeline no server could run is refused without a server),
//! then [`ExecBackend::connect`], then the capability check again if connecting narrowed it.

use std::sync::Arc;
use std::time::SystemTime;

use crate::backend::{rfc3339, Capabilities, EventLog, ExecBackend, RunOptions};
use crate::error::{Result, ThundError};
use crate::ir::Pipeline;
use crate::plan::{plan, Plan};

/// A run that passed every check: what a backend's [`ExecBackend::start`] takes.
pub struct PreparedRun {
    /// The pipeline, valid.
    pub pipeline: Pipeline,
    /// Its stages and the selection.
    pub plan: Plan,
    /// How the run was asked for.
    pub options: RunOptions,
    /// What the backend was checked to run.
    pub capabilities: Capabilities,
    /// The run's id (sortable: UTC start time, then the process id).
    pub run_id: String,
    /// Where the run's events are recorded, if the caller attached a log.
    pub event_log: Option<Arc<dyn EventLog>>,
}

impl PreparedRun {
    /// Records the run's events in `log` too.
    pub fn with_event_log(mut self, log: Arc<dyn EventLog>) -> Self {
        self.event_log = Some(log);
        self
    }

    /// Whether this is a dry run (nothing is written).
    pub fn is_dry(&self) -> bool {
        self.options.dry
    }
}

impl std::fmt::Debug for PreparedRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedRun")
            .field("pipeline", &self.pipeline.name)
            .field("plan", &self.plan)
            .field("options", &self.options)
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

/// Validates `p`, plans `options.selection` and checks `p` against `capabilities`, reporting every
/// problem of the three at once (one error as itself, several as [`ThundError::Several`]).
pub fn prepare(p: &Pipeline, options: &RunOptions, capabilities: &Capabilities) -> Result<PreparedRun> {
    let mut problems = Vec::new();
    if let Err(e) = capabilities.check(p) {
        problems.push(e);
    }
    if let Err(e) = p.validate() {
        problems.push(e);
    }
    let plan = plan(p, &options.selection).map_err(|e| problems.push(e)).ok();
    match (plan, problems.len()) {
        (Some(plan), 0) => Ok(PreparedRun {
            pipeline: p.clone(),
            plan,
            options: options.clone(),
            capabilities: capabilities.clone(),
            run_id: new_run_id(),
            event_log: None,
        }),
        (_, 1) => Err(problems.remove(0)),
        _ => Err(ThundError::Several(problems)),
    }
}

/// Prepares `p` for `backend`: first against what it can run without being contacted, then, after
/// [`ExecBackend::connect`], against what it says it can run once connected.
pub fn prepare_for<B: ExecBackend + ?Sized>(backend: &B, p: &Pipeline, options: &RunOptions) -> Result<PreparedRun> {
    let offline = backend.capabilities();
    let mut run = prepare(p, options, &offline)?;
    backend.connect()?;
    let connected = backend.capabilities();
    if connected != offline {
        connected.check(p)?;
        run.capabilities = connected;
    }
    Ok(run)
}

/// A sortable, unique-enough run id: UTC time plus the process id.
fn new_run_id() -> String {
    let t = rfc3339(SystemTime::now());
    let compact: String = t.chars().filter(|c| c.is_ascii_digit()).take(17).collect();
    format!("{}T{}-{}", &compact[..8], &compact[8..], std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Feature;
    use crate::plan::Selection;

    #[test]
    fn reports_graph_selection_and_capability_problems_together() {
        let p = crate::frontend::load_sql(
            "CREATE MATERIALIZED VIEW a (CONSTRAINT c EXPECT (x > 0)) AS SELECT 1 AS x;\n\
             CREATE MATERIALIZED VIEW b AS SELECT * FROM nowhere;\n",
        );
        let options = RunOptions {
            selection: Selection { refresh: vec!["zzz".into()], ..Default::default() },
            ..Default::default()
        };
        let err = prepare(&p, &options, &Capabilities::none("test").with([Feature::Batch])).unwrap_err();
        let ThundError::Several(parts) = &err else { panic!("{err}") };
        assert!(matches!(parts[0], ThundError::Unsupported { .. }), "{err}");
        assert!(matches!(parts[1], ThundError::Validation(_)), "{err}");
        assert!(matches!(parts[2], ThundError::Selection(_)), "{err}");
        assert!(err.is_usage());
        let text = err.to_string();
        assert!(text.contains("a.sql:1:") && text.contains("nowhere") && text.contains("zzz"), "{text}");
    }

    /// A backend that can run expectations until it connects, and then cannot (as a Spark
    /// server of an older line narrows what was assumed before asking it).
    #[derive(Default)]
    struct Narrowing {
        connected: std::cell::Cell<bool>,
    }

    impl ExecBackend for Narrowing {
        fn capabilities(&self) -> Capabilities {
            let caps = Capabilities::none("narrowing").with([Feature::Batch, Feature::Expectations]);
            match self.connected.get() {
                true => caps.without(&Feature::Expectations),
                false => caps,
            }
        }

        fn connect(&self) -> Result<()> {
            self.connected.set(true);
            Ok(())
        }

        fn start(&self, _: PreparedRun) -> Result<Box<dyn crate::backend::RunHandle>> {
            Err(ThundError::Internal("this test starts nothing".into()))
        }
    }

    #[test]
    fn what_connecting_narrows_is_checked_again() {
        let p =
            crate::frontend::load_sql("CREATE MATERIALIZED VIEW a (CONSTRAINT c EXPECT (x > 0)) AS SELECT 1 AS x;\n");
        let backend: Box<dyn ExecBackend> = Box::new(Narrowing::default());
        assert!(prepare(&p, &RunOptions::default(), &backend.capabilities()).is_ok());
        let err = prepare_for(backend.as_ref(), &p, &RunOptions::default()).unwrap_err();
        let ThundError::Unsupported { gaps, .. } = &err else { panic!("{err}") };
        assert_eq!(gaps[0].feature, "expectations", "{err}");
    }

    #[test]
    fn a_good_pipeline_is_planned_with_a_run_id() {
        let p = crate::frontend::load_sql("CREATE MATERIALIZED VIEW a AS SELECT 1 AS x;\n");
        let run = prepare(&p, &RunOptions::default(), &Capabilities::none("t").with([Feature::Batch])).unwrap();
        assert_eq!(run.plan.stages.len(), 1);
        assert!(run.run_id.contains('T') && run.run_id.ends_with(&format!("-{}", std::process::id())));
    }
}
