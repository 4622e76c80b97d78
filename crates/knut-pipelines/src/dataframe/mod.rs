//! A Python query function's DataFrame as Spark SQL: the serialized relation pyspark built,
//! translated to one query, so the embedded engine runs Python datasets through the same path as
//! SQL ones.
//!
//! Each relation becomes a query over its input as a derived table. A join or an aliased
//! DataFrame (`df.alias("o")`) stays a FROM item instead, so the columns of both sides and the
//! alias stay in scope for what is built on it. A column a DataFrame names by its plan id
//! (`orders.id` in `orders.join(items, orders.id == items.order_id)`) is qualified with the alias
//! the derived table holding that plan got.
//!
//! The relations whose meaning depends on their input's columns (`withColumn` replaces a column
//! in place or appends one, `withColumnRenamed` and `drop` ignore names that are not columns,
//! `dropDuplicates` keeps every column, `fillna` and `dropna` act on columns by their type,
//! `unionByName(allowMissingColumns=True)` pads each side with the other's columns) are
//! translated in two steps: first with `SELECT *` standing in, which reads what the final query
//! reads (enough for the dependency graph and validation), then, when the engine can plan the
//! inputs, with their columns and types ([`relation_sql_with_columns`]). A join of two derived
//! tables keeps its shape (`JoinShape`), so that `joined.drop(right["k"])` drops the right
//! side's `k` only, as Spark resolves a DataFrame's column by the plan it came from.
//!
//! What is not translated is refused, never approximated: a relation that holds a field or kind
//! our protocol subset does not declare does not survive a decode/encode round trip (protobuf
//! drops unknown fields), and operations whose Spark meaning the embedded engine does not have
//! (`distinct` on a stream, which Spark keeps state for) are named in the refusal.

use std::collections::BTreeMap;

use prost::Message;

mod expression;
mod join;
mod na;
mod read;
mod schema;
mod wire;

use crate::proto::spark::connect as pb;
use crate::registration::quote_identifier;
use expression::{expr, identifier_parts, select_item, sort_order};
use join::JoinShape;
use na::{drop_na_condition, fill_na_items};
use wire::unknown_operation;

/// Why a DataFrame cannot be translated: the operation, in pyspark's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Untranslatable(pub String);

pub(crate) type Result<T> = std::result::Result<T, Untranslatable>;

pub(crate) fn refuse<T>(what: impl Into<String>) -> Result<T> {
    Err(Untranslatable(what.into()))
}

/// The columns of queries, by their SQL text, as the engine that runs them planned them: each
/// column's name and Spark's name of its type (`DOUBLE`, `DECIMAL(10,2)`).
pub type KnownColumns = BTreeMap<String, Vec<(String, String)>>;

/// A DataFrame's relation as Spark SQL, translated without knowing any input's columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translation {
    /// The query. When `schema_dependent`, it reads what the final query reads, in the same
    /// order, but stands in `SELECT *` for what depends on an input's columns.
    pub sql: String,
    /// Some operation (`withColumn`, `withColumnRenamed`, `drop`, `dropDuplicates` on some
    /// columns) needs its input's columns: [`relation_sql_with_columns`] makes the final query
    /// once the engine can plan the inputs.
    pub schema_dependent: bool,
    /// The relation reads a stream (`spark.readStream…`).
    pub streaming: bool,
}

/// A step of [`relation_sql_with_columns`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// The final query.
    Done(String),
    /// The translation needs the columns of this query first.
    NeedsColumns(String),
}

fn decode(bytes: &[u8]) -> Result<pb::Relation> {
    let relation =
        pb::Relation::decode(bytes).map_err(|e| Untranslatable(format!("not a Spark Connect relation: {e}")))?;
    if relation.encoded_len() != bytes.len() {
        return refuse(match unknown_operation(bytes) {
            Some(op) => format!("the DataFrame operation `{op}` is not run by the embedded engine"),
            None => "the DataFrame uses an argument of an operation the embedded engine does not run".into(),
        });
    }
    Ok(relation)
}

