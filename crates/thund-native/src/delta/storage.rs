//! The storage layout under a pipeline's `storage` root.
//!
//! ```text
//! <storage>/
//!   tables/<catalog>/<database>/<name>/     one Delta table per materialized view / streaming table
//!   views/<catalog>/<database>/<name>.json  persistent view definitions (for `thund query`)
//!   checkpoints/<catalog>/<database>/<table>/<flow>/state.json   streaming progress (`checkpoint`)
//!   checkpoints/<catalog>/<database>/<table>.reset  a full refresh under way (`streaming`)
//!   fingerprints/<catalog>/<database>/<name>.json   what each materialized view was computed from
//!   state/<catalog>/<database>/<name>/      aggregate state of an incrementally refreshed view
//!   state/<catalog>/<database>/<name>.json  which source version that state covers (`incremental`)
//!   state/<catalog>/<database>/<name>.values/  value counts of that view's minimums and maximums
//!   event_log/                              the event log of every run: a Delta table (`event_log`)
//!   run.lock                                held while a run writes (a second run fails fast)
//! ```
//! The root is a local folder (a path or a `file://` URL) or an S3 location (`s3://bucket/prefix`,
//! configured from the usual `AWS_*` environment variables: region, credentials, endpoint). Both
//! are reached through `object_store`, so everything above — Delta tables (through delta-rs),
//! checkpoints, fingerprints, state, events — lives under the root and a pipeline can run from any
//! machine that reaches it. JSON files are written whole (a local write goes to a temporary file
//! that is renamed; an object store put is atomic): a reader sees the old or the new file.
//!
//! The run lock is an OS file lock on a local root (released by the OS when a run dies, even on
//! `kill -9`), and on S3 an object held as a lease: created only if absent, renewed by its holder
//! every third of the lease (60 s, or `THUND_LOCK_LEASE` seconds) with a write conditional on its
//! own last one, deleted when the run ends. A run that died leaves a lease that expires; only
//! then does another run take it over, with a write conditional on the version it read, so two
//! runs never both hold it. Whether the holder's process lives is never judged from here: a
//! process id means nothing across containers or machines, only the lease's expiry does. A
//! holder that finds its lease taken over stops the run, and fails it if it had already
//! finished. Either lock records the id of the run holding it, cleared when that run ends: a
//! run that finds an id there knows that run was interrupted ([`RunLock::interrupted`]).
//!
//! Every key comes from a method of [`Storage`]: the layout is written down here and nowhere else.
//! A `Storage` also holds the last snapshot it loaded of each table (`latest_table`), so a run
//! that reads a table several times reads its log once and then only the commits made since.
//! A table's files replaced by an overwrite are deleted once past its retention (`table::vacuum`).
//! Each name component is escaped: anything but ASCII letters, digits, `_` and `-` is written as
//! `.XX` (hex), so a quoted name like `../x` (`.2E.2E.2Fx`) or `a/b` can never leave its folder.
//! `.` because it is the one escape character every layer keeps as it is: `%2E%2E` would be
//! decoded back to `..` in a URL, and object_store percent-encodes `~` in keys.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use deltalake::DeltaTable;
use futures::{StreamExt, TryStreamExt};
use knut_thund::ir::{Pipeline, QualifiedName};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutPayload, UpdateVersion};
use url::Url;

use crate::error::{NativeError, Result};

/// Folder name of the default storage root, beside the spec.
pub(crate) const DEFAULT_STORAGE_DIR: &str = ".thund";

/// Resolved storage root of one pipeline.
#[derive(Debug, Clone)]
pub(crate) struct Storage {
    /// The root, ending in `/`.
    url: Url,
    /// The store, rooted at `url`: keys are relative paths like `views/c/d/v.json`.
    store: Arc<dyn ObjectStore>,
    /// The folder, for a local root.
    local: Option<PathBuf>,
    /// The last snapshot loaded of each table (by key), shared by the clones of one run: opening
    /// a table reads its whole log, and a run reads the same table several times (to register it,
    /// to append to it, to stream from it after an upstream flow wrote it).
    snapshots: Arc<Mutex<HashMap<String, DeltaTable>>>,
    /// The tables' changes this run wrote or read, shared by the clones of one run: each view
    /// downstream of a changed table reads the change from here (`changes::Known`).
    changes: Arc<Mutex<crate::delta::changes::Known>>,
}

