//! `thund`: run Spark Declarative Pipelines embedded (DataFusion + Delta) or on Spark.
//!
//! `main` is thin, in ripgrep's shape: parse the flags (`cli`), run the command (`commands`),
//! and map the outcome to an exit code here, in one place: 0 ok; an error carries its kind
//! (`failure`): 2 for the user's input or configuration, 1 for a run or check that failed.
//! `backends` picks the backend a command runs on (every backend takes the same path);
//! `render` prints diagnostics, tables and graphs; `progress` is the live per-flow view a run
//! shows on a terminal (plain lines or JSON elsewhere); `sample` is what `thund init` writes;
//! `ui` is the web view `thund ui` serves; `explain` writes the refresh planning of a dry run
//! for a person.

mod backends;
mod cli;
mod commands;
mod explain;
mod failure;
mod memory;
mod progress;
mod render;
mod sample;
mod scratch;
mod testing;
mod ui;

use std::process::ExitCode;

use clap::Parser;

// Query execution allocates and frees large Arrow buffers at a high rate; the system allocator
// returned them to the OS and faulted them back in (a fifth of a TPC-H run's CPU time in page
// faults), mimalloc keeps them. Built without transparent huge pages (`no_thp`): with them,
// every region mimalloc touched was faulted in and zeroed 2 MiB at a time, and TPC-H SF1 peaked
// at 1.1–1.3 GiB instead of 0.7–1.0 GiB, at the same speed.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The diagnostics log on stderr: Þund's own warnings by default; the libraries' logs (the Delta
/// kernel's, DataFusion's, the HTTP stack's) only when `THUND_LOG` or `RUST_LOG` ask for them, so
/// a failed run shows its one message, not a library's backtrace. Colours only on a terminal.
fn init_tracing(format: cli::LogFormat) {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_env("THUND_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_env("RUST_LOG"))
        .unwrap_or_else(|_| {
            tracing_subscriber::EnvFilter::new("off,thund=warn,thund_native=warn,knut_thund=warn,knut_pipelines=warn")
        });
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(colour).with_writer(std::io::stderr);
    let _ = match format {
        cli::LogFormat::Json => builder.json().try_init(),
        cli::LogFormat::Text => builder.try_init(),
    };
}

fn main() -> ExitCode {
    // Like other command-line tools, end quietly when the reader of stdout goes away
    // (`thund query … | head`); Rust ignores SIGPIPE by default, so printing would panic. A run
    // cut short this way is crash-safe like any other interrupted run.
    #[cfg(unix)]
    // SAFETY: called first in `main`, before any other thread exists; restores the default
    // disposition of one signal.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = cli::Cli::parse();
    init_tracing(cli.log_format);
    let code = match commands::dispatch(cli.command) {
        Ok(()) => 0,
        Err(e) => {
            render::report_error(&e);
            failure::kind(&e).exit_code()
        }
    };
    exit_now(code)
}

/// Ends the process once its output is flushed. Everything a command writes is complete and
/// closed when `dispatch` returns; what `exit` would still do is hand every page of the
/// allocator's arenas back to the system one by one (hundreds of calls, several milliseconds
/// after a run) just before the process ends and the system takes them back anyway.
fn exit_now(code: u8) -> ExitCode {
    use std::io::Write;
    let flushed = std::io::stdout().flush().is_ok() && std::io::stderr().flush().is_ok();
    #[cfg(unix)]
    if flushed {
        // SAFETY: `_exit` ends the process; no thread of ours is writing (the runtime is gone).
        unsafe { libc::_exit(i32::from(code)) }
    }
    let _ = flushed;
    ExitCode::from(code)
}
