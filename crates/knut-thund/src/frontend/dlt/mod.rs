//! Databricks DLT projects as they are: SQL notebook exports and pipeline settings files.
//!
//! The SQL dialect itself (`LIVE.` names, `LIVE TABLE`, `APPLY CHANGES INTO`, `cloud_files`) is
//! read by the statement and query parsers; this module turns the files around it into what
//! the rest of the front-end takes:
//!
//! - A **SQL notebook export** (first line `-- Databricks notebook source`) becomes a SQL file
//!   whose `-- COMMAND ----------` separators end statements (a cell's last statement needs no
//!   `;` in a notebook), line for line, so every position still points into the export. Cells
//!   in another language (`-- MAGIC %python`, …) define nothing here and are listed as notes.
//! - A **pipeline settings file** — the JSON of a pipeline's settings (also wrapped as
//!   `{"spec": …}` by the API) or a bundle's `resources/*.yml` — becomes a [`Spec`]: `name`,
//!   `catalog`, `target`/`schema`, `configuration`, `storage` (a local folder or an object store
//!   URL; a `dbfs:` path has no meaning here) and `libraries` (`file`, `notebook` and `glob`
//!   entries; workspace paths are found in the project by their longest existing suffix).
//!   Every other setting (`clusters`, `development`, `continuous`, `photon`, permissions, …)
//!   has no meaning for a local run and is listed as a note with its line, never silently
//!   dropped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_yaml::Value;

use crate::error::{Diagnostic, Result, ThundError};
use crate::ir::SourceLocation;
use crate::spec::{Library, LibraryGlob, Spec};

mod bundle;

/// The first line of a SQL notebook export.
pub const NOTEBOOK_HEADER: &str = "-- Databricks notebook source";
const CELL_SEPARATOR: &str = "-- COMMAND ----------";

/// The SQL of a notebook export (`None` if `text` is not one), with the notes about cells that
/// define nothing here.
pub fn notebook_sql(text: &str, file: &str, notes: &mut Vec<Diagnostic>) -> Option<String> {
    let first = text.lines().next()?;
    if first.trim_end() != NOTEBOOK_HEADER {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    // Whether the next non-blank line opens a cell.
    let mut cell_start = true;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let (body, end) = match line.strip_suffix('\n') {
            Some(b) => (b.strip_suffix('\r').unwrap_or(b), &line[b.len()..]),
            None => (line, ""),
        };
        if i == 0 {
            out.push_str(end);
            continue;
        }
        if body.trim_end() == CELL_SEPARATOR {
            out.push(';');
            out.push_str(end);
            cell_start = true;
            continue;
        }
        if cell_start && !body.trim().is_empty() {
            cell_start = false;
            if let Some(magic) = body.trim_start().strip_prefix("-- MAGIC %") {
                let lang = magic.split_whitespace().next().unwrap_or("").to_ascii_lowercase();
                if lang != "md" && lang != "sql" {
                    notes.push(Diagnostic::at(
                        &SourceLocation::new(file, i as u32 + 1, 1),
                        format!("a `%{lang}` cell is not run: only SQL cells define datasets"),
                    ));
                }
            }
        }
        out.push_str(line);
    }
    Some(out)
}

/// Whether a spec file is a DLT settings file rather than an SDP spec: JSON, YAML with a
/// top-level `resources:` (a bundle's resource file), or a bundle's `databricks.yml`.
pub fn is_settings(path: &Path, text: &str) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    ext == "json"
        || crate::spec::BUNDLE_FILE_NAMES.contains(&name)
        || text.lines().any(|l| l.starts_with("resources:") || l.starts_with("bundle:"))
}

/// A settings file read as a spec.
pub struct Settings {
    /// The equivalent spec, its library globs relative to `root`.
    pub spec: Spec,
    /// The project's folder: the settings file's, or for a bundle the folder of its
    /// `databricks.yml`.
    pub root: PathBuf,
    /// Settings with no meaning here, each at its line.
    pub notes: Vec<Diagnostic>,
}