impl PartialEq for Storage {
    fn eq(&self, other: &Self) -> bool {
        self.url == other.url
    }
}

/// Encodes one name component so it is a single safe path segment.
pub(crate) fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            out.push(b as char);
        } else {
            out.push_str(&format!(".{b:02X}"));
        }
    }
    if out.is_empty() {
        out.push_str(".00");
    }
    out
}

/// `kind/<catalog>/<database>/<name>`, each component escaped.
fn name_key(kind: &str, name: &QualifiedName) -> String {
    format!(
        "{kind}/{}/{}/{}",
        encode_component(&name.catalog),
        encode_component(&name.database),
        encode_component(&name.name)
    )
}

/// URL schemes a storage root may have besides plain paths.
const REMOTE_SCHEMES: [&str; 2] = ["s3", "s3a"];

impl Storage {
    /// The storage of `p`: its spec's `storage` (a path — relative to the project root — a
    /// `file://` URL, or an `s3://` URL) or `<project>/.thund`.
    pub(crate) fn of(p: &Pipeline) -> Result<Self> {
        match p.storage.as_deref() {
            None => Self::at(p.root.join(DEFAULT_STORAGE_DIR)),
            Some(s) => {
                if s.starts_with("file://") {
                    // `file://store` is relative to the project, as a bare `store` is: resolving
                    // it against the working folder would silently use another, empty store.
                    Self::at(resolve_project_path(s, &p.root))
                } else if let Some((scheme, _)) = s.split_once("://") {
                    if !REMOTE_SCHEMES.contains(&scheme) {
                        return Err(NativeError::Storage(format!(
                            "storage `{s}`: the native backend stores on local paths, file:// and s3:// URLs"
                        )));
                    }
                    let url = Url::parse(&format!("{}/", s.trim_end_matches('/')))
                        .map_err(|e| NativeError::Storage(format!("storage `{s}`: {e}")))?;
                    Self::s3(url)
                } else if Path::new(s).is_absolute() {
                    Self::at(s)
                } else {
                    Self::at(p.root.join(s))
                }
            }
        }
    }

    /// A storage rooted at the local folder `root` (made absolute against the working folder).
    pub(crate) fn at(root: impl Into<PathBuf>) -> Result<Self> {
        let root: PathBuf = root.into();
        let root = std::path::absolute(&root).unwrap_or(root);
        let url = Url::from_directory_path(&root)
            .map_err(|_| NativeError::Storage(format!("storage `{}` is not a folder path", root.display())))?;
        let prefix = ObjectPath::from_absolute_path(&root).unwrap_or_default();
        let fs = object_store::local::LocalFileSystem::new();
        let store = Arc::new(object_store::prefix::PrefixStore::new(fs, prefix));
        Ok(Storage { url, store, local: Some(root), snapshots: Arc::default(), changes: Arc::default() })
    }

    /// An S3 root; the store is configured from the `AWS_*` environment, as delta-rs's is.
    fn s3(url: Url) -> Result<Self> {
        register_object_stores();
        let bucket = url.host_str().unwrap_or_default().to_string();
        let s3 = object_store::aws::AmazonS3Builder::from_env()
            .with_url(format!("s3://{bucket}"))
            .build()
            .map_err(|e| NativeError::Storage(format!("storage `{url}`: {e}")))?;
        let prefix = ObjectPath::from(url.path().trim_matches('/'));
        let store = Arc::new(object_store::prefix::PrefixStore::new(s3, prefix));
        Ok(Storage { url, store, local: None, snapshots: Arc::default(), changes: Arc::default() })
    }

