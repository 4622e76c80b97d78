//! The spark-connect-sdp backend, in one place: what each Spark line can run
//! ([`capabilities`]), how the IR becomes an SDP dataflow graph ([`Pipeline::to_sdp`](crate::ir::Pipeline::to_sdp)),
//! and the backend that defines and runs that graph on a Spark Connect server
//! ([`SparkBackend`], feature `spark`).
//!
//! ```text
//!  PreparedRun ─to_sdp()→ DataflowGraph ─define_graph→ server ─start_run→ event sentences
//!       (capabilities of the detected server version       ─EventTranslator→ RunEvents + summary
//!        were checked by `prepare`)
//! ```
//!
//! The capabilities and the lowering need no network and build without the feature; only the
//! live backend needs the client of `knut-pipelines` (tonic, Arrow).

mod capabilities;
mod lower;

#[cfg(feature = "spark")]
mod backend;
#[cfg(feature = "spark")]
mod events;

#[cfg(feature = "spark")]
pub use backend::SparkBackend;
pub use capabilities::{any_version, capabilities, BACKEND_NAME};
pub use lower::file_view_name;
