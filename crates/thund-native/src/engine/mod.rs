//! The DataFusion session a pipeline is planned in, and how a pipeline query becomes a logical
//! plan.
//!
//! A query arrives parsed by the front-end (sqlparser, Spark dialect, SDP syntax normalized): a
//! copy of its AST has its file sources (`read_files(…)`, `` parquet.`path` ``) and `STREAM` reads
//! replaced by tables registered under generated names — each table factor matched to its read
//! by where it starts in the query's normalized text — and goes to `thund_sql::plan_query`,
//! which gives it Spark's semantics. The session is `thund_sql`'s Spark session with what a
//! backend adds: its memory pool, its parallelism, delta-rs's planner. JSON files that are not
//! one object per line (an array on a line, `multiLine`) are read by `json`.

pub(crate) mod files;
pub(crate) mod json;
pub(crate) mod memory;
pub(crate) mod preflight;

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{CatalogProvider, MemoryCatalogProvider, MemorySchemaProvider};
use datafusion::common::TableReference;
use datafusion::datasource::file_format::options::{CsvReadOptions, JsonReadOptions, ParquetReadOptions};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use knut_thund::ir::{Expression, FileSource, Query, Read, ReadFinder, SourceLocation};
use sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, Ident, ObjectName, TableAlias, TableFactor, VisitMut, VisitorMut,
};
use thund_sql::{parse_ddl_schema, SqlModes};

use crate::delta::storage::resolve_project_path;
use crate::error::{NativeError, Result};

/// Up to this many partitions (cores), plans do without repartitioning (see `context`).
const FEW_PARTITIONS: usize = 2;

/// Engine settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineOptions {
    /// Memory pool size in bytes; operators spill to disk beyond it. `None`: unbounded.
    pub memory_limit: Option<usize>,
    /// Parallelism of each query (0: one per core).
    pub target_partitions: usize,
}

/// A DataFusion session with Spark semantics, resolving unqualified names to
/// `catalog.database`, in Spark 4's ANSI mode (tests' sessions).
#[cfg(test)]
pub(crate) fn new_context(catalog: &str, database: &str, opts: &EngineOptions) -> Result<SessionContext> {
    context(catalog, database, opts, SqlModes::default())
}

/// The session a pipeline's queries are planned in: its catalog and database, and its SQL modes
/// (`spark.sql.ansi.enabled` in its configuration, off by default for a DLT project;
/// `spark.sql.parser.escapedStringLiterals`).
pub(crate) fn pipeline_context(p: &knut_thund::ir::Pipeline, opts: &EngineOptions) -> Result<SessionContext> {
    context(&p.catalog, &p.database, opts, SqlModes::from_configuration(&p.configuration))
}

/// A session for `p` planned with the SQL settings `configuration` instead of its spec's.
pub(crate) fn context_with(
    p: &knut_thund::ir::Pipeline,
    configuration: &BTreeMap<String, String>,
    opts: &EngineOptions,
) -> Result<SessionContext> {
    context(&p.catalog, &p.database, opts, SqlModes::from_configuration(configuration))
}

