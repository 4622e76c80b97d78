//! A seeded generator of Spark SQL queries that compose: random tables (every stored type, with
//! NULL, ±0.0, NaN, DECIMAL at its precision edges, timestamps across a DST change, names in mixed
//! case) and random queries over them — subqueries and CTEs with ORDER BY / LIMIT / OFFSET at any
//! level, every join kind with ON / USING / NATURAL, set operations, GROUP BY with GROUPING SETS /
//! CUBE / ROLLUP in both spellings, HAVING, FILTER, window functions with named windows and frames,
//! CASE / IF / COALESCE over mixed types, DECIMAL arithmetic, implicit casts, correlated scalar /
//! IN / EXISTS subqueries.
//!
//! Every query is self-contained (its tables are `VALUES` in a `WITH`) and deterministic: a LIMIT
//! or OFFSET sits only under an ORDER BY of every column, and a window function that depends on
//! the order of rows within a partition (`row_number`, `lag`, a ROWS frame) orders by a unique key
//! last. The same seed gives the same query, so a difference is reproduced from its seed alone.
#![allow(dead_code)]

use std::fmt::Write;

/// SplitMix64: small, fast, and the same sequence on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The column types a generated table holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Int,
    Big,
    Double,
    Dec(u8, u8),
    Str,
    Bool,
    Date,
    Ts,
}

impl Ty {
    fn sql(self) -> String {
        match self {
            Ty::Int => "INT".into(),
            Ty::Big => "BIGINT".into(),
            Ty::Double => "DOUBLE".into(),
            Ty::Dec(p, s) => format!("DECIMAL({p},{s})"),
            Ty::Str => "STRING".into(),
            Ty::Bool => "BOOLEAN".into(),
            Ty::Date => "DATE".into(),
            Ty::Ts => "TIMESTAMP".into(),
        }
    }

    fn numeric(self) -> bool {
        matches!(self, Ty::Int | Ty::Big | Ty::Double | Ty::Dec(..))
    }

    fn integral(self) -> bool {
        matches!(self, Ty::Int | Ty::Big)
    }

    /// Whether values of the two types compare without a cast the user writes.
    fn comparable(self, other: Ty) -> bool {
        self == other || self.numeric() && other.numeric()
    }
}

const VALUE_TYPES: [Ty; 11] = [
    Ty::Int,
    Ty::Big,
    Ty::Double,
    Ty::Dec(10, 2),
    Ty::Dec(38, 18),
    Ty::Dec(38, 0),
    Ty::Dec(5, 3),
    Ty::Str,
    Ty::Bool,
    Ty::Date,
    Ty::Ts,
];

/// Value column names, mixed case; tables draw from one pool so that they share some.
const NAMES: [&str; 10] = ["a", "B", "Amt", "price", "qty", "Name", "note", "d", "Ts", "flag"];

/// A literal of a type, edges and NULL included.
fn literal(rng: &mut Rng, ty: Ty) -> String {
    if rng.chance(12) {
        return format!("CAST(NULL AS {})", ty.sql());
    }
    match ty {
        Ty::Int => {
            let v: i64 = match rng.below(20) {
                0 => i32::MAX as i64,
                1 => i32::MIN as i64,
                _ => rng.below(21) as i64 - 10,
            };
            format!("CAST({v} AS INT)")
        }
        Ty::Big => {
            let v: i128 = match rng.below(20) {
                0 => i64::MAX as i128,
                1 => i64::MIN as i128,
                2 => 3_000_000_000,
                _ => rng.below(201) as i128 - 100,
            };
            format!("CAST({v} AS BIGINT)")
        }
        Ty::Double => {
            let v = match rng.below(24) {
                0 => "NaN".to_string(),
                1 => "-0.0".to_string(),
                2 => "0.0".to_string(),
                3 => "Infinity".to_string(),
                4 => "1.0E300".to_string(),
                // Quarters add exactly in binary, in any order.
                _ => format!("{}", (rng.below(81) as f64 - 40.0) / 4.0),
            };
            format!("CAST('{v}' AS DOUBLE)")
        }
        Ty::Dec(p, s) => {
            let int_digits = (p - s) as usize;
            let whole = match rng.below(6) {
                0 if int_digits > 0 => "9".repeat(int_digits),
                1 => "0".to_string(),
                _ => format!("{}", rng.below(10usize.pow(int_digits.min(3) as u32).max(1))),
            };
            let frac: String = (0..s).map(|_| char::from(b'0' + rng.below(10) as u8)).collect();
            let sign = if rng.chance(30) { "-" } else { "" };
            let text = if s == 0 { format!("{sign}{whole}") } else { format!("{sign}{whole}.{frac}") };
            format!("CAST('{text}' AS {})", ty.sql())
        }
        Ty::Str => {
            let v = rng.pick(&["a", "B", "abc", "", " x ", "Ab", "10", "2.5", "é", "2024-03-10", "true", "-7"]);
            format!("'{v}'")
        }
        Ty::Bool => rng.pick(&["true", "false"]).to_string(),
        Ty::Date => {
            let v = rng.pick(&[
                "2024-02-29",
                "2024-03-10",
                "2024-03-11",
                "1970-01-01",
                "2023-12-31",
                "2024-11-03",
                "1999-01-01",
                "9999-12-31",
            ]);
            format!("DATE'{v}'")
        }
        Ty::Ts => {
            let v = rng.pick(&[
                "2024-03-10 01:30:00",
                "2024-03-10 02:30:00",
                "2024-03-10 03:30:00",
                "2024-11-03 01:30:00",
                "2024-11-03 01:30:00.123456",
                "1970-01-01 00:00:00",
                "2024-02-29 23:59:59.999",
                "1969-12-31 23:59:59",
            ]);
            format!("TIMESTAMP'{v}'")
        }
    }
}