    /// The root folder of a local storage.
    pub(crate) fn local_root(&self) -> Option<&Path> {
        self.local.as_deref()
    }

    /// The URL of `key` under the root.
    pub(crate) fn url_of(&self, key: &str) -> Url {
        self.url.join(key).unwrap_or_else(|_| self.url.clone())
    }

    /// Where `key` is, for messages: a local path or a URL.
    pub(crate) fn display(&self, key: &str) -> String {
        match &self.local {
            Some(root) => root.join(key).display().to_string(),
            None => self.url_of(key).to_string(),
        }
    }

    /// Key of the Delta table of `name`.
    pub(crate) fn table_key(&self, name: &QualifiedName) -> String {
        name_key("tables", name)
    }

    /// URL of the Delta table folder of `name` (ends in `/`).
    pub(crate) fn table_url(&self, name: &QualifiedName) -> Url {
        self.url_of(&format!("{}/", self.table_key(name)))
    }

    /// Key of the definition of persistent view `name`.
    pub(crate) fn view_key(&self, name: &QualifiedName) -> String {
        format!("{}.json", name_key("views", name))
    }

    /// The folder (key) of every checkpoint of flows writing `target`.
    pub(crate) fn table_checkpoints(&self, target: &QualifiedName) -> String {
        name_key("checkpoints", target)
    }

    /// The checkpoint folder (key) of `flow` writing `target`.
    pub(crate) fn checkpoint_dir(&self, target: &QualifiedName, flow: &QualifiedName) -> String {
        format!("{}/{}", self.table_checkpoints(target), encode_component(&flow.to_string()))
    }

    /// Key of the Delta table of changes an AUTO CDC `flow` into `target` applied.
    pub(crate) fn cdc_history_key(&self, target: &QualifiedName, flow: &QualifiedName) -> String {
        format!("{}/history", self.checkpoint_dir(target, flow))
    }

    /// Key of the open windows' rows that batch `batch` of `flow` leaves for the next one. Each
    /// batch writes its own, so a batch that crashes before it commits never touches the state
    /// the checkpoint still names.
    pub(crate) fn window_state_key(&self, target: &QualifiedName, flow: &QualifiedName, batch: i64) -> String {
        format!("{}/windows-{batch}.arrow", self.checkpoint_dir(target, flow))
    }

    /// The marker of a full refresh of `target` under way.
    pub(crate) fn reset_marker(&self, target: &QualifiedName) -> String {
        format!("{}.reset", self.table_checkpoints(target))
    }

    /// Key of what materialized view `name` was last computed from.
    pub(crate) fn fingerprint_key(&self, name: &QualifiedName) -> String {
        format!("{}.json", name_key("fingerprints", name))
    }

    /// Key of the aggregate state table of incrementally refreshed view `name`.
    pub(crate) fn state_table_key(&self, name: &QualifiedName) -> String {
        name_key("state", name)
    }

    /// Key of the value counts of the minimums and maximums of incrementally refreshed view `name`.
    pub(crate) fn values_table_key(&self, name: &QualifiedName) -> String {
        format!("{}.values", name_key("state", name))
    }

    /// Key of the record of which versions the state of view `name` covers.
    pub(crate) fn state_record_key(&self, name: &QualifiedName) -> String {
        format!("{}.json", name_key("state", name))
    }

    /// Key of the event log's Delta table.
    pub(crate) fn event_log_key(&self) -> String {
        "event_log".into()
    }

    /// URL of the event log's Delta table folder (ends in `/`).
    pub(crate) fn event_log_url(&self) -> Url {
        self.url_of(&format!("{}/", self.event_log_key()))
    }

    fn err(&self, key: &str, e: object_store::Error) -> NativeError {
        NativeError::Storage(format!("{}: {e}", self.display(key)))
    }