fn context(catalog: &str, database: &str, opts: &EngineOptions, modes: SqlModes) -> Result<SessionContext> {
    let mut config = SessionConfig::new()
        .with_default_catalog_and_schema(catalog, database)
        .with_create_default_catalog_and_schema(true)
        .with_information_schema(true);
    if opts.target_partitions > 0 {
        config = config.with_target_partitions(opts.target_partitions);
    }
    // A filter keeps its input's size estimate, as in Spark without CBO. DataFusion's default
    // guess (20% of rows pass) made a filtered 6M-row fact table look smaller than a 1.5M-row
    // dimension, so the hash join built its table over the fact side: 2 GiB instead of 270 MiB
    // on TPC-H SF1's lineitem ⋈ orders. Building over the unfiltered smaller side bounds memory
    // by that side's size.
    config.options_mut().optimizer.default_filter_selectivity = 100;
    let mut runtime = RuntimeEnvBuilder::new();
    if let Some(limit) = opts.memory_limit {
        runtime = runtime.with_memory_pool(memory::limited_pool(limit));
    }
    if config.target_partitions() <= FEW_PARTITIONS {
        // On two cores, hash-partitioning rows between the plan's partitions costs more than
        // the parallel steps it enables gain: a hash join builds one table of its smaller side
        // and every partition probes it, an aggregate merges its partial results in one final
        // step. TPC-H SF1's medallion took 3.7 s instead of 4.2 s (user time 5.8 s instead of
        // 6.7 s, median of 4). Scans still read their files in parallel.
        let optimizer = &mut config.options_mut().optimizer;
        optimizer.enable_round_robin_repartition = false;
        optimizer.repartition_aggregations = false;
        optimizer.repartition_joins = false;
        optimizer.repartition_windows = false;
        optimizer.repartition_sorts = false;
    }
    let config = thund_sql::spark_config(config, modes);
    let state = thund_sql::spark_state_builder(config, runtime.build_arc()?)
        // delta-rs writes through extension nodes that only its planner turns into execution plans.
        .with_query_planner(deltalake::delta_datafusion::planner::DeltaPlanner::new())
        .build();
    Ok(thund_sql::spark_context(state))
}

/// Makes sure `catalog.database` exists in the session, so tables can be registered there.
pub(crate) fn ensure_schema(ctx: &SessionContext, catalog: &str, database: &str) -> Result<()> {
    let cat = match ctx.catalog(catalog) {
        Some(c) => c,
        None => {
            let c: Arc<dyn CatalogProvider> = Arc::new(MemoryCatalogProvider::new());
            ctx.register_catalog(catalog, Arc::clone(&c));
            c
        }
    };
    if cat.schema(database).is_none() {
        cat.register_schema(database, Arc::new(MemorySchemaProvider::new()))?;
    }
    Ok(())
}

/// A table reference for a qualified name.
pub(crate) fn table_ref(name: &knut_thund::ir::QualifiedName) -> TableReference {
    TableReference::full(name.catalog.as_str(), name.database.as_str(), name.name.as_str())
}

static FILE_TABLE_SEQ: AtomicUsize = AtomicUsize::new(0);

/// The tables standing in for a query's `STREAM` reads in one batch (each holding only the new
/// rows of its source), by the read's index in [`Query::reads`].
pub(crate) type StreamTables = BTreeMap<usize, String>;

/// Plans a pipeline query. Relative file paths resolve against `root` (the project folder).
/// Plans a pipeline query. Relative file paths resolve against `root` (the project folder).
pub(crate) async fn plan_query(ctx: &SessionContext, q: &Query, root: &Path) -> Result<LogicalPlan> {
    plan_query_with_streams(ctx, q, root, &StreamTables::new()).await
}

/// Plans a query whose `STREAM(…)` reads are replaced by the registered tables `streams`.
pub(crate) async fn plan_query_with_streams(
    ctx: &SessionContext,
    q: &Query,
    root: &Path,
    streams: &StreamTables,
) -> Result<LogicalPlan> {
    let plan_err = |message: String| NativeError::Plan { location: q.location.to_string(), message };
    if let Some(df) = q.dataframe.as_ref().filter(|d| d.schema_dependent) {
        let resolved = Box::pin(dataframe_query(ctx, q, df, root, streams)).await?;
        return Box::pin(plan_query_with_streams(ctx, &resolved, root, streams)).await;
    }
    let mut ast = q
        .ast
        .get()
        .cloned()
        .ok_or_else(|| NativeError::Execution(format!("internal error: {} was not parsed", q.location)))?;
    let mut tables = streams.clone();
    for (i, r) in q.reads.iter().enumerate() {
        if let Read::Files(f) = r {
            if !f.streaming {
                let name = format!("__thund_file_{}", FILE_TABLE_SEQ.fetch_add(1, Ordering::Relaxed));
                register_file_source(ctx, &name, f, root).await.map_err(|e| plan_err(e.to_string()))?;
                tables.insert(i, name);
            }
        }
    }
    // The sources first, while every table factor is where the front-end found it.
    let mut sources = Sources { query: q, reads: ReadFinder::new(q), tables, error: None };
    let _ = ast.visit(&mut sources);
    if let Some(e) = sources.error {
        return Err(plan_err(e));
    }
    thund_sql::plan_query(ctx, ast).await.map_err(|e| plan_err(e.to_string()))
}