/// A DataFrame's serialized relation as one Spark SQL query, without its inputs' columns.
pub fn relation_sql(bytes: &[u8]) -> Result<Translation> {
    let relation = decode(bytes)?;
    let mut t = Translator::default();
    let frag = t.relation(&relation)?;
    Ok(Translation { sql: t.as_query(frag), schema_dependent: t.schema_dependent, streaming: streams(&relation) })
}

/// A DataFrame's serialized relation as one Spark SQL query, given the columns of the queries
/// it asked for so far: call again with the columns of a [`Resolution::NeedsColumns`] query
/// until it is [`Resolution::Done`].
pub fn relation_sql_with_columns(bytes: &[u8], known: &KnownColumns) -> Result<Resolution> {
    let relation = decode(bytes)?;
    let mut t = Translator { known: Some(known), ..Translator::default() };
    match t.relation(&relation) {
        Ok(frag) => Ok(Resolution::Done(t.as_query(frag))),
        Err(_) if t.needs.is_some() => Ok(Resolution::NeedsColumns(t.needs.take().unwrap_or_default())),
        Err(e) => Err(e),
    }
}

/// An expression that stands outside any relation (an AUTO CDC flow's ordering or delete
/// condition) as Spark SQL.
pub fn expression_sql(e: &pb::Expression) -> Result<String> {
    expr(e, &[])
}

/// [`expression_sql`] of a serialized `Expression` (a pyspark `Column`'s plan).
pub fn expression_bytes_sql(bytes: &[u8]) -> Result<String> {
    expression_sql(&decode_expression(bytes)?)
}

/// [`column_name`] of a serialized `Expression`.
pub fn expression_bytes_column_name(bytes: &[u8]) -> Result<String> {
    column_name(&decode_expression(bytes)?)
}

fn decode_expression(bytes: &[u8]) -> Result<pb::Expression> {
    let e =
        pb::Expression::decode(bytes).map_err(|e| Untranslatable(format!("not a Spark Connect expression: {e}")))?;
    if e.encoded_len() != bytes.len() {
        return refuse("a column expression the embedded engine does not run");
    }
    Ok(e)
}

/// A column named without qualifier (an AUTO CDC flow's keys and column lists): its name.
pub fn column_name(e: &pb::Expression) -> Result<String> {
    if let Some(pb::expression::ExprType::UnresolvedAttribute(a)) = &e.expr_type {
        if let [name] = identifier_parts(&a.unparsed_identifier)?.as_slice() {
            return Ok(name.clone());
        }
        return refuse(format!("`{}` where a column name without qualifier is expected", a.unparsed_identifier));
    }
    refuse(format!("`{}` where a column name is expected", expression_sql(e)?))
}

/// Hands out the aliases of derived tables; knows the columns of inputs when they are known.
#[derive(Debug, Default)]
struct Translator<'a> {
    next_alias: usize,
    /// `None`: translating without columns, `SELECT *` standing in where they are needed.
    known: Option<&'a KnownColumns>,
    /// Some operation needed columns.
    schema_dependent: bool,
    /// The query whose columns are needed and not known (translation stops there).
    needs: Option<String>,
}

/// A translated relation.
struct Frag {
    sql: String,
    /// `sql` is a FROM item (a join, an aliased derived table) rather than a query.
    from_item: bool,
    /// For a FROM item: conditions on its rows (a filter kept open, so the select built on it
    /// still sees the join's or alias's qualifiers).
    filters: Vec<String>,
    /// Plan ids whose columns are visible in this relation's output.
    ids: Vec<i64>,
    /// For a FROM item: which alias each plan id's columns are under.
    scope: Vec<(i64, String)>,
    /// For a join of two derived tables: its shape, so that a column of one side can be dropped
    /// (`joined.drop(right["k"])`) while the other side's column of that name stays.
    join: Option<JoinShape>,
    /// The alias this relation's columns keep on Spark after it, where that is one name: an
    /// aggregate grouped by `r.k` is read as `r.k` after it, as Spark keeps a grouping column's
    /// qualifier (filters, sorts and limits keep it too). A derived table of it takes that alias.
    qualifier: Option<String>,
}

impl Frag {
    fn query(sql: String, ids: Vec<i64>) -> Frag {
        Frag { sql, from_item: false, filters: Vec::new(), ids, scope: Vec::new(), join: None, qualifier: None }
    }

