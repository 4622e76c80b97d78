//! `thund ui`: a read-only web view of one pipeline — its graph, its runs and each dataset's
//! last state — served on 127.0.0.1 by default.
//!
//! ```text
//!  browser ──GET /──────────────▶ index.html, app.js, app.css (built into the binary)
//!          ──GET /api/pipeline──▶ model::pipeline   the project's SQL, reloaded on each request
//!          ──GET /api/state─────▶ model::Folded     the event log folded: summarized once
//!          ──GET /api/runs/ID───▶ model::Folded       (`Overview`), then only new commits read
//!          ──GET /api/datasets/N▶ row count and schema of the stored table (`thund query`'s path)
//! ```
//!
//! The page polls `/api/state` every half second; a run of the project started anywhere (any
//! backend, any process) commits its events to the log as it goes (`thund_native::event_log`),
//! so the page follows it within a second. Nothing is fetched from the network: the page has no
//! dependencies. The server has no authentication, so it listens on the loopback interface unless
//! `--bind` says otherwise, and then warns.

mod model;

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use knut_thund::ir::{DatasetKind, Pipeline, QualifiedName};
use model::Folded;
use serde_json::{json, Value};
use thund_native::event_log::{self, LogReader, Polled};
use thund_native::EngineOptions;

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/app.css");

/// The server's state: where the project is, and the event log as last read.
struct App {
    start: PathBuf,
    /// The project as loaded at start: where its storage is, for the polled endpoints (the
    /// graph and dataset endpoints reload it, so edited SQL shows).
    pipeline: Pipeline,
    log: tokio::sync::Mutex<Log>,
    /// Where the server listens: the only address (besides `localhost`) a request may name.
    bound: SocketAddr,
}

/// The event log as read so far, and the state folded from it (on first ask).
#[derive(Default)]
struct Log {
    reader: Option<LogReader>,
    folded: Option<Folded>,
    state: Option<Arc<Value>>,
}

/// Serves the web view of the project at `start` until the process is interrupted.
pub(crate) fn serve(start: &Path, pipeline: &Pipeline, bind: IpAddr, port: u16) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(SocketAddr::new(bind, port))
            .await
            .with_context(|| format!("cannot listen on {bind}:{port}"))?;
        let addr = listener.local_addr()?;
        if !bind.is_loopback() {
            eprintln!(
                "warning: thund ui has no authentication; on {bind} anyone who reaches this machine can read the \
                 pipeline's code, data counts and errors"
            );
        }
        let host = if addr.ip().is_unspecified() { "127.0.0.1".to_string() } else { addr.ip().to_string() };
        let host = if addr.is_ipv6() { format!("[{host}]") } else { host };
        println!("thund ui for pipeline `{}`: http://{host}:{}/ (Ctrl-C stops it)", pipeline.name, addr.port());
        let app = Arc::new(App {
            start: start.to_path_buf(),
            pipeline: pipeline.clone(),
            log: tokio::sync::Mutex::new(Log::default()),
            bound: addr,
        });
        loop {
            let (stream, _) = tokio::select! {
                accepted = listener.accept() => accepted?,
                _ = tokio::signal::ctrl_c() => return Ok(()),
            };
            let app = Arc::clone(&app);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| handle(Arc::clone(&app), req));
                let io = hyper_util::rt::TokioIo::new(stream);
                // A connection that breaks off is the browser's business, not the server's.
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
            });
        }
    })
}

async fn handle(app: Arc<App>, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let host = req.headers().get(hyper::header::HOST).and_then(|h| h.to_str().ok());
    if !host_allowed(host, app.bound) {
        return Ok(reply(
            StatusCode::FORBIDDEN,
            "text/plain",
            format!("thund ui answers only to localhost or {}\n", app.bound.ip()),
        ));
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return Ok(reply(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "read-only: GET only\n".into()));
    }
    let path = req.uri().path().to_string();
    let response = match path.as_str() {
        "/" | "/index.html" => reply(StatusCode::OK, "text/html; charset=utf-8", INDEX.into()),
        "/app.js" => reply(StatusCode::OK, "text/javascript; charset=utf-8", SCRIPT.into()),
        "/app.css" => reply(StatusCode::OK, "text/css; charset=utf-8", STYLE.into()),
        _ => match api(&app, &path).await {
            Ok(Some(v)) => reply(StatusCode::OK, "application/json", v.to_string()),
            Ok(None) => reply(StatusCode::NOT_FOUND, "application/json", json!({"error": "not found"}).to_string()),
            Err(e) => reply(
                StatusCode::INTERNAL_SERVER_ERROR,
                "application/json",
                json!({"error": format!("{e:#}")}).to_string(),
            ),
        },
    };
    Ok(response)
}

fn reply(status: StatusCode, content_type: &str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    let headers = r.headers_mut();
    if let Ok(v) = content_type.parse() {
        headers.insert(hyper::header::CONTENT_TYPE, v);
    }
    headers.insert(hyper::header::CACHE_CONTROL, hyper::header::HeaderValue::from_static("no-store"));
    // The page loads nothing from anywhere else, runs no inline code and is framed by no one.
    headers.insert(hyper::header::CONTENT_SECURITY_POLICY, hyper::header::HeaderValue::from_static(CSP));
    headers.insert(hyper::header::X_CONTENT_TYPE_OPTIONS, hyper::header::HeaderValue::from_static("nosniff"));
    r
}

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; \
                   frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// Whether a request's `Host` names this server: `localhost` or an address it listens on, with