/// The final query of a Python DataFrame whose translation depends on its inputs' columns: each
/// input it asks for is planned here (its stream reads standing in as in `q`), and its columns
/// given back, until the translation is complete. The final query reads what `q` reads, in the
/// same order, so `streams` (by read index) holds for it.
async fn dataframe_query(
    ctx: &SessionContext,
    q: &Query,
    df: &knut_thund::ir::DataFrameRelation,
    root: &Path,
    streams: &StreamTables,
) -> Result<Query> {
    use knut_thund::frontend::{analyze_query, dataframe_step, DataFrameStep, NameContext};
    let plan_err = |message: String| NativeError::Plan { location: q.location.to_string(), message };
    let names = NameContext { catalog: df.catalog.clone(), database: df.database.clone(), databricks: false };
    let analyze = |sql: &str| {
        analyze_query(sql, &q.location, &names).map_err(|ds| {
            plan_err(format!(
                "the DataFrame's translation does not parse: {}",
                ds.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("; ")
            ))
        })
    };
    let mut known = BTreeMap::new();
    let sql = loop {
        match dataframe_step(df, &known).map_err(&plan_err)? {
            DataFrameStep::Done(sql) => break sql,
            DataFrameStep::NeedsColumns(input) => {
                let sub = analyze(&input)?;
                // The input's reads are some of `q`'s: each stands in as it does there.
                let mut sub_streams = StreamTables::new();
                for (j, r) in sub.reads.iter().enumerate() {
                    if let Some(i) = q.reads.iter().position(|o| same_source(o, r)) {
                        if let Some(t) = streams.get(&i) {
                            sub_streams.insert(j, t.clone());
                        }
                    }
                }
                let plan = Box::pin(plan_query_with_streams(ctx, &sub, root, &sub_streams)).await?;
                let columns = plan
                    .schema()
                    .fields()
                    .iter()
                    .map(|f| (f.name().clone(), thund_sql::spark_type_name(f.data_type())))
                    .collect();
                known.insert(input, columns);
            }
        }
    };
    let resolved = analyze(&sql)?;
    let same =
        resolved.reads.len() == q.reads.len() && resolved.reads.iter().zip(&q.reads).all(|(a, b)| same_source(a, b));
    if !same {
        return Err(plan_err("internal error: the DataFrame's final query reads other sources than its first".into()));
    }
    Ok(resolved)
}

/// Whether two reads name the same source the same way (locations aside).
fn same_source(a: &Read, b: &Read) -> bool {
    match (a, b) {
        (Read::Dataset { name: x, streaming: s, .. }, Read::Dataset { name: y, streaming: t, .. }) => x == y && s == t,
        (Read::Files(x), Read::Files(y)) => {
            x.format == y.format && x.path == y.path && x.options == y.options && x.streaming == y.streaming
        }
        _ => false,
    }
}

/// The alias `STREAM(a.b.src)` gets when it has none: `src`.
fn stream_source_alias(args: Option<&sqlparser::ast::TableFunctionArgs>) -> Option<TableAlias> {
    let [FunctionArg::Unnamed(FunctionArgExpr::Expr(e))] = args?.args.as_slice() else { return None };
    let ident = match e {
        Expr::Identifier(i) => i.clone(),
        Expr::CompoundIdentifier(ids) => ids.last()?.clone(),
        _ => return None,
    };
    Some(TableAlias { explicit: true, name: ident, columns: Vec::new(), at: None })
}

/// Replaces the table factors of file sources and `STREAM` reads with registered tables.
struct Sources<'a> {
    query: &'a Query,
    reads: ReadFinder<'a>,
    /// Read index → the registered table that replaces it.
    tables: BTreeMap<usize, String>,
    error: Option<String>,
}

