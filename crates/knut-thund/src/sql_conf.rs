//! Spark SQL settings (`SET k = v` in a file, or `spark.sql.*` keys in the spec's
//! `configuration`) on a backend that is not Spark: which ones the embedded engine honours, and
//! why it refuses the others, so none is ignored silently.
//!
//! Settings outside `spark.sql.` (cluster settings such as `spark.executor.memory`, `pipelines.*`,
//! the spec's own substitution variables) and `spark.sql.*` settings that only tune how Spark
//! executes (shuffle partitions, adaptive execution, the pipelines engine, …) do not change
//! results and pass. The session time zone and case sensitivity pass at the values the engine
//! computes with (UTC, case-insensitive). Two modes are honoured both ways, for a whole run (a
//! file's `SET` of either must agree with the spec's): ANSI mode (`spark.sql.ansi.enabled`), on by
//! default as in Spark 4 and off by default for a DLT project, as on Databricks (its loader sets
//! it); and `spark.sql.parser.escapedStringLiterals`, off by default, under which a string
//! literal's backslashes are kept as written (Spark 1.6's parser). Everything else under
//! `spark.sql.` may change results and is refused.

use std::collections::BTreeMap;
use std::path::Path;

use crate::ir::{Pipeline, SourceLocation};

/// `spark.sql.` settings that tune execution without changing results (lower-case prefixes).
const NEUTRAL: [&str; 16] = [
    "spark.sql.shuffle.",
    "spark.sql.adaptive.",
    "spark.sql.pipelines.",
    "spark.sql.streaming.",
    "spark.sql.files.",
    "spark.sql.autobroadcastjointhreshold",
    "spark.sql.broadcasttimeout",
    "spark.sql.execution.arrow.",
    "spark.sql.codegen.",
    "spark.sql.cbo.",
    "spark.sql.join.",
    "spark.sql.sources.parallelpartitiondiscovery.",
    "spark.sql.catalogimplementation",
    "spark.sql.warehouse.dir",
    "spark.sql.ui.",
    "spark.sql.debug.",
];

/// The key of Spark's ANSI mode.
pub const ANSI: &str = "spark.sql.ansi.enabled";

/// The key of Spark's string-literal mode: when `true`, `'\\d'` is two backslashes and a `d`.
pub const ESCAPED_STRING_LITERALS: &str = "spark.sql.parser.escapedStringLiterals";

/// The settings the embedded engine honours both ways, for a whole run, with their defaults.
pub const RUN_MODES: [(&str, bool); 2] = [(ANSI, true), (ESCAPED_STRING_LITERALS, false)];

