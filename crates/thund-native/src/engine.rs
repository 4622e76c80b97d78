//! The DataFusion session Þund plans in, and how a pipeline query becomes a logical plan.
//!
//! A query arrives parsed by the front-end (sqlparser, Spark dialect, SDP syntax normalized): a
//! copy of its AST has its file sources (`read_files(…)`, `` parquet.`path` ``) and `STREAM` reads
//! replaced by tables registered under generated names — each table factor matched to its read
//! by where it starts in the query's normalized text — and goes straight to DataFusion's SQL
//! planner. Spark's function semantics come from `datafusion-spark`, registered over
//! DataFusion's defaults, so `round`, `concat`, `datediff`, … behave as in Spark.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::catalog::{CatalogProvider, MemoryCatalogProvider, MemorySchemaProvider};
use datafusion::common::TableReference;
use datafusion::datasource::file_format::options::{CsvReadOptions, JsonReadOptions, ParquetReadOptions};
use datafusion::execution::memory_pool::{FairSpillPool, TrackConsumersPool};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::SessionStateBuilder;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_spark::SessionStateBuilderSpark;
use knut_thund::ir::{Expression, FileSource, Query, Read, ReadFinder, SourceLocation};
use sqlparser::ast::{
    CastKind, DataType as SqlType, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName,
    TableAlias, TableFactor, Value, VisitMut, VisitorMut,
};

use crate::error::{NativeError, Result};
use crate::storage::resolve_project_path;
use crate::types::parse_ddl_schema;

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
    context(catalog, database, opts, SqlModes { ansi: true, escaped_string_literals: false })
}

/// The Spark SQL modes a session plans its queries in, for the whole session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SqlModes {
    /// Spark's ANSI mode (`spark.sql.ansi.enabled`).
    pub ansi: bool,
    /// String literals keep their backslashes (`spark.sql.parser.escapedStringLiterals`).
    pub escaped_string_literals: bool,
}

impl SqlModes {
    /// The modes `configuration` sets, each defaulting as on Spark 4.
    pub fn of(configuration: &BTreeMap<String, String>) -> Self {
        SqlModes {
            ansi: knut_thund::sql_conf::ansi_mode(configuration),
            escaped_string_literals: knut_thund::sql_conf::escaped_string_literals(configuration),
        }
    }

    /// The modes of `ctx`'s session.
    pub fn of_session(ctx: &SessionContext) -> Self {
        let config = ctx.copied_config();
        SqlModes {
            ansi: config.options().execution.enable_ansi_mode,
            escaped_string_literals: config.get_extension::<EscapedStringLiterals>().is_some(),
        }
    }
}

/// Marks a session whose string literals keep their backslashes (a session config extension, so
/// every query and expression planned in it sees the mode).
#[derive(Debug)]
struct EscapedStringLiterals;

/// The session a pipeline's queries are planned in: its catalog and database, and its SQL modes
/// (`spark.sql.ansi.enabled` in its configuration, off by default for a DLT project;
/// `spark.sql.parser.escapedStringLiterals`).
pub fn pipeline_context(p: &knut_thund::ir::Pipeline, opts: &EngineOptions) -> Result<SessionContext> {
    context(&p.catalog, &p.database, opts, SqlModes::of(&p.configuration))
}

/// A session for `p` planned with the SQL settings `configuration` instead of its spec's.
pub(crate) fn context_with(
    p: &knut_thund::ir::Pipeline,
    configuration: &BTreeMap<String, String>,
    opts: &EngineOptions,
) -> Result<SessionContext> {
    context(&p.catalog, &p.database, opts, SqlModes::of(configuration))
}