/// Plans a front-end-parsed expression (an expectation, an AUTO CDC clause) against `schema`,
/// with the same Spark rewrites as queries.
pub(crate) fn plan_expr(
    ctx: &SessionContext,
    e: &Expression,
    schema: &datafusion::common::DFSchema,
) -> datafusion::error::Result<datafusion::logical_expr::Expr> {
    let Some(ast) = e.ast.as_deref() else {
        return Err(datafusion::error::DataFusionError::Internal(format!("`{}` was not parsed", e.sql)));
    };
    thund_sql::plan_expr(ctx, ast, schema)
}

impl VisitorMut for Sources<'_> {
    type Break = ();

    fn pre_visit_table_factor(&mut self, tf: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Table { name, args, alias, .. } = tf else {
            return ControlFlow::Continue(());
        };
        let Some(parts) = knut_thund::ir::name_parts(name) else {
            return ControlFlow::Continue(());
        };
        let is_stream =
            parts.len() == 1 && parts[0].quote_style.is_none() && parts[0].value.eq_ignore_ascii_case("stream");
        let Some(read) = self.reads.read_of(name) else {
            if is_stream && args.is_some() {
                self.error = Some("internal error: a STREAM read the front-end did not record".into());
                return ControlFlow::Break(());
            }
            return ControlFlow::Continue(()); // a CTE or a table function: no read of its own
        };
        let Some(table) = self.tables.get(&read) else {
            if self.query.reads[read].is_streaming() {
                self.error = Some(
                    "STREAM(…) reads are only allowed in flows into streaming tables; read the source in batch here"
                        .into(),
                );
                return ControlFlow::Break(());
            }
            // A dataset read in batch: planned by its name, which a quoted part in another case
            // (`` `Rides` ``, a Python `spark.read.table("Rides")`) would miss, as the pipeline's
            // names match in any case: such a name becomes the dataset's, keeping what it
            // called the table as its alias.
            if let Read::Dataset { name: dataset, .. } = &self.query.reads[read] {
                let cased = |i: &Ident| i.quote_style.is_some() && i.value.chars().any(char::is_uppercase);
                if parts.iter().any(|p| cased(p)) {
                    if alias.is_none() {
                        let written = parts.last().map(|p| (*p).clone()).unwrap_or_else(|| Ident::new(&dataset.name));
                        *alias = Some(TableAlias { explicit: true, name: written, columns: Vec::new(), at: None });
                    }
                    *name = ObjectName::from(vec![
                        Ident::with_quote('"', &dataset.catalog),
                        Ident::with_quote('"', &dataset.database),
                        Ident::with_quote('"', &dataset.name),
                    ]);
                }
            }
            return ControlFlow::Continue(());
        };
        // `STREAM(src)` stays addressable as `src` in the rest of the query.
        if is_stream && alias.is_none() {
            alias.clone_from(&stream_source_alias(args.as_ref()));
        }
        *name = ObjectName::from(vec![Ident::new(table.clone())]);
        *args = None;
        ControlFlow::Continue(())
    }
}

/// A boolean option, its name read as Spark reads it (in any case).
fn truthy(options: &BTreeMap<String, String>, key: &str) -> Option<bool> {
    options.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v.eq_ignore_ascii_case("true"))
}