/// Settings that steer a Databricks deployment and mean nothing to a run here.
const NO_MEANING: [(&str, &str); 22] = [
    ("id", "a workspace's pipeline id"),
    ("pipeline_id", "a workspace's pipeline id"),
    ("clusters", "the embedded engine runs in this process; `--backend spark` runs on your Spark Connect server"),
    ("development", "there is one mode here"),
    ("continuous", "each `thund run` is one update"),
    ("channel", "the runtime is this binary"),
    ("edition", "every feature is in the one edition"),
    ("photon", "the embedded engine is DataFusion"),
    ("serverless", "the embedded engine runs in this process"),
    ("notifications", "a failed run exits 1; use your scheduler's notifications"),
    ("permissions", "Unity Catalog and workspace permissions do not apply to local tables"),
    ("grants", "Unity Catalog grants do not apply to local tables"),
    ("run_as", "runs here are the user's own"),
    ("budget_policy_id", "a workspace setting"),
    ("allow_duplicate_names", "a workspace setting"),
    ("deployment", "a workspace setting"),
    ("filters", "every library is read"),
    ("trigger", "each `thund run` is one update"),
    ("tags", "a workspace setting"),
    ("environment", "definition files run with the Python `THUND_PYTHON` names (else `python3`)"),
    ("event_log", "the event log is the Delta table `<storage>/event_log`"),
    ("root_path", "paths are relative to the project"),
];

/// Where `key` is first written as a key (`"key":` or `key:`) in `shown`, as a 1-based line and
/// column (of its first character, the quote if quoted); the file's start if nowhere.
fn key_at(shown: &str, text: &str, key: &str) -> SourceLocation {
    let quoted = format!("\"{key}\"");
    let found = text.lines().enumerate().find_map(|(i, l)| {
        let t = l.trim_start().trim_start_matches("- ").trim_start_matches('{').trim_start();
        let is_key = t.starts_with(&quoted) || t.strip_prefix(key).is_some_and(|r| r.trim_start().starts_with(':'));
        is_key.then(|| (i, l.len() - t.len()))
    });
    match found {
        Some((i, at)) => SourceLocation::new(shown, i as u32 + 1, column(text.lines().nth(i).unwrap_or(""), at)),
        None => SourceLocation::new(shown, 1, 1),
    }
}

/// The 1-based column (in characters) of byte offset `at` of `line`.
fn column(line: &str, at: usize) -> u32 {
    line.get(..at).map_or(1, |before| before.chars().count() as u32 + 1)
}

/// A YAML or JSON scalar as text (`true`, `5`, `main`); `None` for a list or a map.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The settings inside a settings file exported as a notebook (first line `-- Databricks notebook
/// source`, or `#`/`//` for Python and Scala): the header and cell separators blanked and `MAGIC`
/// prefixes removed, every line kept where it was so messages point at the file's own lines.
fn unwrap_notebook(text: &str) -> Option<String> {
    let first = text.lines().find(|l| !l.trim().is_empty())?.trim();
    let comment = ["--", "#", "//"].into_iter().find(|c| {
        first.strip_prefix(c).is_some_and(|rest| rest.trim().eq_ignore_ascii_case("Databricks notebook source"))
    })?;
    let lines = text.lines().map(|line| {
        let Some(rest) = line.trim_start().strip_prefix(comment) else { return line.to_string() };
        let rest = rest.trim_start();
        if rest.eq_ignore_ascii_case("Databricks notebook source") || rest.starts_with("COMMAND ---") {
            return String::new();
        }
        match rest.strip_prefix("MAGIC") {
            Some(magic) => magic.strip_prefix(' ').unwrap_or(magic).to_string(),
            None => String::new(),
        }
    });
    Some(lines.collect::<Vec<_>>().join("\n"))
}