/// its port. A page elsewhere whose name was made to resolve to this machine (DNS rebinding)
/// sends its own name, and is refused.
fn host_allowed(host: Option<&str>, bound: SocketAddr) -> bool {
    let Some(host) = host else { return false };
    let (name, port) = match host.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((name, after)) => (name, after.strip_prefix(':')),
            None => return false,
        },
        None => match host.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        },
    };
    if port.is_some_and(|p| p.parse::<u16>().ok() != Some(bound.port())) {
        return false;
    }
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match name.parse::<IpAddr>() {
        Ok(ip) => bound.ip().is_unspecified() || ip == bound.ip() || (ip.is_loopback() && bound.ip().is_loopback()),
        Err(_) => false,
    }
}

/// The JSON answer to `path`; `None` for what does not exist.
async fn api(app: &App, path: &str) -> anyhow::Result<Option<Value>> {
    let segments: Vec<String> = path
        .trim_start_matches('/')
        .split('/')
        .map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    match segments.as_slice() {
        ["api", "pipeline"] => {
            let p = load(&app.start)?;
            Ok(Some(model::pipeline(&p)))
        }
        // Polled twice a second: only commits made since the last poll are read, and the state
        // is folded again only when there were some.
        ["api", "state"] => {
            let mut log = fresh_log(app).await?;
            let log = &mut *log;
            let folded = log.folded.get_or_insert_with(Folded::default);
            let state = log.state.get_or_insert_with(|| Arc::new(folded.state()));
            Ok(Some(Value::clone(state)))
        }
        ["api", "runs", id] => {
            let log = fresh_log(app).await?;
            if let Some(run) = log.folded.as_ref().and_then(|f| f.run(id)) {
                return Ok(Some(run));
            }
            drop(log);
            // A run older than the log's first read: its events alone are read.
            let events = event_log::read_run(&app.pipeline, Some(id)).await?.map(|(_, events)| events);
            Ok(events.and_then(|events| model::run(&app.pipeline.root, &events, id)))
        }
        ["api", "datasets", name] => {
            let p = load(&app.start)?;
            let Some(d) = p.datasets.iter().find(|d| d.name.to_string() == *name) else { return Ok(None) };
            Ok(Some(stored(&p, &d.name, d.kind).await))
        }
        _ => Ok(None),
    }
}

fn load(start: &Path) -> anyhow::Result<Pipeline> {
    let p = knut_thund::frontend::load(start)?;
    p.validate()?;
    Ok(p)
}

/// The event log with what was committed since the last read folded in: summarized on the first
/// read and after a compaction rewrote it, otherwise read commit by commit.
async fn fresh_log(app: &App) -> anyhow::Result<tokio::sync::MutexGuard<'_, Log>> {
    let mut guard = app.log.lock().await;
    let log = &mut *guard;
    let (p, root) = (&app.pipeline, &app.pipeline.root);
    let reader = match &mut log.reader {
        Some(r) => r,
        None => log.reader.insert(LogReader::new(p)?),
    };
    let polled = if log.folded.is_none() { Polled::Rewritten } else { reader.poll().await? };
    match polled {
        Polled::Unchanged => {}
        Polled::Appended(events) => {
            if let Some(f) = &mut log.folded {
                f.add(root, &events);
            }
            log.state = None;
        }
        Polled::Rewritten => {
            log.folded = Some(Folded::from_overview(root, reader.overview().await?));
            log.state = None;
        }
    }
    Ok(guard)
}

/// The stored table of a dataset: its row count and schema, or why there is none.
async fn stored(p: &Pipeline, name: &QualifiedName, kind: DatasetKind) -> Value {
    if !kind.is_table() {
        return json!({"row_count": null, "schema": null, "why": format!("a {kind} stores no rows")});
    }
    match thund_native::table_summary(p, name, &EngineOptions::default()).await {
        Ok(Some((schema, rows))) => {
            let fields: Vec<Value> = schema
                .fields()
                .iter()
                .map(|f| {
                    json!({
                        "name": f.name(),
                        "type": thund_native::spark_type_name(f.data_type()),
                        "nullable": f.is_nullable(),
                    })
                })
                .collect();
            json!({"row_count": rows, "schema": fields})
        }
        Ok(None) => json!({"row_count": null, "schema": null, "why": "not written yet: run `thund run` first"}),
        Err(e) => json!({"row_count": null, "schema": null, "why": e.to_string()}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_requests_naming_this_server_are_answered() {
        let loopback: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        for ok in ["127.0.0.1:8080", "localhost:8080", "LOCALHOST", "127.0.0.1", "127.0.0.2:8080"] {
            assert!(host_allowed(Some(ok), loopback), "{ok}");
        }
        for refused in ["evil.example:8080", "evil.example", "127.0.0.1:9090", "10.0.0.1:8080", "[::1", "localhost:x"] {
            assert!(!host_allowed(Some(refused), loopback), "{refused}");
        }
        assert!(!host_allowed(None, loopback));
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert!(host_allowed(Some("10.0.0.1:8080"), any) && !host_allowed(Some("build-box:8080"), any));
        let v6: SocketAddr = "[::1]:8080".parse().unwrap();
        assert!(host_allowed(Some("[::1]:8080"), v6) && !host_allowed(Some("[::2]:8080"), v6));
    }
}