/// The columns of a CSV source read without a declared schema, as Spark's reader gives them:
/// named `_c0, _c1, …` without a header; every column STRING when `inferSchema` is false (the
/// DataFrame reader's default), else inferred — an integer column INT where every value fits,
/// as Spark infers it (DataFusion infers BIGINT); without the option (`read_files`), inferred.
async fn csv_schema(
    ctx: &SessionContext,
    path: &Path,
    url: &str,
    o: &CsvReadOptions<'_>,
    header: bool,
    infer: Option<bool>,
) -> Result<SchemaRef> {
    if infer == Some(false) {
        // Only the columns are needed: the first line of the first file has them (DataFusion's
        // inference can fail on a header-less file whose columns start empty).
        let names = csv_first_line(path, o.delimiter)?;
        let fields: Vec<Field> = names
            .iter()
            .enumerate()
            .map(|(i, n)| Field::new(if header { n.clone() } else { format!("_c{i}") }, DataType::Utf8, true))
            .collect();
        return Ok(Arc::new(Schema::new(fields)));
    }
    let df = ctx.read_csv(url, o.clone()).await?;
    let inferred: Vec<Field> = df.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
    let mut fields = Vec::with_capacity(inferred.len());
    for (i, f) in inferred.iter().enumerate() {
        let name = if header { f.name().clone() } else { format!("_c{i}") };
        let data_type = match (infer, f.data_type()) {
            (Some(false), _) => DataType::Utf8,
            (Some(true), DataType::Int64) => {
                use datafusion::functions_aggregate::expr_fn::{max, min};
                let c = datafusion::prelude::col(datafusion::common::Column::new_unqualified(f.name()));
                let range = df.clone().aggregate(vec![], vec![min(c.clone()), max(c)])?.collect().await?;
                let fits = range.first().is_some_and(|b| {
                    (0..2).all(|j| {
                        let a = b.column(j).as_any().downcast_ref::<arrow::array::Int64Array>();
                        a.is_some_and(|a| arrow::array::Array::is_null(a, 0) || i32::try_from(a.value(0)).is_ok())
                    })
                });
                if fits {
                    DataType::Int32
                } else {
                    DataType::Int64
                }
            }
            (_, t) => t.clone(),
        };
        fields.push(Field::new(name, data_type, true));
    }
    Ok(Arc::new(Schema::new(fields)))
}

/// The fields of the first line of a CSV file, or of the first file of a folder (by name, as
/// Spark lists them; hidden and `_` files skipped).
fn csv_first_line(path: &Path, delimiter: u8) -> Result<Vec<String>> {
    let file = if path.is_dir() {
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(path)
            .map_err(|e| NativeError::Execution(format!("{}: {e}", path.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.is_file()
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| !n.starts_with('.') && !n.starts_with('_'))
            })
            .collect();
        files.sort();
        match files.into_iter().next() {
            Some(f) => f,
            None => return Ok(Vec::new()),
        }
    } else {
        path.to_path_buf()
    };
    let reader = std::fs::File::open(&file).map_err(|e| NativeError::Execution(format!("{}: {e}", file.display())))?;
    let format = arrow::csv::reader::Format::default().with_header(true).with_delimiter(delimiter);
    let (schema, _) =
        format.infer_schema(reader, Some(0)).map_err(|e| NativeError::Execution(format!("{}: {e}", file.display())))?;
    Ok(schema.fields().iter().map(|f| f.name().clone()).collect())
}