fn context(catalog: &str, database: &str, opts: &EngineOptions, modes: SqlModes) -> Result<SessionContext> {
    let ansi = modes.ansi;
    let mut config = SessionConfig::new()
        .with_default_catalog_and_schema(catalog, database)
        .with_create_default_catalog_and_schema(true)
        .with_information_schema(true);
    if opts.target_partitions > 0 {
        config = config.with_target_partitions(opts.target_partitions);
    }
    // The mode every query of the session is planned in (`fidelity`), and the one the Spark
    // function library's own functions follow.
    config.options_mut().execution.enable_ansi_mode = ansi;
    if modes.escaped_string_literals {
        config = config.with_extension(Arc::new(EscapedStringLiterals));
    }
    // Spark sorts NULL first in ascending order and last in descending order (DataFusion: the
    // other way around, as Postgres).
    config.options_mut().sql_parser.default_null_ordering = "nulls_min".to_string();
    // Spark's session time zone here is UTC; timestamps are instants shown in UTC.
    config.options_mut().execution.time_zone = Some("UTC".to_string());
    // Spark's `1.50` is a DECIMAL(3,2), not a DOUBLE (`1.5e3` is one: see `SparkFunctions`).
    config.options_mut().sql_parser.parse_float_as_decimal = true;
    // A filter keeps its input's size estimate, as in Spark without CBO. DataFusion's default
    // guess (20% of rows pass) made a filtered 6M-row fact table look smaller than a 1.5M-row
    // dimension, so the hash join built its table over the fact side: 2 GiB instead of 270 MiB
    // on TPC-H SF1's lineitem ⋈ orders. Building over the unfiltered smaller side bounds memory
    // by that side's size.
    config.options_mut().optimizer.default_filter_selectivity = 100;
    let mut runtime = RuntimeEnvBuilder::new();
    if let Some(limit) = opts.memory_limit {
        // A fair pool: each spilling operator (one per partition) may use its share before it
        // must spill. With the default greedy pool, one partition's aggregate could take the
        // whole pool and the other's fail with "Resources exhausted" instead of spilling.
        // Tracking names the largest consumers when even spilling cannot make room.
        let pool = TrackConsumersPool::new(FairSpillPool::new(limit), NonZeroUsize::new(5).expect("5 is not 0"));
        runtime = runtime.with_memory_pool(Arc::new(pool));
        // DataFusion 55's RepartitionExec can deadlock once it spills under a limit
        // (apache/datafusion#24883). Under a limit, plans do without it: scans still read
        // files in parallel, aggregates merge their partial results in one final step.
        let optimizer = &mut config.options_mut().optimizer;
        optimizer.enable_round_robin_repartition = false;
        optimizer.repartition_aggregations = false;
        optimizer.repartition_joins = false;
        optimizer.repartition_windows = false;
        optimizer.repartition_sorts = false;
    }
    let runtime = runtime.build_arc()?;
    let mut builder = SessionStateBuilder::new()
        .with_config(config)
        .with_runtime_env(runtime)
        .with_default_features()
        .with_spark_features()
        .with_physical_optimizer_rules(crate::lambdas::physical_optimizer_rules())
        // Spark's text for the casts to STRING that type coercion adds.
        .with_analyzer_rule(Arc::new(crate::casts::SparkText))
        // delta-rs writes through extension nodes that only its planner turns into execution plans.
        .with_query_planner(deltalake::delta_datafusion::planner::DeltaPlanner::new());
    // Spark's interval operators, before the built-in planners (whose `EXTRACT` refuses them).
    builder
        .expr_planners()
        .get_or_insert_with(Vec::new)
        .insert(0, Arc::new(crate::interval_arithmetic::IntervalPlanner { ansi }));
    let state = builder.build();
    let ctx = SessionContext::new_with_state(state);
    crate::functions::register(&ctx);
    crate::session::register(&ctx, catalog, database);
    Ok(ctx)
}