/// Reads a settings file (`shown` names it in messages): a pipeline's settings JSON, a bundle's
/// resource file, or a bundle's `databricks.yml` (whose one pipeline is read).
pub fn settings(path: &Path, text: &str, shown: &str) -> Result<Settings> {
    let unwrapped = unwrap_notebook(text);
    let text = unwrapped.as_deref().unwrap_or(text);
    let folder = path.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    let error = |loc: SourceLocation, m: String| ThundError::Spec(vec![Diagnostic::at(&loc, m)]);
    let parse = |text: &str| -> Result<Value> {
        serde_yaml::from_str(text).map_err(|e| {
            let (line, column) = e.location().map(|l| (l.line() as u32, l.column() as u32)).unwrap_or((1, 1));
            error(SourceLocation::new(shown, line, column), format!("not a pipeline settings file: {e}"))
        })
    };
    // A bundle's files are read with its variables filled in, line for line.
    let bundle =
        folder.ancestors().find_map(|d| crate::spec::BUNDLE_FILE_NAMES.iter().map(|n| d.join(n)).find(|p| p.is_file()));
    let mut bundle_notes = Vec::new();
    let filled;
    let text = match &bundle {
        Some(root_file) => {
            let vars = bundle::Variables::of(root_file)?;
            filled = vars.fill(text, shown, &mut bundle_notes).map_err(ThundError::Spec)?;
            if path == root_file.as_path() && parse(&filled)?.get("resources").is_none() {
                // `databricks.yml` without resources of its own: the one resource file that
                // defines a pipeline is the settings.
                let (file, shown) = bundle::pipeline_file(root_file, &parse(&filled)?)?;
                let text =
                    std::fs::read_to_string(&file).map_err(|source| ThundError::Io { path: file.clone(), source })?;
                return settings(&file, &text, &shown);
            }
            filled.as_str()
        }
        None => text,
    };
    let at = |key: &str| key_at(shown, text, key);
    let doc = parse(text)?;
    let (settings, bundle_key, root) = match doc.get("resources") {
        Some(resources) => {
            let pipelines = resources.get("pipelines").and_then(Value::as_mapping);
            let Some((key, value)) = pipelines.filter(|m| m.len() == 1).and_then(|m| m.iter().next()) else {
                let n = pipelines.map_or(0, |m| m.len());
                return Err(error(
                    at("resources"),
                    format!(
                        "a bundle file here defines exactly one pipeline under `resources.pipelines`; this one has {n}"
                    ),
                ));
            };
            // A bundle's paths are relative to its file; its project is the bundle's folder.
            let root = folder
                .ancestors()
                .find(|d| d.join("databricks.yml").is_file() || d.join("databricks.yaml").is_file())
                .map(Path::to_path_buf)
                .unwrap_or_else(|| folder.clone());
            (value.clone(), scalar(key), root)
        }
        None => {
            let inner = doc.get("spec").or_else(|| doc.get("settings")).cloned();
            (inner.unwrap_or(doc), None, folder.clone())
        }
    };
    let Some(map) = settings.as_mapping() else {
        return Err(error(SourceLocation::new(shown, 1, 1), "pipeline settings must be an object".into()));
    };
    let mut notes = Vec::new();
    let mut problems = Vec::new();
    let mut spec = Spec {
        name: String::new(),
        storage: None,
        catalog: None,
        database: None,
        configuration: BTreeMap::new(),
        libraries: Vec::new(),
    };
    for (k, v) in map {
        let Some(key) = k.as_str() else { continue };
        match key {
            "name" => spec.name = scalar(v).unwrap_or_default(),
            "catalog" => spec.catalog = scalar(v),
            "target" | "schema" => spec.database = scalar(v),
            "configuration" => {
                for (ck, cv) in v.as_mapping().into_iter().flatten() {
                    match (scalar(ck), scalar(cv)) {
                        (Some(ck), Some(cv)) => {
                            spec.configuration.insert(ck, cv);
                        }
                        _ => problems.push(Diagnostic::at(&at("configuration"), "`configuration` values are strings")),
                    }
                }
            }
            "storage" => match scalar(v) {
                Some(s) if s.starts_with("dbfs:") || s.starts_with("/Volumes/") || s.starts_with("/Workspace/") => {
                    notes.push(Diagnostic::at(
                        &at("storage"),
                        format!("`storage` `{s}` is a workspace path: tables go to `.thund` in the project instead"),
                    ));
                }
                other => spec.storage = other,
            },
            "libraries" => {
                for lib in v.as_sequence().into_iter().flatten() {
                    library(lib, &folder, &root, text, shown, &mut spec.libraries, &mut notes, &mut problems);
                }
            }
            _ => {
                let why = NO_MEANING.iter().find(|(k, _)| *k == key).map_or("not a setting used here", |(_, w)| w);
                notes.push(Diagnostic::at(&at(key), format!("`{key}` has no meaning here ({why})")));
            }
        }
    }
    if spec.name.trim().is_empty() {
        match bundle_key {
            Some(k) => spec.name = k,
            None => problems.push(Diagnostic::at(&SourceLocation::new(shown, 1, 1), "the settings have no `name`")),
        }
    }
    if spec.libraries.is_empty() && problems.is_empty() {
        problems.push(Diagnostic::at(&at("libraries"), "the settings name no `libraries`"));
    }
    // A DLT pipeline is written for Databricks, where ANSI mode is off unless set: it runs so
    // here too, on either backend (the setting goes to Spark with the rest of `configuration`).
    if crate::sql_conf::ansi_setting(&spec.configuration).is_none() {
        spec.configuration.insert(crate::sql_conf::ANSI.to_string(), "false".to_string());
    }
    if !problems.is_empty() {
        return Err(ThundError::Spec(problems));
    }
    notes.extend(bundle_notes);
    Ok(Settings { spec, root, notes })
}