/// Registers a batch file source as table `name` in the session's default schema.
async fn register_file_source(ctx: &SessionContext, name: &str, f: &FileSource, root: &Path) -> Result<()> {
    let written = resolve_project_path(&f.path, root);
    // A path with wildcards reads the files it matches (DataFusion's listing takes the same
    // pattern); the first of them stands for the source where one file is read for its header.
    let (path, glob) = match files::path_glob(&written) {
        Some((base, pattern)) => {
            let Some(first) = files::matching(&base, &pattern)?.into_iter().next() else {
                return Err(NativeError::Execution(format!(
                    "{} source `{}` matches no file",
                    f.format,
                    written.display()
                )));
            };
            (base.join(first), true)
        }
        None => (written.clone(), false),
    };
    if !path.exists() {
        return Err(NativeError::Execution(format!("{} source `{}` does not exist", f.format, path.display())));
    }
    let is_dir = path.is_dir() && !glob;
    let mut url = if glob { written.to_string_lossy().into_owned() } else { path.to_string_lossy().into_owned() };
    if is_dir && !url.ends_with('/') {
        url.push('/');
    }
    let declared: Option<SchemaRef> = match f.options.get("schema") {
        Some(ddl) => Some(Arc::new(parse_ddl_schema(ddl).map_err(NativeError::Execution)?)),
        None => None,
    };
    let rescue = f.options.get("rescueddatacolumn").filter(|c| !c.is_empty());
    if let (Some(column), "json") = (rescue, f.format.as_str()) {
        // Records that do not fit the schema are kept in the rescued-data column, as a stream's.
        let paths: Vec<String> = match files::path_glob(&written) {
            Some((base, pattern)) => files::matching(&base, &pattern)?.iter().map(|r| base.join(r)).collect(),
            None if is_dir => files::list_files(&path)?.iter().map(|r| path.join(r)).collect(),
            None => vec![path.clone()],
        }
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
        let inference = crate::streaming::sources::Inference::of(f)?;
        let multiline = json::multiline(&f.options);
        let (table, _) =
            crate::streaming::rescue::json_with_rescue(Path::new(""), &paths, declared, column, &inference, multiline)?;
        ctx.register_table(name, table)?;
        return Ok(());
    }
    match f.format.as_str() {
        "parquet" => {
            let mut o = ParquetReadOptions::default();
            if !is_dir {
                o.file_extension = "";
            }
            if let Some(s) = &declared {
                o = o.schema(s);
            }
            ctx.register_parquet(name, &url, o).await?;
        }
        "csv" => {
            let header = truthy(&f.options, "header").unwrap_or(false);
            let delimiter = f
                .options
                .get("sep")
                .or_else(|| f.options.get("delimiter"))
                .and_then(|d| d.bytes().next())
                .unwrap_or(b',');
            let mut o = CsvReadOptions::new().has_header(header).delimiter(delimiter);
            if !is_dir {
                o.file_extension = "";
            }
            if let Some(s) = &declared {
                o = o.schema(s);
            }
            let schema = match &declared {
                Some(s) => Arc::clone(s),
                None => csv_schema(ctx, &path, &url, &o, header, truthy(&f.options, "inferSchema")).await?,
            };
            ctx.register_csv(name, &url, o.schema(&schema)).await?;
        }
        "json" => {
            // Files Spark reads as arrays or multi-line values are read here; others by DataFusion.
            let paths: Vec<PathBuf> = match files::path_glob(&written) {
                Some((base, pattern)) => files::matching(&base, &pattern)?.iter().map(|r| base.join(r)).collect(),
                None if is_dir => files::list_files(&path)?.iter().map(|r| path.join(r)).collect(),
                None => vec![path.clone()],
            };
            let multiline = json::multiline(&f.options);
            if json::needs_records(&paths, multiline)? {
                let (records, schema) = json::read(&paths, multiline, declared.clone())?;
                ctx.register_table(name, Arc::new(json::table(&records, schema)?))?;
                return Ok(());
            }
            let mut o = JsonReadOptions::default();
            if !is_dir {
                o.file_extension = "";
            }
            let schema = match &declared {
                Some(s) => Arc::clone(s),
                None => {
                    // Spark infers JSON fields sorted by name; DataFusion keeps first-seen order.
                    let df = ctx.read_json(&url, o.clone()).await?;
                    let mut fields: Vec<Field> = df.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
                    fields.sort_by(|a, b| a.name().cmp(b.name()));
                    Arc::new(Schema::new(fields))
                }
            };
            ctx.register_json(name, &url, o.schema(&schema)).await?;
        }
        "delta" => {
            let url = url::Url::from_directory_path(&path)
                .map_err(|_| NativeError::Execution(format!("bad delta path `{}`", path.display())))?;
            let table = deltalake::open_table(url).await?;
            table.update_datafusion_session(&ctx.state())?;
            let provider = crate::delta::filtered::of(&table, None).await?;
            ctx.register_table(name, provider)?;
        }
        other => {
            return Err(NativeError::Execution(format!(
                "the native backend reads parquet, csv, json and delta files, not `{other}` (at {})",
                SourceLocation::to_string(&f.location)
            )))
        }
    }
    if let Some(column) = rescue {
        // Every Parquet or CSV row read fits (a row that does not fails the read), so nothing is
        // rescued: the column is NULL.
        let nulls = datafusion::prelude::lit(datafusion::scalar::ScalarValue::Utf8(None));
        let table = ctx.table(name).await?.with_column(column, nulls)?.into_view();
        ctx.deregister_table(name)?;
        ctx.register_table(name, table)?;
    }
    Ok(())
}