/// Makes sure `catalog.database` exists in the session, so tables can be registered there.
pub fn ensure_schema(ctx: &SessionContext, catalog: &str, database: &str) -> Result<()> {
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
pub fn table_ref(name: &knut_thund::ir::QualifiedName) -> TableReference {
    TableReference::full(name.catalog.as_str(), name.database.as_str(), name.name.as_str())
}

static FILE_TABLE_SEQ: AtomicUsize = AtomicUsize::new(0);

/// The tables standing in for a query's `STREAM` reads in one batch (each holding only the new
/// rows of its source), by the read's index in [`Query::reads`].
pub(crate) type StreamTables = BTreeMap<usize, String>;

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
    crate::string_literals::keep_backslashes(ctx, &mut ast);
    crate::time_windows::rewrite(&mut ast).map_err(plan_err)?;
    let mut rewriter = Rewriter { query: q, reads: ReadFinder::new(q), tables, error: None };
    let _ = ast.visit(&mut rewriter);
    if let Some(e) = rewriter.error {
        return Err(plan_err(e));
    }
    crate::lateral::rewrite_lateral_views(&mut ast).map_err(plan_err)?;
    crate::types::spark_datetime_types(&mut ast);
    crate::text_arguments::wrap_string_arguments(&mut ast);
    let plan =
        crate::resolution::plan_case_insensitively(ctx, ast).await.map_err(|e| plan_err(describe_plan_error(&e)))?;
    let ansi = ctx.copied_config().options().execution.enable_ansi_mode;
    crate::fidelity::spark_semantics(plan, ansi).map_err(|e| plan_err(describe_plan_error(&e)))
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
    let names = NameContext { catalog: df.catalog.clone(), database: df.database.clone() };
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
                let columns = plan.schema().fields().iter().map(|f| f.name().clone()).collect();
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

/// DataFusion's planning errors, phrased for pipeline authors.
fn describe_plan_error(e: &datafusion::error::DataFusionError) -> String {
    let text = e.strip_backtrace();
    if let Some(rest) = text.split("Invalid function '").nth(1) {
        let name = rest.split('\'').next().unwrap_or(rest);
        return format!(
            "function `{name}` is not supported by the native backend (Spark function missing in DataFusion)"
        );
    }
    let text = text.trim_start_matches("Error during planning: ").to_string();
    if text.contains("No field named") {
        // DataFusion's hint (double quotes, a setting of its own) is not how Spark SQL is
        // written: names resolve ignoring case here, and Spark quotes with backticks.
        let mut text = text;
        if let (Some(from), Some(to)) = (text.find("Column names are case sensitive."), text.find("configuration.")) {
            if from < to {
                text.replace_range(from..to + "configuration.".len(), "");
            }
        }
        return text.replace('"', "`").replace("\n\n", "\n");
    }
    text
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
struct Rewriter<'a> {
    query: &'a Query,
    reads: ReadFinder<'a>,
    /// Read index → the registered table that replaces it.
    tables: BTreeMap<usize, String>,
    error: Option<String>,
}

/// The Spark functions DataFusion spells differently, rewritten in a parse (queries' and
/// expressions' alike).
struct SparkFunctions;

impl VisitorMut for SparkFunctions {
    type Break = ();

    /// A `VALUES` row's integer literals are INTs, as Spark types them, before the planner
    /// gives each column its rows' common type: a BIGINT nested in a row (`array(1)`,
    /// `named_struct('q', 2)`) would make the column's type BIGINT however the literal is
    /// retyped later.
    fn pre_visit_query(&mut self, query: &mut sqlparser::ast::Query) -> ControlFlow<()> {
        crate::calls::fill_grouping_id(query);
        if let sqlparser::ast::SetExpr::Values(values) = query.body.as_mut() {
            for row in values.rows.iter_mut() {
                let _ = sqlparser::ast::visit_expressions_mut(row, |e| {
                    if let Some(int) = crate::calls::int_literal(e) {
                        *e = int;
                    }
                    ControlFlow::<()>::Continue(())
                });
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Some(new) = crate::interval_literals::rewrite_around_literal(expr) {
            *expr = new;
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        // Spark names a lambda's `(x, y)` struct after its variables, as `struct(x, y)`; `x.f`
        // is a field of the variable `x` (the planner would look for a table `x`).
        if let Expr::Lambda(lambda) = expr {
            let params: Vec<String> = lambda.params.iter().map(|p| p.name.value.clone()).collect();
            let _ = sqlparser::ast::visit_expressions_mut(&mut lambda.body, |e| {
                if let Expr::CompoundIdentifier(ids) = e {
                    if ids.len() > 1 && params.contains(&ids[0].value) {
                        // As `x['f']`: the planner reads `x.f` back as a table's column.
                        let access_chain = ids[1..]
                            .iter()
                            .map(|f| {
                                sqlparser::ast::AccessExpr::Subscript(sqlparser::ast::Subscript::Index {
                                    index: Expr::value(Value::SingleQuotedString(f.value.clone())),
                                })
                            })
                            .collect();
                        *e = Expr::CompoundFieldAccess {
                            root: Box::new(Expr::Identifier(ids[0].clone())),
                            access_chain,
                        };
                    }
                }
                if let Expr::Tuple(values) = e {
                    let as_struct = Expr::Struct { values: std::mem::take(values), fields: Vec::new() };
                    *e = rewrite_struct(&as_struct).unwrap_or(as_struct);
                }
                ControlFlow::<()>::Continue(())
            });
        }
        // Spark's typed interval literals (`interval_literals`).
        if let Expr::Interval(i) = expr {
            *expr = match crate::interval_literals::Literal::parse(i) {
                Ok(literal) => literal.to_sql(),
                Err(why) => crate::interval_literals::refusal_sql(&why),
            };
            return ControlFlow::Continue(());
        }
        if let Some(new) = rewrite_map_cast(expr) {
            *expr = new;
        }
        if let Some(new) = crate::calls::rewrite_date_part(expr)
            .or_else(|| crate::calls::rewrite_call(expr))
            .or_else(|| crate::calls::rewrite_decode(expr))
            .or_else(|| crate::calls::rewrite_listagg(expr))
            .or_else(|| crate::calls::rewrite_mode(expr))
            .or_else(|| crate::calls::rewrite_assert_true(expr))
            .or_else(|| crate::calls::rewrite_json_tuple(expr))
            .or_else(|| crate::calls::rewrite_options(expr))
            .or_else(|| crate::calls::rewrite_ceil_floor(expr))
            .or_else(|| crate::calls::rewrite_int_fields(expr))
            .or_else(|| crate::calls::rewrite_operator(expr))
            .or_else(|| crate::calls::rewrite_ignore_nulls(expr))
            .or_else(|| crate::calls::rewrite_rank_arguments(expr))
            .or_else(|| crate::calls::rewrite_negative_bigint(expr))
            .or_else(|| crate::calls::rewrite_like_escape(expr))
            .or_else(|| rewrite_position(expr))
            .or_else(|| rewrite_struct(expr))
            .or_else(|| rewrite_any_value(expr))
        {
            *expr = new;
        }
        if let Expr::Value(v) = expr {
            if let Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) = &mut v.value {
                *s = crate::string_literals::spark_unescape(s);
            }
            // Spark's `1L` is a BIGINT, whatever its size (the parser reads the suffix).
            if let Value::Number(n, true) = &mut v.value {
                let n = std::mem::take(n);
                *expr = Expr::Cast {
                    kind: sqlparser::ast::CastKind::Cast,
                    expr: Box::new(Expr::value(Value::Number(n, false))),
                    data_type: sqlparser::ast::DataType::BigInt(None),
                    array: false,
                    format: None,
                };
                return ControlFlow::Continue(());
            }
            // Spark's `1.5e3` is a DOUBLE; the parser's option (see `new_context`) makes every
            // other number with a fraction a DECIMAL, as Spark's `1.5` is. The number is read as
            // text: through a DECIMAL, `1e30` (scale -30) would be multiplied by an inexact power
            // of ten and answer 1.0000000000000002E30.
            if let Value::Number(n, _) = &v.value {
                if !n.contains(['e', 'E']) {
                    return ControlFlow::Continue(());
                }
                *expr = Expr::Cast {
                    kind: sqlparser::ast::CastKind::Cast,
                    expr: Box::new(Expr::value(Value::SingleQuotedString(n.clone()))),
                    data_type: sqlparser::ast::DataType::Double(sqlparser::ast::ExactNumberInfo::None),
                    array: false,
                    format: None,
                };
            }
        }
        ControlFlow::Continue(())
    }
}

/// `CAST(m AS MAP<K, V>)` → `map_from_arrays(CAST(map_keys(m) AS ARRAY<K>), CAST(map_values(m)
/// AS ARRAY<V>))`: DataFusion's SQL has no map type to cast to. A NULL stays NULL.
fn rewrite_map_cast(expr: &Expr) -> Option<Expr> {
    let Expr::Cast { kind: CastKind::Cast, expr: inner, data_type: SqlType::Map(k, v), format: None, .. } = expr else {
        return None;
    };
    let call = crate::calls::function;
    let array_of = |e: Expr, t: &SqlType| Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(e),
        data_type: SqlType::Array(sqlparser::ast::ArrayElemTypeDef::AngleBracket(Box::new(t.clone()))),
        array: false,
        format: None,
    };
    // A NULL has no keys to take: it becomes NULL arrays of the types.
    let null = matches!(inner.as_ref(), Expr::Value(v) if v.value == Value::Null);
    let part = |name: &str| if null { inner.as_ref().clone() } else { call(name, vec![inner.as_ref().clone()]) };
    let keys = array_of(part("map_keys"), k);
    let values = array_of(part("map_values"), v);
    Some(call("map_from_arrays", vec![keys, values]))
}

/// `struct(a, s.b, 1)` → `named_struct('a', a, 'b', s.b, 'col3', 1)`: Spark names a struct's
/// fields after the columns given, and `col1`, `col2`, … otherwise (DataFusion: `c0`, `c1`, …).
pub(crate) fn rewrite_struct(expr: &Expr) -> Option<Expr> {
    // The parser reads `struct(…)` as a struct literal.
    let Expr::Struct { values, fields } = expr else { return None };
    if !fields.is_empty() {
        return None;
    }
    let mut args = Vec::new();
    for (i, e) in values.iter().enumerate() {
        let (name, value) = match e {
            Expr::Named { expr, name } => (name.value.clone(), expr.as_ref().clone()),
            Expr::Identifier(id) => (id.value.clone(), e.clone()),
            Expr::CompoundIdentifier(ids) => (ids.last()?.value.clone(), e.clone()),
            _ => (format!("col{}", i + 1), e.clone()),
        };
        args.push(Expr::value(Value::SingleQuotedString(name)));
        args.push(value);
    }
    Some(crate::calls::function("named_struct", args))
}

/// `any_value(x)` → `first_value(x)`: Spark's is the group's first value, NULL included
/// (DataFusion's skips NULLs).
fn rewrite_any_value(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    let FunctionArguments::List(list) = &f.args else { return None };
    if !f.name.to_string().eq_ignore_ascii_case("any_value") || list.args.len() != 1 {
        return None;
    }
    let mut call = f.clone();
    call.name = ObjectName::from(vec![Ident::new("first_value")]);
    Some(Expr::Function(call))
}

/// `position(substr, str)` and `locate(substr, str)` → `strpos(str, substr)`: DataFusion takes
/// `position`'s arguments the other way (the `POSITION(substr IN str)` syntax is planned right).
fn rewrite_position(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    let name = f.name.to_string().to_ascii_lowercase();
    if name != "position" && name != "locate" {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else { return None };
    let [substr, string] = list.args.as_slice() else { return None };
    let mut call = f.clone();
    call.name = ObjectName::from(vec![Ident::new("strpos")]);
    let mut args = list.clone();
    args.args = vec![string.clone(), substr.clone()];
    call.args = FunctionArguments::List(args);
    Some(Expr::Function(call))
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
    let mut ast = ast.clone();
    crate::string_literals::keep_backslashes(ctx, &mut ast);
    let _ = ast.visit(&mut SparkFunctions);
    let expr = sqlparser::ast::ExprWithAlias { expr: ast, alias: None };
    ctx.state().create_logical_expr_from_sql_expr(expr, schema)
}

impl VisitorMut for Rewriter<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut sqlparser::ast::Query) -> ControlFlow<()> {
        if let Some(refusal) = crate::shapes::refusal(&query.body) {
            self.error = Some(refusal);
            return ControlFlow::Break(());
        }
        // Named before the expressions are rewritten: Spark names them as the user wrote them.
        crate::names::name_select_items(&mut query.body);
        SparkFunctions.pre_visit_query(query)
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        SparkFunctions.pre_visit_expr(expr)
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        SparkFunctions.post_visit_expr(expr)
    }

    fn pre_visit_table_factor(&mut self, tf: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Table { name, args, alias, .. } = tf else {
            return ControlFlow::Continue(());
        };
        let Some(parts) = knut_thund::ir::name_parts(name) else {
            return ControlFlow::Continue(());
        };
        let is_stream =
            parts.len() == 1 && parts[0].quote_style.is_none() && parts[0].value.eq_ignore_ascii_case("stream");
        // `variant_explode(input => v)`: DataFusion's table functions take their arguments
        // by position.
        if let Some(targs) = args.as_mut() {
            for a in targs.args.iter_mut() {
                if let sqlparser::ast::FunctionArg::Named { name: n, arg, .. } = a {
                    if n.value.eq_ignore_ascii_case("input") {
                        *a = sqlparser::ast::FunctionArg::Unnamed(arg.clone());
                    }
                }
            }
        }
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
            return ControlFlow::Continue(()); // a dataset read in batch: planned by its name
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

fn truthy(options: &BTreeMap<String, String>, key: &str) -> Option<bool> {
    options.get(key).map(|v| v.eq_ignore_ascii_case("true"))
}

/// Registers a batch file source as table `name` in the session's default schema.
async fn register_file_source(ctx: &SessionContext, name: &str, f: &FileSource, root: &Path) -> Result<()> {
    let path = resolve_project_path(&f.path, root);
    if !path.exists() {
        return Err(NativeError::Execution(format!("{} source `{}` does not exist", f.format, path.display())));
    }
    let is_dir = path.is_dir();
    let mut url = path.to_string_lossy().into_owned();
    if is_dir && !url.ends_with('/') {
        url.push('/');
    }
    let declared: Option<SchemaRef> = match f.options.get("schema") {
        Some(ddl) => Some(Arc::new(parse_ddl_schema(ddl).map_err(NativeError::Execution)?)),
        None => None,
    };
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
            if header || declared.is_some() {
                ctx.register_csv(name, &url, o).await?;
            } else {
                // Spark names header-less CSV columns _c0, _c1, …
                let df = ctx.read_csv(&url, o.clone()).await?;
                let fields: Vec<Field> = df
                    .schema()
                    .fields()
                    .iter()
                    .enumerate()
                    .map(|(i, fl)| Field::new(format!("_c{i}"), fl.data_type().clone(), true))
                    .collect();
                let schema = Schema::new(fields);
                ctx.register_csv(name, &url, o.schema(&schema).has_header(false)).await?;
            }
        }
        "json" => {
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
            let provider = table.table_provider().await?;
            ctx.register_table(name, provider)?;
        }
        other => {
            return Err(NativeError::Execution(format!(
                "the native backend reads parquet, csv, json and delta files, not `{other}` (at {})",
                SourceLocation::to_string(&f.location)
            )))
        }
    }
    Ok(())
}
