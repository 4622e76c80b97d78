//! The Spark SQL modes a session plans in, read in one place.
//!
//! A pipeline's configuration sets them (`spark.sql.ansi.enabled`,
//! `spark.sql.parser.escapedStringLiterals`); [`crate::session`] writes them into the session's
//! `ConfigOptions` once, and every rule and planner that depends on them reads them back with
//! [`SqlModes::of`] — from the options an `AnalyzerRule` is handed, or from a session's. ANSI
//! mode is DataFusion's own `execution.enable_ansi_mode`, which `datafusion-spark`'s functions
//! follow too; the parser's mode is an extension of ours under `spark_sql.`.

use datafusion::common::config::{ConfigExtension, ConfigOptions};
use datafusion::common::extensions_options;
use datafusion::prelude::SessionContext;

extensions_options! {
    /// The Spark SQL settings DataFusion has no option of its own for.
    pub(crate) struct SparkSqlOptions {
        /// `spark.sql.parser.escapedStringLiterals`: a string literal is its text as written.
        pub escaped_string_literals: bool, default = false
    }
}

impl ConfigExtension for SparkSqlOptions {
    const PREFIX: &'static str = "spark_sql";
}

/// The Spark SQL modes of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqlModes {
    /// Spark's ANSI mode (`spark.sql.ansi.enabled`): overflow, zero divisors, invalid casts and
    /// indexes outside an array fail, where without it they give NULL or a wrapped value.
    pub ansi: bool,
    /// String literals keep their backslashes (`spark.sql.parser.escapedStringLiterals`).
    pub escaped_string_literals: bool,
}

impl Default for SqlModes {
    /// Spark 4's defaults: ANSI mode on, backslashes escape.
    fn default() -> Self {
        SqlModes { ansi: true, escaped_string_literals: false }
    }
}

impl SqlModes {
    /// The modes a pipeline's `configuration` sets, each defaulting as on Spark 4.
    pub fn from_configuration(configuration: &std::collections::BTreeMap<String, String>) -> Self {
        SqlModes {
            ansi: knut_thund::sql_conf::ansi_mode(configuration),
            escaped_string_literals: knut_thund::sql_conf::escaped_string_literals(configuration),
        }
    }

    /// The modes written into `options` (by [`SqlModes::write`]).
    pub fn of(options: &ConfigOptions) -> Self {
        SqlModes {
            ansi: options.execution.enable_ansi_mode,
            escaped_string_literals: options
                .extensions
                .get::<SparkSqlOptions>()
                .is_some_and(|o| o.escaped_string_literals),
        }
    }

    /// The modes of `ctx`'s session.
    pub fn of_session(ctx: &SessionContext) -> Self {
        Self::of(ctx.copied_config().options())
    }

    /// Writes the modes into `options`, where [`SqlModes::of`] reads them.
    pub(crate) fn write(self, options: &mut ConfigOptions) {
        options.execution.enable_ansi_mode = self.ansi;
        options.extensions.insert(SparkSqlOptions { escaped_string_literals: self.escaped_string_literals });
    }
}

/// The way out of an ANSI-mode failure, as Spark's messages end: `use try_cast to get NULL
/// instead, or set spark.sql.ansi.enabled to false` (`instead`: the `try_` function or other
/// way that gives NULL, if there is one).
pub(crate) fn ansi_hint(instead: Option<&str>) -> String {
    match instead {
        Some(way) => format!("use {way} to get NULL instead, or set {} to false", knut_thund::sql_conf::ANSI),
        None => format!("set {} to false", knut_thund::sql_conf::ANSI),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_back_as_written() {
        for ansi in [true, false] {
            for escaped_string_literals in [true, false] {
                let modes = SqlModes { ansi, escaped_string_literals };
                let mut options = ConfigOptions::new();
                modes.write(&mut options);
                assert_eq!(SqlModes::of(&options), modes);
            }
        }
    }

    #[test]
    fn options_without_ours_read_as_sparks_defaults_but_for_datafusions_ansi() {
        let options = ConfigOptions::new();
        assert!(!SqlModes::of(&options).escaped_string_literals);
    }

    #[test]
    fn the_hint_names_the_setting() {
        assert_eq!(
            ansi_hint(Some("try_cast")),
            "use try_cast to get NULL instead, or set spark.sql.ansi.enabled to false"
        );
        assert_eq!(ansi_hint(None), "set spark.sql.ansi.enabled to false");
    }
}