/// The value `settings` give the boolean setting `key` (keys compare ignoring case, as Spark's
/// do); `None` if they do not set it, or set it to something that is neither `true` nor `false`
/// (refused).
pub fn bool_setting(settings: &BTreeMap<String, String>, key: &str) -> Option<bool> {
    let (_, value) = settings.iter().find(|(k, _)| k.trim().eq_ignore_ascii_case(key))?;
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// The ANSI mode `settings` set; `None` if they do not set it (see [`bool_setting`]).
pub fn ansi_setting(settings: &BTreeMap<String, String>) -> Option<bool> {
    bool_setting(settings, ANSI)
}

/// Whether string literals keep their backslashes as written under this `configuration`
/// (`spark.sql.parser.escapedStringLiterals`; off by default, as on Spark).
pub fn escaped_string_literals(configuration: &BTreeMap<String, String>) -> bool {
    bool_setting(configuration, ESCAPED_STRING_LITERALS).unwrap_or(false)
}

/// Whether a pipeline with this `configuration` runs in ANSI mode: as set, else Spark 4's
/// default (on).
pub fn ansi_mode(configuration: &BTreeMap<String, String>) -> bool {
    ansi_setting(configuration).unwrap_or(true)
}

/// Why the embedded engine cannot honour `key = value`; `None` when it does (or the setting does
/// not change results).
pub fn refusal(key: &str, value: &str) -> Option<String> {
    let k = key.trim().to_ascii_lowercase();
    if !k.starts_with("spark.sql.") || NEUTRAL.iter().any(|n| k.starts_with(n)) {
        return None;
    }
    let v = value.trim();
    match k.as_str() {
        "spark.sql.session.timezone" => {
            let utc =
                ["UTC", "Etc/UTC", "GMT", "Etc/GMT", "Z", "+00:00", "Zulu"].iter().any(|u| v.eq_ignore_ascii_case(u));
            (!utc).then(|| format!("the native backend computes timestamps in UTC; `{key} = {v}` would change results"))
        }
        "spark.sql.casesensitive" => (!v.eq_ignore_ascii_case("false"))
            .then(|| "the native backend resolves names case-insensitively, as Spark does by default".to_string()),
        "spark.sql.ansi.enabled" | "spark.sql.parser.escapedstringliterals" => (!v.eq_ignore_ascii_case("true")
            && !v.eq_ignore_ascii_case("false"))
        .then(|| format!("`{key}` is `true` or `false`, not `{v}`")),
        _ => Some(format!(
            "the native backend does not apply `{key}`, which may change results: remove it or run on Spark"
        )),
    }
}

/// Where `key` is set in the spec of `p` (its line in the spec file), for messages.
pub(crate) fn spec_location(p: &Pipeline, key: &str) -> SourceLocation {
    let spec = crate::spec::discover(&p.root).ok();
    let file = spec
        .as_deref()
        .and_then(|s| s.strip_prefix(&p.root).ok().map(Path::to_path_buf))
        .map(|s| s.display().to_string())
        .unwrap_or_else(|| "spark-pipeline.yml".into());
    let line = spec
        .and_then(|s| std::fs::read_to_string(s).ok())
        .and_then(|text| {
            text.lines().position(|l| {
                let l = l.trim_start().trim_start_matches(['"', '\'']);
                l.strip_prefix(key).is_some_and(|r| r.trim_start_matches(['"', '\'']).trim_start().starts_with(':'))
            })
        })
        .map_or(1, |i| i as u32 + 1);
    SourceLocation::new(file, line, 1)
}

#[cfg(test)]
mod tests {
    use super::{ansi_mode, escaped_string_literals, refusal};

    #[test]
    fn ansi_mode_is_on_unless_set_off() {
        let set = |k: &str, v: &str| [(k.to_string(), v.to_string())].into_iter().collect();
        assert!(ansi_mode(&Default::default()));
        assert!(!ansi_mode(&set("spark.sql.ansi.enabled", "false")));
        assert!(!ansi_mode(&set("Spark.SQL.ANSI.Enabled", " False ")));
        assert!(ansi_mode(&set("spark.sql.ansi.enabled", "true")));
    }

    #[test]
    fn string_literals_are_unescaped_unless_set_otherwise() {
        let set = |k: &str, v: &str| [(k.to_string(), v.to_string())].into_iter().collect();
        assert!(!escaped_string_literals(&Default::default()));
        assert!(escaped_string_literals(&set("spark.sql.parser.escapedStringLiterals", "TRUE")));
        assert!(!escaped_string_literals(&set("spark.sql.parser.escapedStringLiterals", "false")));
        assert_eq!(refusal("spark.sql.parser.escapedStringLiterals", "true"), None);
        assert!(refusal("spark.sql.parser.escapedStringLiterals", "yes").is_some());
    }

    #[test]
    fn settings_that_change_results_are_refused_and_the_others_pass() {
        assert_eq!(refusal("spark.sql.shuffle.partitions", "8"), None);
        assert_eq!(refusal("spark.sql.pipelines.maxFlowRetryAttempts", "0"), None);
        assert_eq!(refusal("spark.executor.memory", "4g"), None);
        assert_eq!(refusal("source_root", "/data"), None);
        assert_eq!(refusal("spark.sql.session.timeZone", "UTC"), None);
        assert!(refusal("spark.sql.session.timeZone", "Europe/Oslo").is_some_and(|m| m.contains("UTC")));
        assert_eq!(refusal("spark.sql.ansi.enabled", "true"), None);
        assert_eq!(refusal("spark.sql.ansi.enabled", "FALSE"), None);
        assert!(refusal("spark.sql.ansi.enabled", "maybe").is_some());
        assert_eq!(refusal("spark.sql.caseSensitive", "false"), None);
        assert!(refusal("spark.sql.caseSensitive", "true").is_some());
        assert!(refusal("spark.sql.legacy.timeParserPolicy", "LEGACY").is_some());
    }
}
