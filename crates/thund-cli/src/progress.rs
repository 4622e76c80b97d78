//! The live view of a run on a terminal: one line per flow showing its phase and how long it has
//! been in the run, redrawn in place while the flow works and left as a final line when it ends
//! (rows written, duration). Run-level messages and a failed flow's error print above the lines.
//!
//! Only used when stdout is a terminal; pipes and files get the plain event lines, and
//! `--format jsonl` one JSON object per event, so logs and scripts never see escape codes.

use std::collections::HashMap;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use knut_thund::backend::{RunEvent, RunPhase};

/// Live per-flow lines for one run.
pub(crate) struct Live {
    multi: MultiProgress,
    bars: HashMap<String, ProgressBar>,
    working: ProgressStyle,
    done: ProgressStyle,
    color: bool,
}

impl Live {
    /// A view drawing to stdout, at most 15 redraws a second.
    pub(crate) fn new() -> Self {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stdout_with_hz(15));
        let working = ProgressStyle::with_template("{spinner:.cyan} {prefix:40} {msg:9} {elapsed:>4}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner())
            .tick_chars("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏ ");
        let done = ProgressStyle::with_template("{prefix:42} {msg}").unwrap_or_else(|_| ProgressStyle::default_bar());
        let color = std::env::var_os("NO_COLOR").is_none();
        Live { multi, bars: HashMap::new(), working, done, color }
    }

    /// Shows one event: a flow's line changes phase; anything else prints above the lines.
    pub(crate) fn event(&mut self, e: &RunEvent) {
        let Some(phase) = e.phase.filter(|_| e.element != "run") else {
            let _ = match e.details.warning {
                Some(_) => self.multi.println(format!("warning: {}", e.message)),
                None => self.multi.println(&e.message),
            };
            return;
        };
        let bar = self.bars.entry(e.element.clone()).or_insert_with(|| {
            let bar = self.multi.add(ProgressBar::new_spinner().with_style(self.working.clone()));
            bar.set_prefix(e.element.clone());
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        });
        if bar.is_finished() {
            // A retried or re-reported flow: show its latest word above the lines.
            let _ = self.multi.println(format!("{} {}", phase.as_str(), e.message));
            return;
        }
        match phase {
            RunPhase::Queued | RunPhase::Planning | RunPhase::Starting | RunPhase::Running => {
                bar.set_message(phase.as_str());
            }
            _ => {
                let (on, off) = match phase {
                    _ if !self.color => ("", ""),
                    RunPhase::Completed => ("\x1b[32m", "\x1b[0m"),
                    RunPhase::Failed => ("\x1b[31m", "\x1b[0m"),
                    RunPhase::Skipped | RunPhase::Stopped => ("\x1b[33m", "\x1b[0m"),
                    _ => ("", ""),
                };
                let mut msg = format!("{on}{:9}{off}", phase.as_str());
                if let Some(n) = e.details.rows_written {
                    msg.push_str(&format!(" {n:>12} rows"));
                }
                if let Some(ms) = e.details.duration_ms {
                    msg.push_str(&format!(" {:>8.2}s", ms as f64 / 1000.0));
                }
                bar.set_style(self.done.clone());
                bar.finish_with_message(msg);
                if let (RunPhase::Failed, Some(err)) = (phase, &e.details.error) {
                    let _ = self.multi.println(format!("{}: {err}", e.element));
                }
            }
        }
    }

    /// Ends the view: lines of flows that never reported an end stay as they are.
    pub(crate) fn finish(self) {
        for bar in self.bars.values() {
            if !bar.is_finished() {
                bar.abandon();
            }
        }
        let _ = self.multi.clear();
    }
}