    /// The bytes at `key`; `None` when there is nothing.
    pub(crate) async fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        match self.store.get(&ObjectPath::from(key)).await {
            Ok(r) => Ok(Some(r.bytes().await.map_err(|e| self.err(key, e))?.to_vec())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.err(key, e)),
        }
    }

    /// Writes `bytes` at `key`, whole.
    pub(crate) async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<()> {
        self.store.put(&ObjectPath::from(key), PutPayload::from(bytes)).await.map_err(|e| self.err(key, e))?;
        Ok(())
    }

    /// Reads a JSON file Þund wrote; `None` when it does not exist.
    pub(crate) async fn read_json<T: for<'de> serde::Deserialize<'de>>(&self, key: &str) -> Result<Option<T>> {
        match self.get(key).await? {
            None => Ok(None),
            Some(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| NativeError::Storage(format!("{}: unreadable: {e}", self.display(key)))),
        }
    }

    /// Writes JSON whole: a reader, or a restart after a crash, sees the old or the new file.
    pub(crate) async fn write_json<T: serde::Serialize>(&self, key: &str, value: &T) -> Result<()> {
        let text = serde_json::to_vec_pretty(value).map_err(|e| NativeError::Storage(e.to_string()))?;
        self.put(key, text).await
    }

    /// Whether something is at `key`.
    pub(crate) async fn exists(&self, key: &str) -> Result<bool> {
        match self.store.head(&ObjectPath::from(key)).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.err(key, e)),
        }
    }

    /// Deletes `key`; nothing there is fine.
    pub(crate) async fn delete(&self, key: &str) -> Result<()> {
        match self.store.delete(&ObjectPath::from(key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.err(key, e)),
        }
    }

    /// Every key under `prefix` (a folder), recursively, relative to the root.
    pub(crate) async fn list(&self, prefix: &str) -> Result<Vec<String>> {
        let listed: Vec<object_store::ObjectMeta> =
            match self.store.list(Some(&ObjectPath::from(prefix))).try_collect().await {
                Ok(v) => v,
                Err(object_store::Error::NotFound { .. }) => Vec::new(),
                Err(e) => return Err(self.err(prefix, e)),
            };
        Ok(listed.into_iter().map(|m| m.location.to_string()).collect())
    }

    /// Deletes everything under `prefix` (a folder).
    pub(crate) async fn delete_prefix(&self, prefix: &str) -> Result<()> {
        let keys = self.list(prefix).await?;
        let paths = futures::stream::iter(keys.into_iter().map(|k| Ok(ObjectPath::from(k)))).boxed();
        let deleted: Vec<_> = self.store.delete_stream(paths).collect().await;
        for d in deleted {
            match d {
                Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(self.err(prefix, e)),
            }
        }
        // Local folders stay behind empty otherwise.
        if let Some(root) = &self.local {
            match std::fs::remove_dir_all(root.join(prefix)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(NativeError::io(&root.join(prefix), e)),
            }
        }
        Ok(())
    }

    /// The latest committed version of the Delta table at `table_key` (`-1` when there is none),
    /// from its log's file names.
    pub(crate) async fn delta_version(&self, table_key: &str) -> Result<i64> {
        let log = self.list(&format!("{table_key}/_delta_log")).await?;
        Ok(log.iter().filter_map(|k| commit_version(k.rsplit('/').next()?)).max().unwrap_or(-1))
    }

    /// Whether a Delta table has been committed at `table_key`.
    pub(crate) async fn is_table(&self, table_key: &str) -> Result<bool> {
        Ok(self.delta_version(table_key).await? >= 0)
    }

    /// The table `name` at its latest version; `None` when it has no commit yet. A snapshot this
    /// storage loaded before is brought up to date by reading only the commits made since (none,
    /// when the table has not changed), instead of reading the whole log again.
    pub(crate) async fn latest_table(&self, name: &QualifiedName) -> Result<Option<DeltaTable>> {
        let key = self.table_key(name);
        let now = self.delta_version(&key).await?;
        if now < 0 {
            self.forget_table(name);
            return Ok(None);
        }
        let now = now as u64;
        let held = self.snapshots.lock().unwrap_or_else(|e| e.into_inner()).get(&key).cloned();
        let table = match held {
            Some(t) if t.version() == Some(now) => t,
            Some(mut t) if t.version().is_some_and(|held| held < now) => {
                t.update_incremental(Some(now)).await?;
                t
            }
            // None held, or one newer than the log: the table was deleted and created again.
            _ => deltalake::open_table(self.table_url(name)).await?,
        };
        self.snapshots.lock().unwrap_or_else(|e| e.into_inner()).insert(key, table.clone());
        Ok(Some(table))
    }

    /// The change of `name`'s table (of id `id`) from version `from` to `to`, if this run knows it.
    pub(crate) fn known_change(
        &self,
        name: &QualifiedName,
        id: &str,
        from: i64,
        to: i64,
    ) -> Option<Arc<crate::delta::changes::Changes>> {
        self.changes.lock().unwrap_or_else(|e| e.into_inner()).get(&self.table_key(name), id, from, to)
    }

    /// Keeps `changes` as the change of `name`'s table (of id `id`) from version `from` to `to`.
    pub(crate) fn remember_change(
        &self,
        name: &QualifiedName,
        id: &str,
        from: i64,
        to: i64,
        changes: Arc<crate::delta::changes::Changes>,
    ) {
        self.changes.lock().unwrap_or_else(|e| e.into_inner()).insert(&self.table_key(name), id, from, to, changes);
    }

    /// Drops the snapshot held of `name`: its table is being deleted (a full refresh).
    pub(crate) fn forget_table(&self, name: &QualifiedName) {
        self.snapshots.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.table_key(name));
    }

    /// Takes the run lock for `run` (its id and backend), failing fast if another run holds it.
    pub(crate) fn lock(&self, run: &LockedRun) -> Result<RunLock> {
        match &self.local {
            Some(root) => local_lock(root, run),
            None => remote_lock(self, run),
        }
    }
}