/// One `libraries` entry: a `file`, `notebook` or `glob` becomes a glob relative to `root`.
#[allow(clippy::too_many_arguments)]
fn library(
    lib: &Value,
    folder: &Path,
    root: &Path,
    text: &str,
    shown: &str,
    out: &mut Vec<Library>,
    notes: &mut Vec<Diagnostic>,
    problems: &mut Vec<Diagnostic>,
) {
    let entry = |kind: &str, field: &str| lib.get(kind).and_then(|e| e.get(field)).and_then(Value::as_str);
    let (kind, written) = if let Some(p) = entry("file", "path") {
        ("file", p)
    } else if let Some(p) = entry("notebook", "path") {
        ("notebook", p)
    } else if let Some(p) = entry("glob", "include") {
        ("glob", p)
    } else {
        let kind = lib.as_mapping().and_then(|m| m.keys().next()).and_then(Value::as_str).unwrap_or("?");
        notes.push(Diagnostic::at(
            &key_at(shown, text, kind),
            format!("a `{kind}` library has no meaning here: only SQL files define datasets"),
        ));
        return;
    };
    // Where the path is written (it came from this text, so it is), at its opening quote if any.
    let loc = text
        .lines()
        .enumerate()
        .find_map(|(i, l)| {
            let at = l.find(written)?;
            let at = if l[..at].ends_with(['"', '\'']) { at - 1 } else { at };
            Some(SourceLocation::new(shown, i as u32 + 1, column(l, at)))
        })
        .unwrap_or_else(|| SourceLocation::new(shown, 1, 1));
    if kind == "glob" {
        let abs = folder.join(written.trim_start_matches("./"));
        match relative_to(&abs, root).or_else(|| workspace_glob(written, root)) {
            Some(rel) => out.push(Library { glob: LibraryGlob { include: rel } }),
            None => {
                problems.push(Diagnostic::at(&loc, format!("glob `{written}` leaves the project")).with_hint(
                    "a workspace path is found by the longest part of its folders that exists in the project",
                ))
            }
        }
        return;
    }
    let Some(found) = find_file(written, folder, root, kind == "notebook") else {
        problems.push(
            Diagnostic::at(&loc, format!("{kind} `{written}` is not in the project"))
                .with_hint("copy the workspace files into the project folder, keeping their folders"),
        );
        return;
    };
    match relative_to(&found, root) {
        Some(rel) => out.push(Library { glob: LibraryGlob { include: glob::Pattern::escape(&rel) } }),
        None => problems.push(Diagnostic::at(&loc, format!("{kind} `{written}` is outside the project"))),
    }
}

/// The project file a settings path names: relative to the settings file, or a workspace path
/// whose longest suffix exists under `root`. A notebook path may omit its extension.
fn find_file(written: &str, folder: &Path, root: &Path, notebook: bool) -> Option<PathBuf> {
    let exts: &[&str] = if notebook { &["", ".sql", ".py", ".ipynb"] } else { &[""] };
    let existing = |p: PathBuf| exts.iter().map(|e| PathBuf::from(format!("{}{e}", p.display()))).find(|p| p.is_file());
    let trimmed = written.trim_start_matches("./");
    if !written.starts_with('/') {
        if let Some(p) = existing(folder.join(trimmed)) {
            return Some(p);
        }
    }
    let parts: Vec<&str> = written.split('/').filter(|s| !s.is_empty() && *s != "." && *s != "..").collect();
    (0..parts.len()).find_map(|i| existing(root.join(parts[i..].join("/"))))
}

