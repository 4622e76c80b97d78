//! Reads: `spark.read` / `readStream` of a table or of files, as the SQL the front end reads
//! (`read_files(…)`, and Auto Loader's `cloudFiles` as DLT's `cloud_files(…)`).

use super::expression::{identifier, string_literal};
use super::schema::schema_ddl;
use super::{pb, refuse, Result, Translator, Untranslatable};

impl Translator<'_> {
    pub(super) fn read(&mut self, read: &pb::Read) -> Result<String> {
        use pb::read::ReadType;
        let stream = |from: String| if read.is_streaming { format!("STREAM({from})") } else { from };
        match &read.read_type {
            Some(ReadType::NamedTable(t)) => {
                if !t.options.is_empty() {
                    return refuse("options on spark.read.table");
                }
                Ok(format!("SELECT * FROM {}", stream(identifier(&t.unparsed_identifier)?)))
            }
            Some(ReadType::DataSource(d)) => {
                let [path] = d.paths.as_slice() else {
                    return refuse("a file read of other than one path");
                };
                let format = d.format.clone().unwrap_or_else(|| "parquet".into());
                if format.eq_ignore_ascii_case("cloudFiles") {
                    return self.auto_loader(read, d, path);
                }
                let mut args = vec![string_literal(path), format!("format => {}", string_literal(&format))];
                // pyspark sends an empty schema for a read without `.schema(…)`.
                if let Some(schema) = d.schema.as_ref().filter(|s| !s.trim().is_empty()) {
                    args.push(format!("schema => {}", string_literal(&schema_ddl(schema)?)));
                }
                for (k, v) in &d.options {
                    if !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                        return refuse(format!("the read option `{k}`"));
                    }
                    args.push(format!("{k} => {}", string_literal(v)));
                }
                // The DataFrame reader reads CSV without a header line and its columns as STRING
                // unless told otherwise (`read_files`, Auto Loader, assumes a header and infers).
                let declared = d.schema.as_ref().is_some_and(|s| !s.trim().is_empty());
                let given = |key: &str| d.options.keys().any(|k| k.eq_ignore_ascii_case(key));
                if format.eq_ignore_ascii_case("csv") {
                    if !given("header") {
                        args.push("header => 'false'".into());
                    }
                    if !declared && !given("inferSchema") {
                        args.push("inferSchema => 'false'".into());
                    }
                }
                // Nor a rescued-data column (`read_files` adds one in a Databricks project).
                if !given("rescuedDataColumn") {
                    args.push("rescuedDataColumn => ''".into());
                }
                Ok(format!("SELECT * FROM {}", stream(format!("read_files({})", args.join(", ")))))
            }
            None => refuse("a read of nothing"),
        }
    }

    /// Auto Loader (`spark.readStream.format("cloudFiles")`) as DLT SQL's `cloud_files(path,
    /// format, map(options))`, which the SQL front end reads, checks and runs as it does in a SQL
    /// file: its options (`cloudFiles.*` and the format's) are validated there.
    fn auto_loader(&mut self, read: &pb::Read, d: &pb::read::DataSource, path: &str) -> Result<String> {
        if !read.is_streaming {
            return refuse("Auto Loader (`cloudFiles`) read as a batch: it is read with `spark.readStream`");
        }
        if d.schema.as_ref().is_some_and(|s| !s.trim().is_empty()) {
            return refuse("`.schema(…)` on Auto Loader: give the types as `cloudFiles.schemaHints`");
        }
        let format = d
            .options
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("cloudFiles.format"))
            .map(|(_, v)| v.clone())
            .ok_or_else(|| Untranslatable("Auto Loader without `cloudFiles.format`".into()))?;
        let options: Vec<String> = d
            .options
            .iter()
            .filter(|(k, _)| !k.eq_ignore_ascii_case("cloudFiles.format"))
            .flat_map(|(k, v)| [string_literal(k), string_literal(v)])
            .collect();
        let map = if options.is_empty() { String::new() } else { format!(", map({})", options.join(", ")) };
        Ok(format!("SELECT * FROM STREAM(cloud_files({}, {}{map}))", string_literal(path), string_literal(&format)))
    }
}