    /// This frag, keeping the qualifier of the relation it passes the columns of.
    fn qualified(mut self, qualifier: Option<String>) -> Frag {
        self.qualifier = qualifier;
        self
    }
}

/// Where expressions find the columns a plan id names.
pub(crate) type Scope = [(i64, String)];

impl Translator<'_> {
    fn alias(&mut self) -> String {
        self.next_alias += 1;
        format!("`__df{}`", self.next_alias)
    }

    /// `frag` as a FROM item with a WHERE clause (`""` or ` WHERE …`), for a select built on it,
    /// and the scope its columns are in.
    fn open(&mut self, frag: Frag) -> (String, String, Vec<(i64, String)>) {
        if frag.from_item {
            let filters =
                if frag.filters.is_empty() { String::new() } else { format!(" WHERE {}", frag.filters.join(" AND ")) };
            return (frag.sql, filters, frag.scope);
        }
        let (from, scope) = self.derived(frag);
        (from, String::new(), scope)
    }

    /// `frag` as a FROM item, and the scope its columns are in.
    fn derived(&mut self, frag: Frag) -> (String, Vec<(i64, String)>) {
        if frag.from_item && frag.filters.is_empty() {
            return (frag.sql, frag.scope);
        }
        let ids = frag.ids.clone();
        let qualifier = frag.qualifier.clone();
        let frag = if frag.from_item { Frag::query(self.as_query(frag), ids) } else { frag };
        let alias = match qualifier {
            Some(q) => quote_identifier(&q),
            None => self.alias(),
        };
        let scope = frag.ids.iter().map(|id| (*id, alias.clone())).collect();
        (format!("({}) AS {alias}", frag.sql), scope)
    }

    fn input(&mut self, r: &Option<Box<pb::Relation>>) -> Result<Frag> {
        match r {
            Some(r) => self.relation(r),
            None => refuse("a DataFrame operation without its input"),
        }
    }

    fn relation(&mut self, r: &pb::Relation) -> Result<Frag> {
        use pb::relation::RelType;
        let own: Vec<i64> = r.common.as_ref().and_then(|c| c.plan_id).into_iter().collect();
        let with_own = |mut ids: Vec<i64>| {
            ids.extend(own.iter().copied());
            ids
        };
        let Some(rel) = &r.rel_type else { return refuse("an empty relation") };
        Ok(match rel {
            RelType::Range(x) => {
                let start = x.start.unwrap_or(0);
                Frag::query(format!("SELECT id FROM range({start}, {}, {})", x.end, x.step), own)
            }
            RelType::Sql(s) => Frag::query(s.query.clone(), own),
            RelType::Read(read) => Frag::query(self.read(read)?, own),
            RelType::Project(p) => {
                let child = self.input(&p.input)?;
                let ids = with_own(child.ids.clone());
                let (from, filters, scope) = self.open(child);
                let items = p.expressions.iter().map(|e| select_item(e, &scope)).collect::<Result<Vec<_>>>()?;
                Frag::query(format!("SELECT {} FROM {from}{filters}", items.join(", ")), ids)
            }
            RelType::Filter(f) => {
                let child = self.input(&f.input)?;
                let ids = with_own(child.ids.clone());
                let qualifier = child.qualifier.clone();
                let cond = f.condition.as_ref().ok_or_else(|| Untranslatable("a filter without condition".into()))?;
                let (sql, mut filters, scope, join) = if child.from_item {
                    (child.sql, child.filters, child.scope, child.join)
                } else {
                    let (from, scope) = self.derived(child);
                    (from, Vec::new(), scope, None)
                };
                filters.push(format!("({})", expr(cond, &scope)?));
                Frag { sql, from_item: true, filters, ids, scope, join, qualifier }
            }
            RelType::Join(j) => self.join(j, own)?,
            RelType::SetOp(s) => {
                use pb::set_operation::SetOpType;
                let left = self.input(&s.left_input)?;
                let right = self.input(&s.right_input)?;
                if s.allow_missing_columns == Some(true) {
                    return self.union_with_missing_columns(left, right, s, own);
                }
                let kind = match SetOpType::try_from(s.set_op_type) {
                    Ok(SetOpType::Union) => "UNION",
                    Ok(SetOpType::Intersect) => "INTERSECT",
                    Ok(SetOpType::Except) => "EXCEPT",
                    _ => return refuse("a set operation of unknown kind"),
                };
                let all = if s.is_all == Some(true) { " ALL" } else { " DISTINCT" };
                let by_name = if s.by_name == Some(true) { " BY NAME" } else { "" };
                let ids = with_own(left.ids.clone());
                let l = self.as_query(left);
                let r = self.as_query(right);
                if s.by_name == Some(true) {
                    // Spark fails a union by name of DataFrames with different columns (the
                    // engine's `BY NAME` would pad them with NULLs).
                    if let (Some(lc), Some(rc)) = (self.columns_of(&l)?, self.columns_of(&r)?) {
                        let names = |cs: &[String]| {
                            let mut v: Vec<String> = cs.iter().map(|c| c.to_ascii_lowercase()).collect();
                            v.sort();
                            v
                        };
                        if names(&lc) != names(&rc) {
                            return refuse(format!(
                                "unionByName of DataFrames with different columns ({} and {}), which Spark fails \
                                 without allowMissingColumns=True",
                                lc.join(", "),
                                rc.join(", ")
                            ));
                        }
                    }
                }
                Frag::query(format!("({l}) {kind}{all}{by_name} ({r})"), ids)
            }
            RelType::Sort(s) => {
                let child = self.input(&s.input)?;
                let ids = with_own(child.ids.clone());
                let qualifier = child.qualifier.clone();
                let (from, filters, scope) = self.open(child);
                let order = s.order.iter().map(|o| sort_order(o, &scope)).collect::<Result<Vec<_>>>()?;
                Frag::query(format!("SELECT * FROM {from}{filters} ORDER BY {}", order.join(", ")), ids)
                    .qualified(qualifier)
            }
            RelType::Limit(l) => {
                let child = self.input(&l.input)?;
                let ids = with_own(child.ids.clone());
                let qualifier = child.qualifier.clone();
                let (from, filters, _) = self.open(child);
                Frag::query(format!("SELECT * FROM {from}{filters} LIMIT {}", l.limit), ids).qualified(qualifier)
            }
            RelType::Offset(o) => {
                let child = self.input(&o.input)?;
                let ids = with_own(child.ids.clone());
                let qualifier = child.qualifier.clone();
                let (from, filters, _) = self.open(child);
                Frag::query(format!("SELECT * FROM {from}{filters} OFFSET {}", o.offset), ids).qualified(qualifier)
            }
            RelType::Aggregate(a) => {
                use pb::aggregate::GroupType;
                let child = self.input(&a.input)?;
                let ids = with_own(child.ids.clone());
                let (from, filters, scope) = self.open(child);
                // `groupBy((col % 3).alias("k"))` groups by the expression and names it `k`:
                // the alias belongs to the select list only.
                let unaliased = |e: &pb::Expression| match &e.expr_type {
                    Some(pb::expression::ExprType::Alias(a)) => {
                        expr(a.expr.as_deref().ok_or_else(|| Untranslatable("an alias of nothing".into()))?, &scope)
                    }
                    _ => expr(e, &scope),
                };
                let keys = a.grouping_expressions.iter().map(unaliased).collect::<Result<Vec<_>>>()?;
                let mut items =
                    a.grouping_expressions.iter().map(|e| select_item(e, &scope)).collect::<Result<Vec<_>>>()?;
                for e in &a.aggregate_expressions {
                    items.push(select_item(e, &scope)?);
                }
                let group = match GroupType::try_from(a.group_type) {
                    Ok(GroupType::Groupby) if keys.is_empty() => String::new(),
                    Ok(GroupType::Groupby) => format!(" GROUP BY {}", keys.join(", ")),
                    Ok(GroupType::Rollup) => format!(" GROUP BY ROLLUP({})", keys.join(", ")),
                    Ok(GroupType::Cube) => format!(" GROUP BY CUBE({})", keys.join(", ")),
                    _ => return refuse("pivot and grouping sets on a DataFrame"),
                };
                // The grouping columns named `q.c` keep their qualifier `q` on Spark: where it is
                // one name, the aggregate's derived table takes it.
                let mut qualifiers: Vec<String> = a
                    .grouping_expressions
                    .iter()
                    .filter_map(|e| match &e.expr_type {
                        Some(pb::expression::ExprType::UnresolvedAttribute(at)) if at.plan_id.is_none() => {
                            match identifier_parts(&at.unparsed_identifier).ok()?.as_slice() {
                                [q, _] => Some(q.clone()),
                                _ => None,
                            }
                        }
                        _ => None,
                    })
                    .collect();
                qualifiers.dedup();
                let qualifier = match qualifiers.as_slice() {
                    [q] => Some(q.clone()),
                    _ => None,
                };
                Frag::query(format!("SELECT {} FROM {from}{filters}{group}", items.join(", ")), ids)
                    .qualified(qualifier)
            }
            RelType::Deduplicate(d) => {
                if d.within_watermark == Some(true) {
                    return refuse("dropDuplicatesWithinWatermark");
                }
                let input = d.input.as_deref().ok_or_else(|| Untranslatable("a dropDuplicates of nothing".into()))?;
                if streams(input) {
                    // Spark keeps every key seen in state, across batches.
                    return refuse("distinct / dropDuplicates on a stream (natively not yet)");
                }
                let child = self.relation(input)?;
                let ids = with_own(child.ids.clone());
                let (from, filters, _) = self.open(child);
                if d.all_columns_as_keys == Some(true) || d.column_names.is_empty() {
                    Frag::query(format!("SELECT DISTINCT * FROM {from}{filters}"), ids)
                } else {
                    let input = format!("SELECT * FROM {from}{filters}");
                    match self.columns_of(&input)? {
                        None => Frag::query(input, ids),
                        Some(columns) => {
                            let keys: Vec<String> = d.column_names.iter().map(|c| quote_identifier(c)).collect();
                            let alias = self.alias();
                            // Any row of each group is kept, as on Spark; the window is ordered
                            // (by its own keys, all equal) since Spark numbers rows only so.
                            Frag::query(
                                format!(
                                    "SELECT {} FROM (SELECT *, row_number() OVER (PARTITION BY {keys} ORDER BY {keys}) \
                                     AS `__thund_row` FROM {from}{filters}) AS {alias} WHERE `__thund_row` = 1",
                                    quoted_list(&columns),
                                    keys = keys.join(", ")
                                ),
                                ids,
                            )
                        }
                    }
                }
            }
            RelType::SubqueryAlias(s) => {
                if !s.qualifier.is_empty() {
                    return refuse("an alias with a qualifier");
                }
                let child = self.input(&s.input)?;
                let ids = with_own(child.ids.clone());
                let child = self.as_query(child);
                let alias = quote_identifier(&s.alias);
                let scope = ids.iter().map(|id| (*id, alias.clone())).collect();
                Frag {
                    sql: format!("({child}) AS {alias}"),
                    from_item: true,
                    filters: Vec::new(),
                    ids,
                    scope,
                    join: None,
                    qualifier: None,
                }
            }
            RelType::ToDf(t) => {
                let child = self.input(&t.input)?;
                let ids = with_own(child.ids.clone());
                let child = self.as_query(child);
                let alias = self.alias();
                let names: Vec<String> = t.column_names.iter().map(|n| quote_identifier(n)).collect();
                Frag::query(format!("SELECT * FROM ({child}) AS {alias}({})", names.join(", ")), ids)
            }
            RelType::WithColumns(w) => {
                let child = self.input(&w.input)?;
                let ids = with_own(child.ids.clone());
                let (from, filters, scope) = self.open(child);
                let input = format!("SELECT * FROM {from}{filters}");
                let mut added = Vec::new();
                for a in &w.aliases {
                    let [name] = a.name.as_slice() else { return refuse("withColumns with a multi-part name") };
                    let e = a.expr.as_deref().ok_or_else(|| Untranslatable("withColumn of nothing".into()))?;
                    added.push((name.clone(), expr(e, &scope)?));
                }
                match self.columns_of(&input)? {
                    None => Frag::query(input, ids),
                    Some(columns) => {
                        // Spark replaces a column of the same name in place and appends the others.
                        let mut items: Vec<String> = columns
                            .iter()
                            .map(|c| match added.iter().find(|(n, _)| n.eq_ignore_ascii_case(c)) {
                                Some((n, e)) => format!("{e} AS {}", quote_identifier(n)),
                                None => quote_identifier(c),
                            })
                            .collect();
                        for (n, e) in &added {
                            if !columns.iter().any(|c| c.eq_ignore_ascii_case(n)) {
                                items.push(format!("{e} AS {}", quote_identifier(n)));
                            }
                        }
                        Frag::query(format!("SELECT {} FROM {from}{filters}", items.join(", ")), ids)
                    }
                }
            }
            RelType::WithColumnsRenamed(w) => {
                let child = self.input(&w.input)?;
                let ids = with_own(child.ids.clone());
                let (from, filters, _) = self.open(child);
                let input = format!("SELECT * FROM {from}{filters}");
                let mut renames: Vec<(String, String)> =
                    w.rename_columns_map.iter().map(|(a, b)| (a.clone(), b.clone())).collect();
                renames.extend(w.renames.iter().map(|r| (r.col_name.clone(), r.new_col_name.clone())));
                match self.columns_of(&input)? {
                    None => Frag::query(input, ids),
                    Some(columns) => {
                        // A name that is not a column is no rename, as on Spark.
                        let items: Vec<String> = columns
                            .iter()
                            .map(|c| match renames.iter().find(|(old, _)| old.eq_ignore_ascii_case(c)) {
                                Some((_, new)) => format!("{} AS {}", quote_identifier(c), quote_identifier(new)),
                                None => quote_identifier(c),
                            })
                            .collect();
                        Frag::query(format!("SELECT {} FROM {from}{filters}", items.join(", ")), ids)
                    }
                }
            }
            RelType::FillNa(f) => self.with_typed_columns(&f.input, own.clone(), |from, filters, columns| {
                Ok(format!("SELECT {} FROM {from}{filters}", fill_na_items(columns, f)?.join(", ")))
            })?,
            RelType::DropNa(d) => self.with_typed_columns(&d.input, own.clone(), |from, filters, columns| {
                let and = if filters.is_empty() { " WHERE" } else { " AND" };
                Ok(format!("SELECT * FROM {from}{filters}{and} ({})", drop_na_condition(columns, d)?))
            })?,
            RelType::Drop(d) => {
                let child = self.input(&d.input)?;
                let ids = with_own(child.ids.clone());
                // By name (`drop("k")`, `drop(F.col("k"))`: every column of that name), or a
                // DataFrame's own column (`drop(right["k"])`: that one only).
                let mut dropped: Vec<(String, Option<i64>)> =
                    d.column_names.iter().map(|c| (c.clone(), None)).collect();
                for c in &d.columns {
                    match &c.expr_type {
                        Some(pb::expression::ExprType::UnresolvedAttribute(a)) => {
                            let name = a.unparsed_identifier.rsplit('.').next().unwrap_or_default().replace('`', "");
                            dropped.push((name, a.plan_id))
                        }
                        _ => return refuse("drop of an expression that is not a column"),
                    }
                }
                let join = child.join.clone().filter(|_| child.from_item);
                let (from, filters, _) = self.open(child);
                if let Some(join) = join.filter(|j| dropped.iter().any(|(_, id)| id.is_some_and(|id| j.holds(id)))) {
                    let Some(items) = self.join_columns_without(&join, &dropped)? else {
                        return Ok(Frag::query(format!("SELECT * FROM {from}{filters}"), ids));
                    };
                    if items.is_empty() {
                        return refuse("drop of every column");
                    }
                    return Ok(Frag::query(format!("SELECT {} FROM {from}{filters}", items.join(", ")), ids));
                }
                let input = format!("SELECT * FROM {from}{filters}");
                match self.columns_of(&input)? {
                    None => Frag::query(input, ids),
                    Some(columns) => {
                        // A DataFrame's column where two columns have its name, and which is which
                        // is not known here (the join is below another operation): refused rather
                        // than both dropped.
                        for (name, id) in &dropped {
                            let same = columns.iter().filter(|c| c.eq_ignore_ascii_case(name)).count();
                            if id.is_some() && same > 1 {
                                return refuse(format!(
                                    "drop of one of the {same} columns named `{name}` below another operation than a join"
                                ));
                            }
                        }
                        // A name that is not a column drops nothing, as on Spark.
                        let kept: Vec<String> = columns
                            .into_iter()
                            .filter(|c| !dropped.iter().any(|(x, _)| x.eq_ignore_ascii_case(c)))
                            .collect();
                        if kept.is_empty() {
                            return refuse("drop of every column");
                        }
                        Frag::query(format!("SELECT {} FROM {from}{filters}", quoted_list(&kept)), ids)
                    }
                }
            }
        })
    }

    /// The columns of query `sql`: `None` when translating without columns, an error (and
    /// `needs`) when they are not known yet.
    fn columns_of(&mut self, sql: &str) -> Result<Option<Vec<String>>> {
        Ok(self.typed_columns_of(sql)?.map(|columns| columns.into_iter().map(|(name, _)| name).collect()))
    }

    /// The columns of query `sql` with their Spark type names, as [`Self::columns_of`].
    fn typed_columns_of(&mut self, sql: &str) -> Result<Option<Vec<(String, String)>>> {
        self.schema_dependent = true;
        let Some(known) = self.known else { return Ok(None) };
        match known.get(sql) {
            Some(columns) => Ok(Some(columns.clone())),
            None => {
                self.needs = Some(sql.to_string());
                refuse("the columns of an input are needed")
            }
        }
    }

    /// `input` as the query `make` writes from its FROM item, WHERE clause and typed columns
    /// (`SELECT *` standing in while they are not known).
    fn with_typed_columns(
        &mut self,
        input: &Option<Box<pb::Relation>>,
        own: Vec<i64>,
        make: impl FnOnce(&str, &str, &[(String, String)]) -> Result<String>,
    ) -> Result<Frag> {
        let child = self.input(input)?;
        let mut ids = child.ids.clone();
        ids.extend(own);
        let (from, filters, _) = self.open(child);
        let query = format!("SELECT * FROM {from}{filters}");
        Ok(match self.typed_columns_of(&query)? {
            None => Frag::query(query, ids),
            Some(columns) => Frag::query(make(&from, &filters, &columns)?, ids),
        })
    }

    /// `unionByName(other, allowMissingColumns=True)`: the left's columns, then the right's that
    /// the left lacks; each side gives NULL for the columns it lacks.
    fn union_with_missing_columns(
        &mut self,
        left: Frag,
        right: Frag,
        s: &pb::SetOperation,
        own: Vec<i64>,
    ) -> Result<Frag> {
        let mut ids = left.ids.clone();
        ids.extend(own);
        let l = self.as_query(left);
        let r = self.as_query(right);
        let kind = match pb::set_operation::SetOpType::try_from(s.set_op_type) {
            Ok(pb::set_operation::SetOpType::Union) => "UNION",
            _ => return refuse("allowMissingColumns on a set operation other than a union"),
        };
        let all = if s.is_all == Some(true) { " ALL" } else { " DISTINCT" };
        let (Some(lc), Some(rc)) = (self.columns_of(&l)?, self.columns_of(&r)?) else {
            return Ok(Frag::query(format!("({l}) {kind}{all} ({r})"), ids));
        };
        let has = |cs: &[String], c: &str| cs.iter().any(|x| x.eq_ignore_ascii_case(c));
        let extra: Vec<&String> = rc.iter().filter(|c| !has(&lc, c)).collect();
        let mut left_items: Vec<String> = lc.iter().map(|c| quote_identifier(c)).collect();
        left_items.extend(extra.iter().map(|c| format!("NULL AS {}", quote_identifier(c))));
        let mut right_items: Vec<String> = lc
            .iter()
            .map(|c| match rc.iter().find(|x| x.eq_ignore_ascii_case(c)) {
                Some(x) => format!("{} AS {}", quote_identifier(x), quote_identifier(c)),
                None => format!("NULL AS {}", quote_identifier(c)),
            })
            .collect();
        right_items.extend(extra.iter().map(|c| quote_identifier(c)));
        let (la, ra) = (self.alias(), self.alias());
        Ok(Frag::query(
            format!(
                "(SELECT {} FROM ({l}) AS {la}) {kind}{all} (SELECT {} FROM ({r}) AS {ra})",
                left_items.join(", "),
                right_items.join(", ")
            ),
            ids,
        ))
    }

    /// `frag` as a query (a FROM item is selected from).
    fn as_query(&mut self, frag: Frag) -> String {
        if frag.from_item {
            let (from, filters, _) = self.open(frag);
            format!("SELECT * FROM {from}{filters}")
        } else {
            frag.sql
        }
    }
}

