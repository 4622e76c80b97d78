//! Databricks asset bundles: the `databricks.yml` at a bundle's root and the resource files it
//! `include`s, read as the Databricks CLI reads them for a deployment.
//!
//! A bundle's files refer to its variables (`${var.catalog}`) and to facts of the deployment
//! (`${bundle.target}`, `${workspace.current_user.short_name}`, …). Each variable's value is,
//! in order of precedence, the environment's `BUNDLE_VAR_<name>`, the selected target's
//! `variables`, the variable's `default`. The target is `DATABRICKS_BUNDLE_TARGET`, else the
//! one marked `default: true`, else the only one. Workspace facts have local stand-ins (the
//! user's name, the bundle's folder), each listed as a note; a reference with no value is an
//! error at its line, never left in a name. Any other `${…}` (a pipeline's own `${key}`) is
//! left for the SQL it belongs to.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_yaml::Value;

use crate::error::{Diagnostic, Result, ThundError};
use crate::ir::SourceLocation;

use super::scalar;

/// What a bundle's `${…}` references stand for.
pub(super) struct Variables {
    /// `var.<name>`, `bundle.<field>` and `workspace.<field>` to their values.
    values: BTreeMap<String, String>,
    /// The workspace facts that have a local stand-in, and what it is.
    stand_ins: BTreeMap<String, String>,
    /// Variables declared without a value here (a `lookup`, or no default), and why.
    unset: BTreeMap<String, String>,
}

/// A variable's value as a bundle writes it: `name: value` or `name: {default: value}`.
fn value_of(v: &Value) -> Option<String> {
    scalar(v).or_else(|| v.get("default").and_then(scalar))
}

fn read_yaml(path: &Path) -> Result<(String, Value)> {
    let text = std::fs::read_to_string(path).map_err(|source| ThundError::Io { path: path.to_path_buf(), source })?;
    let shown = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let doc = serde_yaml::from_str(&text).map_err(|e| {
        let (line, column) = e.location().map(|l| (l.line() as u32, l.column() as u32)).unwrap_or((1, 1));
        ThundError::Spec(vec![Diagnostic::at(
            &SourceLocation::new(&shown, line, column),
            format!("not a bundle file: {e}"),
        )])
    })?;
    Ok((text, doc))
}

impl Variables {
    /// The references of the bundle whose root file is `root_file`.
    pub(super) fn of(root_file: &Path) -> Result<Variables> {
        let (_, doc) = read_yaml(root_file)?;
        let root = root_file.parent().unwrap_or(Path::new("."));
        let user = std::env::var("USER").or_else(|_| std::env::var("USERNAME")).unwrap_or_else(|_| "user".into());
        let targets = doc.get("targets").and_then(Value::as_mapping);
        let target = std::env::var("DATABRICKS_BUNDLE_TARGET").ok().filter(|t| !t.is_empty()).or_else(|| {
            let targets = targets?;
            let marked = targets.iter().find(|(_, t)| t.get("default").and_then(Value::as_bool) == Some(true));
            let only = (targets.len() == 1).then(|| targets.iter().next()).flatten();
            marked.or(only).and_then(|(k, _)| scalar(k))
        });
        let mut values = BTreeMap::new();
        let mut stand_ins = BTreeMap::new();
        let mut unset = BTreeMap::new();
        if let Some(name) = doc.get("bundle").and_then(|b| b.get("name")).and_then(scalar) {
            values.insert("bundle.name".to_string(), name);
        }
        if let Some(t) = &target {
            values.insert("bundle.target".to_string(), t.clone());
        }
        let folder = root.display().to_string();
        for (key, value, why) in [
            ("workspace.current_user.short_name", user.clone(), "the local user"),
            ("workspace.current_user.userName", user.clone(), "the local user"),
            ("workspace.file_path", folder.clone(), "the bundle's folder"),
            ("workspace.root_path", folder.clone(), "the bundle's folder"),
        ] {
            values.insert(key.to_string(), value.clone());
            stand_ins.insert(key.to_string(), format!("`{value}`, {why}"));
        }
        let declared = doc.get("variables").and_then(Value::as_mapping);
        for (k, v) in declared.into_iter().flatten() {
            let Some(name) = scalar(k) else { continue };
            match value_of(v) {
                Some(value) => {
                    values.insert(format!("var.{name}"), value);
                }
                None if v.get("lookup").is_some() => {
                    unset.insert(name, "it is a workspace lookup".to_string());
                }
                None => {
                    unset.insert(name, "it has no default".to_string());
                }
            }
        }
        let chosen = target.as_ref().and_then(|t| targets.and_then(|ts| ts.get(t.as_str())));
        for (k, v) in chosen.and_then(|t| t.get("variables")).and_then(Value::as_mapping).into_iter().flatten() {
            if let (Some(name), Some(value)) = (scalar(k), value_of(v)) {
                unset.remove(&name);
                values.insert(format!("var.{name}"), value);
            }
        }
        for (k, v) in std::env::vars() {
            if let Some(name) = k.strip_prefix("BUNDLE_VAR_") {
                unset.remove(name);
                values.insert(format!("var.{name}"), v);
            }
        }
        // A value may itself refer to others (`schema: ${workspace.current_user.short_name}`).
        for _ in 0..4 {
            let snapshot = values.clone();
            for v in values.values_mut() {
                *v = replace(v, |key| snapshot.get(key).cloned());
            }
        }
        Ok(Variables { values, stand_ins, unset })
    }