/// A generated table: `id` (unique, never NULL), `k` (a small join key with NULLs) and two to four
/// value columns.
pub struct Table {
    pub name: String,
    pub cols: Vec<(String, Ty)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn random(rng: &mut Rng, name: &str) -> Table {
        let mut cols = vec![("id".to_string(), Ty::Int), ("k".to_string(), Ty::Int)];
        let mut names: Vec<&str> = NAMES.to_vec();
        for _ in 0..2 + rng.below(3) {
            let i = rng.below(names.len());
            let n = names.remove(i);
            cols.push((n.to_string(), *rng.pick(&VALUE_TYPES)));
        }
        let rows = (0..1 + rng.below(8))
            .map(|r| {
                cols.iter()
                    .enumerate()
                    .map(|(c, (_, ty))| match c {
                        0 => format!("{}", r + 1),
                        1 if rng.chance(15) => "CAST(NULL AS INT)".to_string(),
                        1 => format!("{}", rng.below(4)),
                        _ => literal(rng, *ty),
                    })
                    .collect()
            })
            .collect();
        Table { name: name.to_string(), cols, rows }
    }

    /// The table as a `WITH` item.
    fn cte(&self) -> String {
        let rows: Vec<String> = self.rows.iter().map(|r| format!("({})", r.join(", "))).collect();
        let names: Vec<&str> = self.cols.iter().map(|(n, _)| n.as_str()).collect();
        format!("{} AS (SELECT * FROM VALUES {} AS {}({}))", self.name, rows.join(", "), self.name, names.join(", "))
    }
}

/// A column a query can reference.
#[derive(Debug, Clone)]
struct Col {
    qual: Option<String>,
    name: String,
    ty: Ty,
}