/// Whether a relation reads a stream.
fn streams(r: &pb::Relation) -> bool {
    use pb::relation::RelType;
    let child = |c: &Option<Box<pb::Relation>>| c.as_deref().is_some_and(streams);
    match &r.rel_type {
        Some(RelType::Read(read)) => read.is_streaming,
        Some(RelType::Sql(s)) => {
            s.query.split(|c: char| !c.is_alphanumeric()).any(|w| w.eq_ignore_ascii_case("STREAM"))
        }
        Some(RelType::Project(x)) => child(&x.input),
        Some(RelType::Filter(x)) => child(&x.input),
        Some(RelType::Join(x)) => child(&x.left) || child(&x.right),
        Some(RelType::SetOp(x)) => child(&x.left_input) || child(&x.right_input),
        Some(RelType::Sort(x)) => child(&x.input),
        Some(RelType::Limit(x)) => child(&x.input),
        Some(RelType::Offset(x)) => child(&x.input),
        Some(RelType::Aggregate(x)) => child(&x.input),
        Some(RelType::Deduplicate(x)) => child(&x.input),
        Some(RelType::SubqueryAlias(x)) => child(&x.input),
        Some(RelType::ToDf(x)) => child(&x.input),
        Some(RelType::WithColumnsRenamed(x)) => child(&x.input),
        Some(RelType::Drop(x)) => child(&x.input),
        Some(RelType::WithColumns(x)) => child(&x.input),
        Some(RelType::FillNa(x)) => child(&x.input),
        Some(RelType::DropNa(x)) => child(&x.input),
        Some(RelType::Range(_)) | None => false,
    }
}