/// A run as its lock records it: the next run names it if it never ends.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct LockedRun {
    /// The run's id (its `update_id` in the event log).
    pub id: String,
    /// The backend it ran on.
    pub backend: String,
}

/// Locks `run.lock` under `root`. The file holds the holder's process id, run id and backend; a
/// run that ends empties it, so a run found there never ended.
fn local_lock(root: &Path, run: &LockedRun) -> Result<RunLock> {
    std::fs::create_dir_all(root).map_err(|e| NativeError::io(root, e))?;
    let path = root.join("run.lock");
    // Not truncated on open: the file is another run's until the lock is ours.
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| NativeError::io(&path, e))?;
    if file.try_lock().is_err() {
        return Err(NativeError::Locked(path.display().to_string()));
    }
    let mut before = String::new();
    let _ = std::io::Read::read_to_string(&mut &file, &mut before);
    let mut lines = before.lines().skip(1).map(str::trim);
    let interrupted = match (lines.next(), lines.next()) {
        (Some(id), backend) if !id.is_empty() => {
            Some(LockedRun { id: id.to_string(), backend: backend.unwrap_or_default().to_string() })
        }
        _ => None,
    };
    let record = || -> std::io::Result<()> {
        file.set_len(0)?;
        let mut f = &file;
        std::io::Seek::rewind(&mut f)?;
        f.write_all(format!("{}\n{}\n{}\n", std::process::id(), run.id, run.backend).as_bytes())?;
        f.sync_data()
    };
    record().map_err(|e| NativeError::io(&path, e))?;
    Ok(RunLock { held: Held::File(file), interrupted })
}

/// What a remote lock records about its holder. `token` tells this holder's lease from a later
/// one; `expires` (unix seconds) is when another run may take the lock over.
/// `host`, `pid` and `run` only tell a person (and the next run) who held it.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Holder {
    host: String,
    pid: u32,
    started: String,
    #[serde(default)]
    token: String,
    #[serde(default)]
    expires: u64,
    #[serde(default)]
    run: String,
    #[serde(default)]
    backend: String,
}

fn host_name() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "an unnamed host".into())
}