/// A glob of workspace paths (`/Users/ana@x.com/shop/transformations/**`) as a glob of the
/// project: the longest tail of its folders before the first wildcard that is a folder of the
/// project, with the rest of the pattern, as notebook paths are found by their suffix.
fn workspace_glob(written: &str, root: &Path) -> Option<String> {
    if !written.starts_with('/') {
        return None;
    }
    let parts: Vec<&str> = written.split('/').filter(|s| !s.is_empty()).collect();
    let wild = parts.iter().position(|p| p.contains(['*', '?', '['])).unwrap_or(parts.len());
    let (folders, pattern) = parts.split_at(wild);
    (0..folders.len()).find_map(|i| {
        let tail = &folders[i..];
        root.join(tail.join("/")).is_dir().then(|| [tail, pattern].concat().join("/"))
    })
}

/// `path` relative to `root` (lexically, after resolving `..`), if it is inside.
fn relative_to(path: &Path, root: &Path) -> Option<String> {
    let mut clean = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                clean.pop();
            }
            std::path::Component::CurDir => {}
            other => clean.push(other),
        }
    }
    let root_clean: PathBuf = root.components().filter(|c| !matches!(c, std::path::Component::CurDir)).collect();
    clean.strip_prefix(&root_clean).ok().map(|r| r.to_string_lossy().replace('\\', "/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notebook_export_splits_at_cells_and_keeps_its_lines() {
        let text = "-- Databricks notebook source\nCREATE LIVE TABLE a AS SELECT 1 AS x\n\n-- COMMAND ----------\n\n\
                    -- MAGIC %md\n-- MAGIC # Title\n\n-- COMMAND ----------\n\n-- MAGIC %python\n-- MAGIC print(1)\n";
        let mut notes = Vec::new();
        let sql = notebook_sql(text, "nb.sql", &mut notes).unwrap();
        assert_eq!(sql.lines().count(), text.lines().count());
        assert_eq!(sql.lines().nth(3), Some(";"));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].to_string().contains("nb.sql:11:1") && notes[0].message.contains("%python"), "{}", notes[0]);
        assert!(notebook_sql("SELECT 1", "a.sql", &mut notes).is_none());
    }

    #[test]
    fn settings_exported_as_a_notebook_read_as_the_settings_inside_at_their_own_lines() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.sql"), "CREATE MATERIALIZED VIEW a AS SELECT 1;\n").unwrap();
        let path = dir.path().join("settings.json");
        let wrapped = "-- Databricks notebook source\n{\n  \"name\": \"n\",\n  \"photon\": true,\n\
                       \"libraries\": [{\"file\": {\"path\": \"a.sql\"}}]\n}\n";
        let s = settings(&path, wrapped, "settings.json").unwrap();
        assert_eq!(s.spec.name, "n");
        assert_eq!(s.spec.libraries.len(), 1);
        let photon = s.notes.iter().find(|n| n.message.contains("photon")).expect("a note on photon");
        let at = photon.location.as_ref().map(|l| (l.line, l.column));
        assert_eq!(at, Some((4, 3)), "the line and column of `\"photon\"`: {photon:?}");
        // Cells and MAGIC lines of a SQL notebook; a Python one's header.
        let magic = "-- Databricks notebook source\n-- MAGIC {\"name\": \"m\",\n-- COMMAND ----------\n\
                     -- MAGIC \"libraries\": [{\"file\": {\"path\": \"a.sql\"}}]}\n";
        assert_eq!(settings(&path, magic, "settings.json").unwrap().spec.name, "m");
        let python =
            "# Databricks notebook source\n{\"name\": \"p\", \"libraries\": [{\"file\": {\"path\": \"a.sql\"}}]}\n";
        assert_eq!(settings(&path, python, "settings.json").unwrap().spec.name, "p");
        // A broken one still says where.
        let broken = "-- Databricks notebook source\n{\n  \"name\": \"n\",,\n}\n";
        let e = settings(&path, broken, "settings.json").err().expect("an error").to_string();
        assert!(e.contains("settings.json:3:"), "{e}");
    }

    #[test]
    fn settings_json_becomes_a_spec_with_notes_for_what_has_no_meaning() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("pipelines/sales")).unwrap();
        std::fs::write(dir.path().join("pipelines/sales/bronze.sql"), "").unwrap();
        std::fs::write(dir.path().join("pipelines/sales/silver.sql"), "").unwrap();
        let text = r#"{
  "id": "abc",
  "name": "sales",
  "clusters": [{"label": "default", "num_workers": 2}],
  "development": true,
  "libraries": [
    {"notebook": {"path": "/Repos/me@x.com/proj/pipelines/sales/bronze"}},
    {"file": {"path": "pipelines/sales/silver.sql"}},
    {"jar": "dbfs:/x.jar"}
  ],
  "target": "sales_db",
  "catalog": "main",
  "storage": "dbfs:/pipelines/abc",
  "configuration": {"source": "/data/in", "limit": 5}
}"#;
        let path = dir.path().join("settings.json");
        let s = settings(&path, text, "settings.json").unwrap();
        assert_eq!(s.spec.name, "sales");
        assert_eq!((s.spec.catalog.as_deref(), s.spec.database.as_deref()), (Some("main"), Some("sales_db")));
        assert_eq!(s.spec.configuration["limit"], "5");
        let globs: Vec<&str> = s.spec.libraries.iter().map(|l| l.glob.include.as_str()).collect();
        assert_eq!(globs, ["pipelines/sales/bronze.sql", "pipelines/sales/silver.sql"]);
        assert_eq!(s.spec.storage, None);
        let notes: Vec<String> = s.notes.iter().map(ToString::to_string).collect();
        for (needle, line) in [("`id`", 2), ("`clusters`", 4), ("`development`", 5), ("`jar`", 9), ("`storage`", 13)] {
            assert!(
                notes.iter().any(|n| n.contains(needle) && n.contains(&format!("settings.json:{line}:"))),
                "{needle} at {line}: {notes:#?}"
            );
        }
    }

    #[test]
    fn a_bundle_resource_is_relative_to_its_file_and_a_missing_library_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("databricks.yml"), "bundle:\n  name: b\n").unwrap();
        std::fs::create_dir_all(dir.path().join("resources")).unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/dlt.sql"), "").unwrap();
        let text = "resources:\n  pipelines:\n    orders_pipeline:\n      catalog: main\n      schema: orders\n      \
                    libraries:\n        - notebook:\n            path: ../src/dlt.sql\n        - file:\n            path: ../src/gone.sql\n";
        let path = dir.path().join("resources/p.yml");
        let err = settings(&path, text, "resources/p.yml").err().unwrap().to_string();
        assert!(
            err.contains("resources/p.yml:10:") && err.contains("`../src/gone.sql` is not in the project"),
            "{err}"
        );
        let text = text.replace("        - file:\n            path: ../src/gone.sql\n", "");
        let s = settings(&path, &text, "resources/p.yml").unwrap();
        assert_eq!(s.spec.name, "orders_pipeline");
        assert_eq!(s.root, dir.path());
        assert_eq!(s.spec.libraries[0].glob.include, "src/dlt.sql");
        // A glob of workspace paths is found by the longest tail of its folders in the project;
        // one whose folders are nowhere in it leaves the project.
        let workspace = text
            .replace("../src/dlt.sql", "/Workspace/Users/me@x.com/.bundle/b/dev/files/src/**")
            .replace("notebook:", "glob:")
            .replace("path:", "include:");
        let s = settings(&path, &workspace, "resources/p.yml").unwrap();
        assert_eq!(s.spec.libraries[0].glob.include, "src/**");
        let elsewhere = workspace.replace("/files/src/", "/files/lib/");
        let err = settings(&path, &elsewhere, "resources/p.yml").err().unwrap().to_string();
        assert!(err.contains("leaves the project"), "{err}");
    }
}