fn quoted_list(columns: &[String]) -> String {
    columns.iter().map(|c| quote_identifier(c)).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::expression::identifier;
    use super::*;
    use crate::civil_date;

    #[test]
    fn dates_are_civil_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(20_454), "2026-01-01");
        assert_eq!(civil_date(-1), "1969-12-31");
        assert_eq!(civil_date(11_016), "2000-02-29");
    }

    #[test]
    fn column_names_are_quoted_part_by_part() {
        assert_eq!(identifier("a").unwrap(), "`a`");
        assert_eq!(identifier("t.a").unwrap(), "`t`.`a`");
        assert_eq!(identifier("`a.b`.c").unwrap(), "`a.b`.`c`");
        assert_eq!(identifier("`a``b`").unwrap(), "`a``b`");
        assert!(identifier("a.").is_err());
    }

    #[test]
    fn a_relation_with_an_undeclared_field_is_refused() {
        let bytes = pb::Relation {
            common: None,
            rel_type: Some(pb::relation::RelType::Range(pb::Range {
                start: None,
                end: 3,
                step: 1,
                num_partitions: None,
            })),
        }
        .encode_to_vec();
        assert_eq!(relation_sql(&bytes).unwrap().sql, "SELECT id FROM range(0, 3, 1)");
        // Field 99 of Relation (nothing this subset declares), varint 1.
        let mut odd = bytes.clone();
        odd.extend([0x98, 0x06, 0x01]);
        assert!(relation_sql(&odd).unwrap_err().0.contains("an argument of an operation"));
        // A project over a sample (field 12, a kind this subset does not declare) names it.
        let sample = [0x62, 0x00];
        let project = [&[0x1a, 2 + sample.len() as u8, 0x0a, sample.len() as u8][..], &sample[..]].concat();
        assert_eq!(
            relation_sql(&project).unwrap_err().0,
            "the DataFrame operation `sample` is not run by the embedded engine"
        );
    }
}
