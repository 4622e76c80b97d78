//! The scratch folder of a `thund test` run, where its tests' tables live: in a RAM file system
//! when there is one (`/dev/shm`), so a test never touches the disk — which also means a folder
//! left behind holds memory until the machine restarts. So none is left behind:
//!
//! - the run holds a lock on `<scratch>/.lock` for its lifetime (the OS drops it when the process
//!   ends, however it ends), and each run first removes the `thund-test-*` folders whose lock
//!   nobody holds: those of runs that were killed;
//! - Ctrl-C and SIGTERM remove the folder before the process exits (status 130).
//!
//! `THUND_TEST_SCRATCH` names another parent folder.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::Context;

const PREFIX: &str = "thund-test-";
const LOCK: &str = ".lock";

/// A run's scratch folder, removed when dropped.
pub(crate) struct Scratch {
    dir: tempfile::TempDir,
    /// Held while the run lives: what tells later runs this folder is not stale.
    _lock: File,
}

impl Scratch {
    /// Removes stale scratch folders, then makes this run's, locked.
    pub(crate) fn create() -> anyhow::Result<Self> {
        let parent = parent();
        sweep(&parent);
        let dir = tempfile::Builder::new()
            .prefix(PREFIX)
            .tempdir_in(&parent)
            .with_context(|| format!("creating the tests' scratch folder in {}", parent.display()))?;
        // Locked under another name, then renamed: a sweep never sees an unlocked `.lock` of a
        // live run.
        let staging = dir.path().join(".lock.new");
        let lock = File::create(&staging).with_context(|| format!("creating {}", staging.display()))?;
        lock.try_lock().with_context(|| format!("locking {}", staging.display()))?;
        std::fs::rename(&staging, dir.path().join(LOCK)).context("placing the scratch folder's lock")?;
        Ok(Scratch { dir, _lock: lock })
    }

    /// The folder.
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The folder's unique suffix, lower-cased: a name no other run (here or on another machine
    /// sharing a Spark server) is likely to take.
    pub(crate) fn id(&self) -> String {
        let name = self.dir.path().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        name.trim_start_matches(PREFIX).chars().filter(char::is_ascii_alphanumeric).collect::<String>().to_lowercase()
    }

    /// Removes the folder and exits with status 130 on Ctrl-C or SIGTERM.
    pub(crate) fn remove_on_signals(&self) {
        let path = self.dir.path().to_path_buf();
        std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
            let signalled = rt.block_on(async {
                let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok()?;
                tokio::select! {
                    r = tokio::signal::ctrl_c() => r.ok(),
                    _ = term.recv() => Some(()),
                }
            });
            if signalled.is_some() {
                eprintln!("interrupted: removing the tests' scratch folder");
                // The test under way keeps writing until the process ends, and a removal that
                // meets a file written meanwhile fails: try until the folder is gone, then end
                // at once (`_exit`: no exit handlers to run while that test writes again).
                for _ in 0..100 {
                    if std::fs::remove_dir_all(&path).is_ok() || !path.exists() {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                // SAFETY: `_exit` ends the process; nothing runs after it.
                unsafe { libc::_exit(130) };
            }
        });
    }
}

/// Where scratch folders go.
fn parent() -> PathBuf {
    if let Some(dir) = std::env::var_os("THUND_TEST_SCRATCH") {
        return PathBuf::from(dir);
    }
    let shm = Path::new("/dev/shm");
    match shm.is_dir() {
        true => shm.to_path_buf(),
        false => std::env::temp_dir(),
    }
}

/// Removes the scratch folders under `parent` whose lock no process holds. A folder without a
/// lock file may be a run's that is being set up (it has one a moment later): it is removed only
/// once it is an hour old (a folder an interrupted run's last write brought back).
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for e in entries.flatten() {
        if !e.file_name().to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let stale = match File::open(e.path().join(LOCK)) {
            Ok(lock) => lock.try_lock().is_ok(),
            Err(_) => {
                e.metadata().and_then(|m| m.modified()).is_ok_and(|t| t.elapsed().is_ok_and(|age| age.as_secs() > 3600))
            }
        };
        if stale {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}