/// How long a remote lock lasts without renewal: [`DEFAULT_LEASE`], or `THUND_LOCK_LEASE`
/// seconds. Its holder renews it every third of that.
fn lease_length() -> std::time::Duration {
    let secs = std::env::var("THUND_LOCK_LEASE").ok().and_then(|s| s.trim().parse::<u64>().ok()).filter(|s| *s > 0);
    secs.map_or(DEFAULT_LEASE, std::time::Duration::from_secs)
}

/// How long a remote run lock is held without a renewal before another run may take it over.
pub(crate) const DEFAULT_LEASE: std::time::Duration = std::time::Duration::from_secs(60);

fn unix_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Takes `run.lock` in the object store as a lease, by conditional writes only: created if absent,
/// or taken over once its lease has expired by a write conditional on the version just read, so
/// of two runs taking over one lock, one wins. A heartbeat then renews the lease, each renewal
/// conditional on the holder's own last write. The calls run on a runtime of their own: this
/// happens before the run's runtime exists.
fn remote_lock(storage: &Storage, run: &LockedRun) -> Result<RunLock> {
    let key = "run.lock";
    let lease = lease_length();
    let me = Holder {
        host: host_name(),
        pid: std::process::id(),
        started: unix_now(),
        token: uuid::Uuid::new_v4().to_string(),
        expires: unix_secs() + lease.as_secs(),
        run: run.id.clone(),
        backend: run.backend.clone(),
    };
    let body = serde_json::to_vec(&me).map_err(|e| NativeError::Storage(e.to_string()))?;
    let path = ObjectPath::from(key);
    let (version, interrupted) = block_on_own_thread("take the run lock", async {
        let created = storage.store.put_opts(&path, PutPayload::from(body.clone()), PutMode::Create.into()).await;
        match created {
            Ok(r) => Ok((UpdateVersion { e_tag: r.e_tag, version: r.version }, None)),
            Err(object_store::Error::AlreadyExists { .. }) => {
                let held = storage.store.get(&path).await.map_err(|e| storage.err(key, e))?;
                let seen = UpdateVersion { e_tag: held.meta.e_tag.clone(), version: held.meta.version.clone() };
                let bytes = held.bytes().await.map_err(|e| storage.err(key, e))?;
                let holder: Option<Holder> = serde_json::from_slice(&bytes).ok();
                // Only the lease's expiry says its holder is gone: a process id read on this host
                // may belong to another machine, container or PID namespace.
                let now = unix_secs();
                let left = holder.as_ref().map_or(0, |h| h.expires.saturating_sub(now));
                let who = holder.as_ref().map_or_else(
                    || "unknown holder".to_string(),
                    |h| format!("host {} process {} since {}", h.host, h.pid, h.started),
                );
                let locked = |why: &str| NativeError::Locked(format!("{} ({who}; {why})", storage.url_of(key)));
                if holder.as_ref().is_some_and(|h| h.expires >= now) {
                    return Err(locked(&format!(
                        "its lease is renewed while that run lives; if it died, the lock is free in {left} s"
                    )));
                }
                let interrupted =
                    holder.filter(|h| !h.run.is_empty()).map(|h| LockedRun { id: h.run, backend: h.backend });
                match storage.store.put_opts(&path, PutPayload::from(body.clone()), PutMode::Update(seen).into()).await
                {
                    Ok(r) => Ok((UpdateVersion { e_tag: r.e_tag, version: r.version }, interrupted)),
                    Err(object_store::Error::Precondition { .. } | object_store::Error::AlreadyExists { .. }) => {
                        Err(locked("another run took the expired lock over first"))
                    }
                    Err(e) => Err(storage.err(key, e)),
                }
            }
            Err(e) => Err(storage.err(key, e)),
        }
    })?;
    Ok(RunLock { held: Held::Lease(Lease::start(storage.clone(), me, version, lease)), interrupted })
}