    /// `text` (the file `shown`) with every bundle reference filled in, line for line; a note
    /// for each local stand-in used, an error at each reference with no value.
    pub(super) fn fill(
        &self,
        text: &str,
        shown: &str,
        notes: &mut Vec<Diagnostic>,
    ) -> std::result::Result<String, Vec<Diagnostic>> {
        let mut problems = Vec::new();
        let mut out = String::with_capacity(text.len());
        for (i, line) in text.split_inclusive('\n').enumerate() {
            let at = |key: &str| {
                let col = line.find(&format!("${{{key}}}")).map_or(1, |b| line[..b].chars().count() as u32 + 1);
                SourceLocation::new(shown, i as u32 + 1, col)
            };
            out.push_str(&replace(line, |key| {
                if let Some(v) = self.values.get(key) {
                    if let Some(stand_in) = self.stand_ins.get(key) {
                        notes.push(Diagnostic::at(&at(key), format!("`${{{key}}}` is {stand_in} here")));
                    }
                    return Some(v.clone());
                }
                let name = key.strip_prefix("var.")?;
                let why = self.unset.get(name).map_or("the bundle declares no such variable", String::as_str);
                problems.push(
                    Diagnostic::at(&at(key), format!("`${{{key}}}` has no value: {why}"))
                        .with_hint(format!("give it a `default` in databricks.yml, or set BUNDLE_VAR_{name}")),
                );
                None
            }));
        }
        if problems.is_empty() {
            Ok(out)
        } else {
            Err(problems)
        }
    }
}