impl Col {
    fn sql(&self) -> String {
        match &self.qual {
            Some(q) => format!("{q}.{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// A relation in a FROM clause: its text, its columns and a list of columns that together are
/// unique (empty: none known).
struct Source {
    sql: String,
    cols: Vec<Col>,
    key: Vec<String>,
}

/// One query's worth of state: the tables and a counter for fresh aliases.
pub struct Generator<'a> {
    rng: &'a mut Rng,
    tables: &'a [Table],
    aliases: usize,
}

/// The tables one group of queries shares.
pub fn tables(rng: &mut Rng) -> Vec<Table> {
    ["t1", "t2", "t3"].iter().map(|n| Table::random(rng, n)).collect()
}

/// One query over `tables`, self-contained.
pub fn query(rng: &mut Rng, tables: &[Table]) -> String {
    let mut g = Generator { rng, tables, aliases: 0 };
    let body = g.top();
    let ctes: Vec<String> = tables.iter().map(Table::cte).collect();
    format!("WITH {}\n{body}", ctes.join(",\n"))
}

impl Generator<'_> {
    fn alias(&mut self, prefix: &str) -> String {
        self.aliases += 1;
        format!("{prefix}{}", self.aliases)
    }

    fn top(&mut self) -> String {
        let (sql, width) = match self.rng.below(10) {
            0 | 1 => self.set_operation(),
            _ => {
                let (sql, cols) = self.select(2, None);
                (sql, cols.len())
            }
        };
        if self.rng.chance(45) {
            format!("{sql}\n{}", self.order_by_all(width))
        } else {
            sql
        }
    }

    /// ORDER BY every output column (so that the order is total up to equal rows), then maybe
    /// LIMIT / OFFSET.
    fn order_by_all(&mut self, width: usize) -> String {
        let keys: Vec<String> = (1..=width)
            .map(|i| {
                let dir = if self.rng.chance(40) { " DESC" } else { "" };
                let nulls = match self.rng.below(4) {
                    0 => " NULLS FIRST",
                    1 => " NULLS LAST",
                    _ => "",
                };
                format!("{i}{dir}{nulls}")
            })
            .collect();
        let mut out = format!("ORDER BY {}", keys.join(", "));
        if self.rng.chance(50) {
            write!(out, " LIMIT {}", self.rng.below(5)).unwrap();
        }
        if self.rng.chance(15) {
            write!(out, " OFFSET {}", self.rng.below(3)).unwrap();
        }
        out
    }

    fn set_operation(&mut self) -> (String, usize) {
        let width = 1 + self.rng.below(3);
        let (left, _) = self.select_of_width(width);
        let (right, _) = self.select_of_width(width);
        let op = self.rng.pick(&[
            "UNION",
            "UNION ALL",
            "INTERSECT",
            "INTERSECT ALL",
            "EXCEPT",
            "EXCEPT ALL",
            "UNION DISTINCT",
            "MINUS",
        ]);
        (format!("{left}\n{op}\n{right}"), width)
    }

    /// A plain SELECT of `width` columns of any types over one source.
    fn select_of_width(&mut self, width: usize) -> (String, Vec<Ty>) {
        let source = self.source(1);
        let mut items = Vec::new();
        let mut types = Vec::new();
        for i in 0..width {
            let (e, ty) = self.value(&source.cols, 1);
            items.push(format!("{e} AS c{i}"));
            types.push(ty);
        }
        let filter = if self.rng.chance(40) {
            format!(" WHERE {}", self.predicate(&source.cols, 1, &[]))
        } else {
            String::new()
        };
        (format!("SELECT {} FROM {}{filter}", items.join(", "), source.sql), types)
    }

    /// A SELECT over a random source; `outer` is the scope of an enclosing query (for correlated
    /// subqueries). Its columns come back as they can be referenced from a FROM (`c0`, `c1`, …).
    fn select(&mut self, depth: usize, outer: Option<&[Col]>) -> (String, Vec<(String, Ty)>) {
        let source = self.source(depth);
        let outer = outer.unwrap_or(&[]);
        let filter = if self.rng.chance(45) {
            format!("\nWHERE {}", self.predicate(&source.cols, depth, outer))
        } else {
            String::new()
        };
        match self.rng.below(10) {
            0..=3 => self.aggregate(source, filter, depth),
            4..=5 => self.windowed(source, filter),
            _ => {
                let distinct = if self.rng.chance(10) { "DISTINCT " } else { "" };
                if self.rng.chance(12) && distinct.is_empty() {
                    // `SELECT *`: the column order of joins (USING keys first) is part of the answer.
                    let cols = source.cols.iter().map(|c| (c.name.clone(), c.ty)).collect();
                    return (format!("SELECT * FROM {}{filter}", source.sql), cols);
                }
                let mut items = Vec::new();
                let mut cols = Vec::new();
                for i in 0..1 + self.rng.below(3) {
                    let (e, ty) = if depth > 0 && self.rng.chance(12) {
                        self.scalar_subquery(&source.cols)
                    } else {
                        self.value(&source.cols, 2)
                    };
                    items.push(format!("{e} AS c{i}"));
                    cols.push((format!("c{i}"), ty));
                }
                (format!("SELECT {distinct}{} FROM {}{filter}", items.join(", "), source.sql), cols)
            }
        }
    }

    fn aggregate(&mut self, source: Source, filter: String, depth: usize) -> (String, Vec<(String, Ty)>) {
        let groupable: Vec<Col> = source.cols.clone();
        let nkeys = self.rng.below(3).min(groupable.len());
        let mut keys: Vec<Col> = Vec::new();
        for _ in 0..nkeys {
            let c = self.rng.pick(&groupable).clone();
            if !keys.iter().any(|k| k.sql() == c.sql()) {
                keys.push(c);
            }
        }
        let key_sql: Vec<String> = keys.iter().map(Col::sql).collect();
        let group_by = if keys.is_empty() {
            String::new()
        } else {
            let list = key_sql.join(", ");
            let sets = || {
                let mut s = vec![format!("({list})")];
                s.push(format!("({})", key_sql[0]));
                s.push("()".to_string());
                s.join(", ")
            };
            match self.rng.below(10) {
                0 => format!("\nGROUP BY ROLLUP({list})"),
                1 => format!("\nGROUP BY CUBE({list})"),
                2 => format!("\nGROUP BY GROUPING SETS ({})", sets()),
                3 => format!("\nGROUP BY {list} WITH ROLLUP"),
                4 => format!("\nGROUP BY {list} WITH CUBE"),
                5 => format!("\nGROUP BY {list} GROUPING SETS ({})", sets()),
                _ => format!("\nGROUP BY {list}"),
            }
        };
        let grouping_sets = group_by.contains("ROLLUP") || group_by.contains("CUBE") || group_by.contains("SETS");
        let mut items = Vec::new();
        let mut cols = Vec::new();
        for k in &keys {
            items.push(format!("{} AS c{}", k.sql(), items.len()));
            cols.push((format!("c{}", cols.len()), k.ty));
        }
        if grouping_sets && self.rng.chance(40) {
            items.push(format!("grouping_id() AS c{}", items.len()));
            cols.push((format!("c{}", cols.len()), Ty::Big));
        }
        for _ in 0..1 + self.rng.below(3) {
            let (e, ty) = self.aggregate_call(&source.cols, depth);
            items.push(format!("{e} AS c{}", items.len()));
            cols.push((format!("c{}", cols.len()), ty));
        }
        let having = if self.rng.chance(25) {
            let (e, ty) = self.aggregate_call(&source.cols, 0);
            let (lit, _) = self.value_of(&[], ty, 0);
            format!("\nHAVING {e} {} {lit}", self.rng.pick(&["=", "<>", "<", ">=", "<=>"]))
        } else {
            String::new()
        };
        (format!("SELECT {} FROM {}{filter}{group_by}{having}", items.join(", "), source.sql), cols)
    }

    /// An aggregate function call over the scope, maybe with DISTINCT or FILTER.
    fn aggregate_call(&mut self, scope: &[Col], depth: usize) -> (String, Ty) {
        let (arg, ty) = self.value(scope, 1);
        let (call, out) = match self.rng.below(9) {
            0 => ("count(*)".to_string(), Ty::Big),
            1 => (format!("count({arg})"), Ty::Big),
            2 => (format!("count(DISTINCT {arg})"), Ty::Big),
            3 => (format!("min({arg})"), ty),
            4 => (format!("max({arg})"), ty),
            5 | 6 => {
                let (n, nty) = self.numeric(scope, 1);
                let d = if self.rng.chance(15) { "DISTINCT " } else { "" };
                (format!("sum({d}{n})"), sum_type(nty))
            }
            7 => {
                let (n, nty) = self.numeric(scope, 1);
                (format!("avg({n})"), avg_type(nty))
            }
            _ => {
                let (n, _) = self.numeric(scope, 1);
                let f = self.rng.pick(&["stddev_pop", "var_samp", "bool_or", "bool_and"]);
                if f.starts_with("bool") {
                    let p = self.predicate(scope, 0, &[]);
                    (format!("{f}({p})"), Ty::Bool)
                } else {
                    (format!("{f}({n})"), Ty::Double)
                }
            }
        };
        if self.rng.chance(15) {
            let p = if depth > 0 && self.rng.chance(20) {
                let (sub, _) = self.scalar_subquery(scope);
                format!("{sub} IS NOT NULL")
            } else {
                self.predicate(scope, 0, &[])
            };
            (format!("{call} FILTER (WHERE {p})"), out)
        } else {
            (call, out)
        }
    }

    fn windowed(&mut self, source: Source, filter: String) -> (String, Vec<(String, Ty)>) {
        let mut items = Vec::new();
        let mut cols = Vec::new();
        for _ in 0..1 + self.rng.below(2) {
            let (e, ty) = self.value(&source.cols, 1);
            items.push(format!("{e} AS c{}", items.len()));
            cols.push((format!("c{}", cols.len()), ty));
        }
        let named = self.rng.chance(25);
        let partition: Vec<String> = (0..self.rng.below(3)).map(|_| self.rng.pick(&source.cols).sql()).collect();
        let partition_sql =
            if partition.is_empty() { String::new() } else { format!("PARTITION BY {}", partition.join(", ")) };
        for _ in 0..1 + self.rng.below(2) {
            let total = !source.key.is_empty();
            if named {
                // A named window holds the partitioning only: `OVER w` and `OVER (w)`.
                let (call, ty, _) = self.window_call(&source.cols, true);
                let over = if self.rng.chance(50) { "w" } else { "(w)" };
                items.push(format!("{call} OVER {over} AS c{}", items.len()));
                cols.push((format!("c{}", cols.len()), ty));
                continue;
            }
            let mut order: Vec<String> = (0..self.rng.below(3))
                .map(|_| {
                    let c = self.rng.pick(&source.cols).sql();
                    if self.rng.chance(30) {
                        format!("{c} DESC")
                    } else {
                        c
                    }
                })
                .collect();
            let (call, ty, needs_total) = self.window_call(&source.cols, order.is_empty());
            let positional = ["rank", "row_number", "lag", "lead"].iter().any(|f| call.contains(f));
            let frame = if positional || order.is_empty() || !self.rng.chance(30) {
                ""
            } else if total && self.rng.chance(50) {
                " ROWS BETWEEN 1 PRECEDING AND CURRENT ROW"
            } else {
                " RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
            };
            if needs_total || frame.starts_with(" ROWS") {
                if !total {
                    continue;
                }
                order.extend(source.key.iter().cloned());
            }
            let order_sql = if order.is_empty() { String::new() } else { format!(" ORDER BY {}", order.join(", ")) };
            let sep = if partition_sql.is_empty() { "" } else { " " };
            let spec = format!("{partition_sql}{sep}{}{frame}", order_sql.trim_start());
            items.push(format!("{call} OVER ({}) AS c{}", spec.trim(), items.len()));
            cols.push((format!("c{}", cols.len()), ty));
        }
        let window = if named { format!("\nWINDOW w AS ({partition_sql})") } else { String::new() };
        (format!("SELECT {} FROM {}{filter}{window}", items.join(", "), source.sql), cols)
    }

    /// A window function: its call, its type, and whether it needs a total order.
    fn window_call(&mut self, scope: &[Col], unordered: bool) -> (String, Ty, bool) {
        let (arg, ty) = self.value(scope, 1);
        match self.rng.below(if unordered { 5 } else { 10 }) {
            0 => ("count(*)".into(), Ty::Big, false),
            1 => (format!("max({arg})"), ty, false),
            2 => (format!("min({arg})"), ty, false),
            3 => {
                let (n, nty) = self.numeric(scope, 1);
                (format!("sum({n})"), sum_type(nty), false)
            }
            4 => {
                let (n, nty) = self.numeric(scope, 1);
                (format!("avg({n})"), avg_type(nty), false)
            }
            5 => ("rank()".into(), Ty::Int, false),
            6 => ("dense_rank()".into(), Ty::Int, false),
            7 => ("row_number()".into(), Ty::Int, true),
            8 => (format!("lag({arg})"), ty, true),
            _ => (format!("lead({arg}, 2)"), ty, true),
        }
    }

    /// A FROM item: a table, a subquery (maybe ordered and limited), or a join.
    fn source(&mut self, depth: usize) -> Source {
        match self.rng.below(10) {
            0..=3 => self.table(),
            4..=5 if depth > 0 => {
                let (sql, cols) = self.select(depth - 1, None);
                let limit =
                    if self.rng.chance(40) { format!("\n{}", self.order_by_all(cols.len())) } else { String::new() };
                let a = self.alias("s");
                let cols: Vec<Col> =
                    cols.into_iter().map(|(name, ty)| Col { qual: Some(a.clone()), name, ty }).collect();
                Source { sql: format!("({sql}{limit}) AS {a}"), cols, key: vec![] }
            }
            _ => {
                let left = self.table();
                let right = if depth > 0 && self.rng.chance(20) { self.source(depth - 1) } else { self.table() };
                self.join(left, right)
            }
        }
    }

    fn table(&mut self) -> Source {
        let t = self.rng.pick(self.tables);
        let prefix = if self.rng.chance(50) { "x" } else { "T" };
        let a = self.alias(prefix);
        let cols = t.cols.iter().map(|(n, ty)| Col { qual: Some(a.clone()), name: n.clone(), ty: *ty }).collect();
        Source { sql: format!("{} AS {a}", t.name), cols, key: vec![format!("{a}.id")] }
    }

    fn join(&mut self, left: Source, right: Source) -> Source {
        let kind = *self.rng.pick(&[
            "JOIN",
            "INNER JOIN",
            "LEFT JOIN",
            "RIGHT JOIN",
            "FULL OUTER JOIN",
            "LEFT SEMI JOIN",
            "LEFT ANTI JOIN",
            "CROSS JOIN",
        ]);
        let semi = kind.contains("SEMI") || kind.contains("ANTI");
        // Columns both sides name alike with one type: what USING and NATURAL may join on.
        let common: Vec<(String, Ty)> = left
            .cols
            .iter()
            .filter_map(|l| {
                let r = right.cols.iter().find(|r| r.name.eq_ignore_ascii_case(&l.name))?;
                (r.ty == l.ty).then(|| (l.name.clone(), l.ty))
            })
            .collect();
        let all_common = left
            .cols
            .iter()
            .all(|l| right.cols.iter().filter(|r| r.name.eq_ignore_ascii_case(&l.name)).all(|r| r.ty == l.ty));
        let style = if kind == "CROSS JOIN" { 0 } else { 1 + self.rng.below(3) };
        let key: Vec<String> = if semi || left.key.is_empty() || right.key.is_empty() {
            if semi {
                left.key.clone()
            } else {
                vec![]
            }
        } else {
            left.key.iter().chain(&right.key).cloned().collect()
        };
        let both = |cols: Vec<Col>| Source { sql: String::new(), cols, key: key.clone() };
        match style {
            2 if !common.is_empty() => {
                let n = 1 + self.rng.below(common.len().min(2));
                let using: Vec<(String, Ty)> = common[..n].to_vec();
                let names: Vec<&str> = using.iter().map(|(n, _)| n.as_str()).collect();
                let mut cols = self.using_columns(&left, &right, &using, kind);
                if semi {
                    cols = left.cols.clone();
                }
                let mut s = both(cols);
                s.sql = format!("{} {kind} {} USING ({})", left.sql, right.sql, names.join(", "));
                s
            }
            3 if all_common && !common.is_empty() && kind != "CROSS JOIN" => {
                let mut cols = self.using_columns(&left, &right, &common, kind);
                if semi {
                    cols = left.cols.clone();
                }
                let mut s = both(cols);
                s.sql = format!("{} NATURAL {kind} {}", left.sql, right.sql);
                s
            }
            0 => {
                let cols = left.cols.iter().chain(&right.cols).cloned().collect();
                let mut s = both(cols);
                s.sql = format!("{} CROSS JOIN {}", left.sql, right.sql);
                s
            }
            _ => {
                let scope: Vec<Col> = left.cols.iter().chain(&right.cols).cloned().collect();
                let l = self.rng.pick(&left.cols).clone();
                let candidates: Vec<&Col> = right.cols.iter().filter(|r| r.ty.comparable(l.ty)).collect();
                let mut on = match candidates.is_empty() {
                    true => "true".to_string(),
                    false => format!("{} = {}", l.sql(), self.rng.pick(&candidates).sql()),
                };
                if self.rng.chance(30) {
                    write!(on, " AND {}", self.predicate(&scope, 0, &[])).unwrap();
                }
                let cols = if semi { left.cols.clone() } else { scope };
                let mut s = both(cols);
                s.sql = format!("{} {kind} {} ON {on}", left.sql, right.sql);
                s
            }
        }
    }

    /// The columns of a USING / NATURAL join: the keys first (unqualified), then either side's
    /// other columns. Qualified references to either side's key stay in scope.
    fn using_columns(&mut self, left: &Source, right: &Source, using: &[(String, Ty)], _kind: &str) -> Vec<Col> {
        let mut cols: Vec<Col> = using.iter().map(|(n, ty)| Col { qual: None, name: n.clone(), ty: *ty }).collect();
        let is_key = |c: &Col| using.iter().any(|(n, _)| n.eq_ignore_ascii_case(&c.name));
        cols.extend(left.cols.iter().filter(|c| !is_key(c)).cloned());
        cols.extend(right.cols.iter().filter(|c| !is_key(c)).cloned());
        cols
    }

    /// `(SELECT agg(…) FROM t WHERE t.k = outer.c)`: a correlated scalar subquery.
    fn scalar_subquery(&mut self, outer: &[Col]) -> (String, Ty) {
        let inner = self.table();
        let ints: Vec<&Col> = outer.iter().filter(|c| c.ty.integral()).collect();
        let corr = if ints.is_empty() || self.rng.chance(15) {
            String::new()
        } else {
            format!(" WHERE {}.k = {}", inner.cols[0].qual.as_deref().unwrap_or(""), self.rng.pick(&ints).sql())
        };
        let (agg, ty) = match self.rng.below(4) {
            0 => ("count(*)".to_string(), Ty::Big),
            1 => ("count(1) IS NULL".to_string(), Ty::Bool),
            _ => {
                let c = self.rng.pick(&inner.cols).clone();
                (format!("max({})", c.sql()), c.ty)
            }
        };
        (format!("(SELECT {agg} FROM {}{corr})", inner.sql), ty)
    }

    /// A numeric expression.
    fn numeric(&mut self, scope: &[Col], depth: usize) -> (String, Ty) {
        let ty = *self.rng.pick(&[Ty::Int, Ty::Big, Ty::Double, Ty::Dec(10, 2), Ty::Dec(38, 18)]);
        self.value_of(scope, ty, depth)
    }

    /// An expression of any type.
    fn value(&mut self, scope: &[Col], depth: usize) -> (String, Ty) {
        if !scope.is_empty() && self.rng.chance(55) {
            let c = self.rng.pick(scope);
            return (c.sql(), c.ty);
        }
        let ty = *self.rng.pick(&VALUE_TYPES);
        self.value_of(scope, ty, depth)
    }

    /// An expression of (about) a type: a column of it, a literal, or an operation giving it.
    fn value_of(&mut self, scope: &[Col], ty: Ty, depth: usize) -> (String, Ty) {
        let of_type: Vec<&Col> = scope.iter().filter(|c| c.ty == ty).collect();
        if depth == 0 || self.rng.chance(35) {
            if !of_type.is_empty() && self.rng.chance(70) {
                return (self.rng.pick(&of_type).sql(), ty);
            }
            return (literal(self.rng, ty), ty);
        }
        let d = depth - 1;
        match self.rng.below(6) {
            // Conditionals over mixed types: Spark widens them.
            0 => {
                let (a, at) = self.value_of(scope, ty, d);
                let other = if ty.numeric() { self.numeric(scope, d) } else { self.value_of(scope, ty, d) };
                let p = self.predicate(scope, d, &[]);
                let out = if at == other.1 { at } else { wider(at, other.1) };
                match self.rng.below(4) {
                    0 => (format!("CASE WHEN {p} THEN {a} ELSE {} END", other.0), out),
                    1 => (format!("IF({p}, {a}, {})", other.0), out),
                    2 => (format!("coalesce({a}, {})", other.0), out),
                    _ => (format!("nullif({a}, {a})"), at),
                }
            }
            1 if ty.numeric() => {
                let (a, at) = self.value_of(scope, ty, d);
                let (b, bt) = self.numeric(scope, d);
                let op = self.rng.pick(&["+", "-", "*", "/", "%"]);
                let out = if *op == "/" && at.integral() && bt.integral() { Ty::Double } else { wider(at, bt) };
                (format!("({a} {op} {b})"), out)
            }
            2 => {
                // A cast from another type, as users write them (and as Spark's rules allow).
                let from = *self.rng.pick(&VALUE_TYPES);
                let (a, _) = self.value_of(scope, from, d);
                (format!("CAST({a} AS {})", ty.sql()), ty)
            }
            3 => self.function_of(scope, ty, d),
            4 if ty == Ty::Bool => (self.predicate(scope, d, &[]), Ty::Bool),
            _ => {
                if !of_type.is_empty() {
                    (self.rng.pick(&of_type).sql(), ty)
                } else {
                    (literal(self.rng, ty), ty)
                }
            }
        }
    }

    /// A function call that answers about `ty`.
    fn function_of(&mut self, scope: &[Col], ty: Ty, d: usize) -> (String, Ty) {
        match ty {
            Ty::Int | Ty::Big => {
                let f = self.rng.below(6);
                match f {
                    0 => {
                        let (s, _) = self.value_of(scope, Ty::Str, d);
                        (format!("length({s})"), Ty::Int)
                    }
                    1 => {
                        let (a, _) = self.value_of(scope, Ty::Date, d);
                        (format!("year({a})"), Ty::Int)
                    }
                    2 => {
                        let (a, _) = self.value_of(scope, Ty::Date, d);
                        let (b, _) = self.value_of(scope, Ty::Date, d);
                        (format!("datediff({a}, {b})"), Ty::Int)
                    }
                    3 => {
                        let (a, at) = self.value_of(scope, ty, d);
                        (format!("abs({a})"), at)
                    }
                    4 => {
                        let (a, _) = self.value_of(scope, Ty::Ts, d);
                        (format!("hour({a})"), Ty::Int)
                    }
                    _ => {
                        let (a, at) = self.numeric(scope, d);
                        (format!("CAST(floor({a}) AS BIGINT)"), at)
                    }
                }
            }
            Ty::Double => {
                let (a, _) = self.numeric(scope, d);
                let f = self.rng.pick(&["sqrt", "ln", "exp", "sign", "CAST"]);
                if *f == "CAST" {
                    (format!("CAST({a} AS DOUBLE)"), Ty::Double)
                } else {
                    (format!("{f}({a})"), Ty::Double)
                }
            }
            Ty::Dec(..) => {
                let (a, at) = self.value_of(scope, ty, d);
                match self.rng.below(3) {
                    0 => (format!("round({a}, {})", self.rng.below(4)), at),
                    1 => (format!("abs({a})"), at),
                    _ => (format!("-{a}"), at),
                }
            }
            Ty::Str => {
                let (s, _) = self.value_of(scope, Ty::Str, d);
                match self.rng.below(7) {
                    0 => (format!("upper({s})"), Ty::Str),
                    1 => {
                        let (t, _) = self.value(scope, d);
                        (format!("concat({s}, {t})"), Ty::Str)
                    }
                    2 => (format!("substr({s}, {}, {})", self.rng.below(4) as i64 - 1, self.rng.below(3)), Ty::Str),
                    3 => (format!("trim({s})"), Ty::Str),
                    4 => {
                        let (t, _) = self.value(scope, d);
                        (format!("({s} || {t})"), Ty::Str)
                    }
                    5 => (format!("lower({s})"), Ty::Str),
                    _ => {
                        let (t, _) = self.value(scope, d);
                        (format!("CAST({t} AS STRING)"), Ty::Str)
                    }
                }
            }
            Ty::Bool => (self.predicate(scope, d, &[]), Ty::Bool),
            Ty::Date => {
                let (a, _) = self.value_of(scope, Ty::Date, d);
                match self.rng.below(4) {
                    0 => (format!("date_add({a}, {})", self.rng.below(5) as i64 - 2), Ty::Date),
                    1 => {
                        let (t, _) = self.value_of(scope, Ty::Ts, d);
                        (format!("CAST({t} AS DATE)"), Ty::Date)
                    }
                    2 => (format!("last_day({a})"), Ty::Date),
                    _ => (format!("({a} + {})", self.rng.below(3)), Ty::Date),
                }
            }
            Ty::Ts => {
                let (a, _) = self.value_of(scope, Ty::Ts, d);
                match self.rng.below(3) {
                    0 => (format!("({a} + INTERVAL {} HOUR)", self.rng.below(30)), Ty::Ts),
                    1 => (format!("date_trunc('{}', {a})", self.rng.pick(&["HOUR", "DAY", "MONTH"])), Ty::Ts),
                    _ => {
                        let (dd, _) = self.value_of(scope, Ty::Date, d);
                        (format!("CAST({dd} AS TIMESTAMP)"), Ty::Ts)
                    }
                }
            }
        }
    }

    /// A boolean expression; `outer` columns may be referenced by subqueries (correlation).
    fn predicate(&mut self, scope: &[Col], depth: usize, outer: &[Col]) -> String {
        let _ = outer;
        match self.rng.below(if depth == 0 { 3 } else { 9 }) {
            0 | 1 => {
                let (a, at) = self.value(scope, depth.min(1));
                let (b, _) = if self.rng.chance(15) {
                    // Mixed types: an implicit cast (text and numbers, dates and text).
                    self.value(scope, 0)
                } else {
                    self.value_of(scope, at, depth.min(1))
                };
                let op = self.rng.pick(&["=", "<>", "<", "<=", ">", ">=", "<=>", "!="]);
                format!("{a} {op} {b}")
            }
            2 => {
                let (a, _) = self.value(scope, 0);
                if self.rng.chance(50) {
                    format!("{a} IS NULL")
                } else {
                    format!("{a} IS NOT NULL")
                }
            }
            3 => {
                let l = self.predicate(scope, depth - 1, outer);
                let r = self.predicate(scope, depth - 1, outer);
                format!("({l} {} {r})", self.rng.pick(&["AND", "OR"]))
            }
            4 => format!("NOT ({})", self.predicate(scope, depth - 1, outer)),
            5 => {
                let (a, at) = self.value(scope, 0);
                let items: Vec<String> = (0..1 + self.rng.below(3)).map(|_| self.value_of(&[], at, 0).0).collect();
                let not = if self.rng.chance(30) { "NOT " } else { "" };
                format!("{a} {not}IN ({})", items.join(", "))
            }
            6 => {
                // IN / NOT IN a subquery (NULLs on either side are the classic trap).
                let ints: Vec<&Col> = scope.iter().filter(|c| c.ty.integral()).collect();
                let a = if ints.is_empty() { "1".to_string() } else { self.rng.pick(&ints).sql() };
                let inner = self.table();
                let not = if self.rng.chance(40) { "NOT " } else { "" };
                let cond = if self.rng.chance(50) {
                    format!(" WHERE {}", self.predicate(&inner.cols, 0, &[]))
                } else {
                    String::new()
                };
                format!("{a} {not}IN (SELECT {} FROM {}{cond})", inner.cols[1].sql(), inner.sql)
            }
            7 => {
                let inner = self.table();
                let ints: Vec<&Col> = scope.iter().filter(|c| c.ty.integral()).collect();
                let corr = if ints.is_empty() {
                    "true".to_string()
                } else {
                    format!("{} = {}", inner.cols[1].sql(), self.rng.pick(&ints).sql())
                };
                let extra = if self.rng.chance(40) {
                    format!(" AND {}", self.predicate(&inner.cols, 0, &[]))
                } else {
                    String::new()
                };
                let not = if self.rng.chance(40) { "NOT " } else { "" };
                format!("{not}EXISTS (SELECT 1 FROM {} WHERE {corr}{extra})", inner.sql)
            }
            _ => {
                let (sub, ty) = self.scalar_subquery(scope);
                let (v, _) = self.value_of(scope, ty, 0);
                format!("{sub} {} {v}", self.rng.pick(&["=", "<", ">=", "<=>"]))
            }
        }
    }
}

/// Spark's type of `sum` over a type (roughly; only the generator's choices depend on it).
fn sum_type(t: Ty) -> Ty {
    match t {
        Ty::Int | Ty::Big => Ty::Big,
        Ty::Dec(p, s) => Ty::Dec((p + 10).min(38), s),
        other => other,
    }
}

fn avg_type(t: Ty) -> Ty {
    match t {
        Ty::Dec(p, s) => Ty::Dec((p + 4).min(38), (s + 4).min(38)),
        _ => Ty::Double,
    }
}

fn wider(a: Ty, b: Ty) -> Ty {
    match (a, b) {
        (x, y) if x == y => x,
        (Ty::Double, _) | (_, Ty::Double) => Ty::Double,
        (Ty::Dec(p, s), _) | (_, Ty::Dec(p, s)) => Ty::Dec(p, s),
        (Ty::Big, _) | (_, Ty::Big) => Ty::Big,
        (x, _) => x,
    }
}