/// Runs `work` to its end on a thread and runtime of its own, for a caller that is not async (the
/// lock is taken before a run's runtime exists, released after it is gone) or that may be
/// inside a runtime, where another cannot block.
pub(crate) fn block_on_own_thread<T: Send>(what: &str, work: impl Future<Output = Result<T>> + Send) -> Result<T> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| NativeError::Storage(format!("cannot start a runtime to {what}: {e}")))?;
            rt.block_on(work)
        })
        .join()
        .unwrap_or_else(|_| Err(NativeError::Storage(format!("the thread to {what} panicked"))))
    })
}

/// A held remote lock: the heartbeat that renews it, and whether it was lost.
#[derive(Debug)]
pub(crate) struct Lease {
    token: String,
    stop: Arc<std::sync::atomic::AtomicBool>,
    lost: Arc<std::sync::atomic::AtomicBool>,
    heartbeat: Option<std::thread::JoinHandle<()>>,
}

impl Lease {
    fn start(storage: Storage, mut me: Holder, version: UpdateVersion, lease: std::time::Duration) -> Self {
        use std::sync::atomic::{AtomicBool, Ordering};
        let (stop, lost) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let token = me.token.clone();
        let beat = {
            let (stop, lost) = (Arc::clone(&stop), Arc::clone(&lost));
            move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
                let path = ObjectPath::from("run.lock");
                let mut version = version;
                let every = lease / 3;
                let mut last = std::time::Instant::now();
                while !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                    if last.elapsed() < every {
                        continue;
                    }
                    last = std::time::Instant::now();
                    me.expires = unix_secs() + lease.as_secs();
                    let Ok(body) = serde_json::to_vec(&me) else { continue };
                    let mode = PutMode::Update(version.clone());
                    match rt.block_on(storage.store.put_opts(&path, PutPayload::from(body), mode.into())) {
                        Ok(r) => version = UpdateVersion { e_tag: r.e_tag, version: r.version },
                        Err(object_store::Error::Precondition { .. } | object_store::Error::NotFound { .. }) => {
                            tracing::error!(lock = %storage.url_of("run.lock"), "the run lock was taken over: this run stops");
                            lost.store(true, Ordering::SeqCst);
                            return;
                        }
                        // A failed renewal is retried on the next beat; the lease outlasts two.
                        Err(e) => tracing::warn!(error = %e, "the run lock's lease could not be renewed"),
                    }
                }
            }
        };
        let heartbeat = std::thread::Builder::new().name("thund-lock-lease".into()).spawn(beat).ok();
        Lease { token, stop, lost, heartbeat }
    }

    /// Stops renewing.
    fn stop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(h) = self.heartbeat.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.stop();
    }
}

fn unix_now() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    format!("{secs} (unix seconds)")
}

/// Makes the object stores of remote storage roots (S3) known to delta-rs; once per process.
fn register_object_stores() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| deltalake::aws::register_handlers(None));
}

/// The version a Delta commit file's name (`00000000000000000007.json`) stands for.
pub(crate) fn commit_version(file_name: &str) -> Option<i64> {
    let stem = file_name.strip_suffix(".json")?;
    (stem.len() == 20 && stem.bytes().all(|b| b.is_ascii_digit())).then(|| stem.parse().ok()).flatten()
}

/// The commits in the log of the local Delta table at `table`, as (version, file), in no order;
/// none when it has no log, or a log without a commit (its creation died before its first).
pub(crate) fn local_commits(table: &Path) -> impl Iterator<Item = (i64, PathBuf)> {
    std::fs::read_dir(table.join("_delta_log"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((commit_version(e.file_name().to_str()?)?, e.path())))
}

/// A path a user wrote (a source, a sink), as a plain path or a `file://` URL; relative paths are
/// relative to the project root.
pub(crate) fn resolve_project_path(path: &str, root: &Path) -> PathBuf {
    let p = Path::new(path.strip_prefix("file://").unwrap_or(path));
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
    }
}

/// Held for the duration of a run. A local lock is released by the OS when the process ends,
/// even on a crash; an object lock by [`Storage::release`], or by its lease expiring.
#[derive(Debug)]
pub(crate) struct RunLock {
    held: Held,
    interrupted: Option<LockedRun>,
}