/// `text` with each `${key}` whose key is a bundle reference (`var.`, `bundle.`, `workspace.`)
/// replaced by `value(key)` where it has one; everything else kept as written.
fn replace(text: &str, mut value: impl FnMut(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let key = after[..end].trim();
        let bundle = ["var.", "bundle.", "workspace."].iter().any(|p| key.starts_with(p));
        match bundle.then(|| value(key)).flatten() {
            Some(v) => out.push_str(&v),
            None => out.push_str(&rest[start..start + 2 + end + 1]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The one resource file of the bundle rooted at `root_file` (`doc`, its parsed text) that
/// defines a pipeline, and its path as messages show it.
pub(super) fn pipeline_file(root_file: &Path, doc: &Value) -> Result<(PathBuf, String)> {
    let root = root_file.parent().unwrap_or(Path::new("."));
    let shown_root = root_file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut found: Vec<(PathBuf, String)> = Vec::new();
    for pattern in doc.get("include").and_then(Value::as_sequence).into_iter().flatten().filter_map(scalar) {
        let full = root.join(pattern.trim_start_matches("./"));
        let mut files: Vec<PathBuf> =
            glob::glob(&full.to_string_lossy()).into_iter().flatten().filter_map(|p| p.ok()).collect();
        files.sort();
        for file in files {
            let (_, resource) = read_yaml(&file)?;
            let pipelines = resource.get("resources").and_then(|r| r.get("pipelines")).and_then(Value::as_mapping);
            for name in pipelines.into_iter().flatten().filter_map(|(k, _)| scalar(k)) {
                found.push((file.clone(), name));
            }
        }
    }
    let shown = |f: &Path| f.strip_prefix(root).unwrap_or(f).to_string_lossy().replace('\\', "/");
    match found.as_slice() {
        [(file, _)] => Ok((file.clone(), shown(file))),
        [] => Err(ThundError::Spec(vec![Diagnostic::at(
            &SourceLocation::new(&shown_root, 1, 1),
            "the bundle defines no pipeline: no file it `include`s has `resources.pipelines`",
        )])),
        many => Err(ThundError::Spec(vec![Diagnostic::at(
            &SourceLocation::new(&shown_root, 1, 1),
            format!(
                "the bundle defines {} pipelines ({}); run one with `-p <its resource file>`",
                many.len(),
                many.iter().map(|(f, n)| format!("`{n}` in {}", shown(f))).collect::<Vec<_>>().join(", ")
            ),
        )])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    const ROOT: &str = "bundle:\n  name: shop\ninclude:\n  - resources/*.yml\nvariables:\n  catalog:\n    default: main\n  \
                        schema:\n    description: the schema\n  warehouse:\n    lookup:\n      warehouse: Shared\n\
                        targets:\n  dev:\n    default: true\n    variables:\n      schema: dev_${workspace.current_user.short_name}\n  \
                        prod:\n    variables:\n      schema: prod\n";

    #[test]
    fn variables_come_from_the_environment_the_target_and_the_defaults() {
        let dir = bundle(&[("databricks.yml", ROOT)]);
        let vars = Variables::of(&dir.path().join("databricks.yml")).unwrap();
        let mut notes = Vec::new();
        let text = "a: ${var.catalog}\nb: ${var.schema} ${bundle.target}/${bundle.name}\nc: ${source}\n";
        let filled = vars.fill(text, "r.yml", &mut notes).unwrap();
        let user = std::env::var("USER").unwrap_or_else(|_| "user".into());
        assert_eq!(filled, format!("a: main\nb: dev_{user} dev/shop\nc: ${{source}}\n"));
        let err = vars.fill("x: 1\ny: ${var.warehouse}\n", "r.yml", &mut notes).unwrap_err();
        assert!(
            err[0].to_string().starts_with("r.yml:2:4: `${var.warehouse}` has no value: it is a workspace lookup"),
            "{}",
            err[0]
        );
        let err = vars.fill("${var.nope}", "r.yml", &mut notes).unwrap_err();
        assert!(err[0].message.contains("declares no such variable"), "{}", err[0]);
    }

    #[test]
    fn the_bundles_one_pipeline_is_found_through_its_includes() {
        let resource = "resources:\n  pipelines:\n    shop_etl:\n      catalog: ${var.catalog}\n      libraries:\n        - glob:\n            include: ../src/**\n";
        let dir = bundle(&[
            ("databricks.yml", ROOT),
            ("resources/etl.yml", resource),
            ("resources/jobs.yml", "resources:\n  jobs: {}\n"),
        ]);
        let (_, doc) = read_yaml(&dir.path().join("databricks.yml")).unwrap();
        let (file, shown) = pipeline_file(&dir.path().join("databricks.yml"), &doc).unwrap();
        assert_eq!((file, shown.as_str()), (dir.path().join("resources/etl.yml"), "resources/etl.yml"));
        std::fs::write(dir.path().join("resources/more.yml"), resource.replace("shop_etl", "other")).unwrap();
        let err = pipeline_file(&dir.path().join("databricks.yml"), &doc).unwrap_err().to_string();
        assert!(err.contains("2 pipelines") && err.contains("`other` in resources/more.yml"), "{err}");
    }
}