#[derive(Debug)]
enum Held {
    /// The locked `run.lock` file.
    File(File),
    /// `run.lock` in the object store, held as a renewed lease.
    Lease(Lease),
}

impl RunLock {
    /// Whether another run took the lock over (its lease was not renewed in time): this run must
    /// stop writing.
    pub(crate) fn lost(&self) -> bool {
        match &self.held {
            Held::File(_) => false,
            Held::Lease(l) => l.lost.load(std::sync::atomic::Ordering::SeqCst),
        }
    }

    /// The run that held the lock before and never ended (killed, or its machine lost): its
    /// events stop where it stopped, and it must not stay "running" in the event log.
    pub(crate) fn interrupted(&self) -> Option<&LockedRun> {
        self.interrupted.as_ref()
    }
}

impl Storage {
    /// Releases a run lock (deletes an object lock; empties a lock file, whose lock goes with its
    /// handle): the run ended.
    pub(crate) async fn release(&self, lock: RunLock) -> Result<()> {
        match lock.held {
            Held::File(f) => {
                // Emptied while still locked, so no next run reads this run's id as interrupted.
                f.set_len(0).map_err(|e| NativeError::Storage(format!("cannot clear the run lock: {e}")))?;
                drop(f);
                Ok(())
            }
            Held::Lease(mut lease) => {
                lease.stop();
                // Deleted only while it is still this run's lease (object stores have no
                // conditional delete: a takeover between the read and the delete is the gap).
                let held: Option<Holder> = self.read_json("run.lock").await.ok().flatten();
                if held.is_some_and(|h| h.token == lease.token) {
                    self.delete("run.lock").await?;
                }
                Ok(())
            }
        }
    }

    /// Whether `lock` is still this run's: a lease another run took over is not, even if this
    /// run's heartbeat has not noticed yet (it looks once per third of the lease).
    pub(crate) async fn still_holds(&self, lock: &RunLock) -> bool {
        match &lock.held {
            Held::File(_) => true,
            Held::Lease(lease) => {
                if lock.lost() {
                    return false;
                }
                match self.read_json::<Holder>("run.lock").await {
                    Ok(held) => held.is_some_and(|h| h.token == lease.token),
                    // Unreadable is not proof of loss: the heartbeat decides on its next beat.
                    Err(_) => true,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_names_stay_inside_the_storage_root() {
        let s = Storage::at("/st").unwrap();
        for evil in ["..", "../x", "a/b", "/etc/passwd", ".", "", "a\\b", "x\u{0}y"] {
            let key = s.table_key(&QualifiedName::new("c", "d", evil));
            let url = s.table_url(&QualifiedName::new("c", "d", evil));
            assert!(url.as_str().starts_with("file:///st/tables/c/d/"), "{evil:?} -> {url}");
            assert_eq!(url.path_segments().unwrap().filter(|p| !p.is_empty()).count(), 5, "{evil:?} -> {url}");
            assert_eq!(key.split('/').count(), 4, "{evil:?} -> {key}");
            assert!(!key.split('/').any(|c| c == ".." || c == "."), "{evil:?} -> {key}");
        }
        assert_eq!(encode_component("My Table"), "My.20Table");
        assert_eq!(encode_component("plain_name-1"), "plain_name-1");
    }

    #[test]
    fn a_second_lock_fails_fast() {
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::at(dir.path()).unwrap();
        let run = |id: &str| LockedRun { id: id.into(), backend: "native".into() };
        let first = s.lock(&run("one")).unwrap();
        assert!(matches!(s.lock(&run("two")), Err(NativeError::Locked(_))));
        drop(first);
        // `one` ended without releasing its lock: the next run learns it was interrupted.
        let second = s.lock(&run("two")).unwrap();
        assert_eq!(second.interrupted(), Some(&run("one")));
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(s.release(second)).unwrap();
        assert_eq!(s.lock(&run("three")).unwrap().interrupted(), None, "a released lock names no run");
    }
}
