//! Spark's names for the columns of a select list that has none of its own: `SELECT count(*),
//! x + 1, upper(name)` gives columns `count(1)`, `(x + 1)` and `upper(name)` on Spark, and so a
//! table with those column names. DataFusion names them after its own plan (`count(*)`,
//! `t.x + Int32(1)`, `upper(t.name)`), so each such item gets Spark's name as an alias before
//! planning.
//!
//! The names follow what Spark 4.1 prints (checked on a real server by
//! `thund-cli/tests/spark_functions.rs`, which compares column names too): binary operators in
//! parentheses, function names in lower case with their arguments, literals by their value
//! (strings without quotes), a column or a cast or field of one by its own name. An expression
//! whose Spark name is not known here keeps DataFusion's, as does one whose name would repeat
//! another column's in the same list (Spark allows that, a DataFusion plan does not).

use std::ops::ControlFlow;

use sqlparser::ast::{
    AccessExpr, BinaryOperator, CastKind, CeilFloorKind, DataType, DateTimeField, DuplicateTreatment, Expr,
    FunctionArg, FunctionArgExpr, FunctionArguments, Ident, Select, SelectItem, SetExpr, Subscript, UnaryOperator,
    Value,
};

/// Gives every unnamed item of `body`'s select lists (each side of a set operation) Spark's name.
pub(crate) fn name_select_items(body: &mut SetExpr) {
    match body {
        SetExpr::Select(select) => name_items(select),
        SetExpr::SetOperation { left, right, .. } => {
            name_select_items(left);
            name_select_items(right);
        }
        _ => {}
    }
}

fn name_items(select: &mut Select) {
    let mut taken: Vec<String> = select.projection.iter().filter_map(own_name).map(|n| n.to_lowercase()).collect();
    for item in select.projection.iter_mut() {
        // An alias keeps its case, as on Spark (the planner lower-cases what is not quoted).
        if let SelectItem::ExprWithAlias { alias, .. } = item {
            if alias.quote_style.is_none() {
                alias.quote_style = Some('`');
            }
            continue;
        }
        // A column keeps its own name; `s.f` (a table's column, or a struct's field) is named too.
        let SelectItem::UnnamedExpr(expr) = item else { continue };
        // A column is named as it is written (`SELECT N1` of a column `n1` is a column `N1` on
        // Spark; the planner would lower-case it), which an unquoted name in lower case already is.
        if let Expr::Identifier(i) = &*expr {
            let written_otherwise = i.quote_style.is_none() && i.value.chars().any(|c| c.is_uppercase());
            // (Its own name is among `taken` once; twice, another item is named alike.)
            let lower = i.value.to_lowercase();
            if written_otherwise && taken.iter().filter(|t| **t == lower).count() == 1 {
                let alias = Ident::with_quote('`', i.value.clone());
                *item = SelectItem::ExprWithAlias { expr: expr.clone(), alias };
            }
            continue;
        }
        // A generator's columns are named after what it generates (`col`, `pos`, …).
        // (`json_tuple` becomes one: its columns are `c0`, `c1`, ….)
        let generator =
            |name: &str| crate::functions::generator::is_generator(name) || name.eq_ignore_ascii_case("json_tuple");
        if matches!(expr, Expr::Function(f) if generator(&f.name.to_string())) {
            continue;
        }
        let Some(name) = top_level_name(expr) else { continue };
        if taken.contains(&name.to_lowercase()) {
            continue;
        }
        taken.push(name.to_lowercase());
        *item = SelectItem::ExprWithAlias { expr: expr.clone(), alias: Ident::with_quote('`', name) };
    }
}

/// The columns an alias names (`FROM VALUES … AS t(id, Name)`, `WITH t(a, B) AS …`) keep the case
/// they are written in, as on Spark; references to them still ignore case (`resolution`).
pub(crate) fn keep_alias_case(alias: &mut sqlparser::ast::TableAlias) {
    for column in &mut alias.columns {
        if column.name.quote_style.is_none() {
            column.name.quote_style = Some('`');
        }
    }
}

/// The name an item has before any is given: its alias, or a column's own name.
fn own_name(item: &SelectItem) -> Option<String> {
    match item {
        SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
        SelectItem::UnnamedExpr(Expr::Identifier(i)) => Some(i.value.clone()),
        _ => None,
    }
}

/// Spark's name of a select-list expression: a column, a field of one or a cast of either is
/// named after the column or field; anything else after its SQL as Spark prints it.
pub(crate) fn top_level_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Identifier(i) => Some(i.value.clone()),
        Expr::CompoundIdentifier(ids) => ids.last().map(|i| i.value.clone()),
        Expr::Nested(inner) => top_level_name(inner),
        Expr::Cast { expr, kind: CastKind::Cast | CastKind::TryCast | CastKind::DoubleColon, .. }
            if is_column_or_field(expr) =>
        {
            top_level_name(expr)
        }
        Expr::CompoundFieldAccess { access_chain, .. } if matches!(access_chain.last(), Some(AccessExpr::Dot(_))) => {
            match access_chain.last() {
                Some(AccessExpr::Dot(Expr::Identifier(i))) => Some(i.value.clone()),
                _ => None,
            }
        }
        other => sql(other),
    }
}

fn is_column_or_field(e: &Expr) -> bool {
    match e {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => true,
        Expr::Nested(inner) => is_column_or_field(inner),
        Expr::CompoundFieldAccess { access_chain, .. } => matches!(access_chain.last(), Some(AccessExpr::Dot(_))),
        _ => false,
    }
}

/// Whether `e` is plainly a date: a `DATE '…'` literal or a call of a function answering one.
fn is_date(e: &Expr) -> bool {
    const DATE_FUNCTIONS: [&str; 11] = [
        "to_date",
        "date_add",
        "date_sub",
        "dateadd",
        "current_date",
        "add_months",
        "last_day",
        "next_day",
        "make_date",
        "date",
        "date_from_unix_date",
    ];
    match e {
        Expr::TypedString(t) => t.data_type == DataType::Date,
        Expr::Function(f) => DATE_FUNCTIONS.contains(&f.name.to_string().to_ascii_lowercase().as_str()),
        Expr::Nested(inner) => is_date(inner),
        _ => false,
    }
}

/// `e` as Spark prints it inside a name, or `None` where that is not known here.
pub(crate) fn sql(e: &Expr) -> Option<String> {
    Some(match e {
        Expr::Identifier(i) => i.value.clone(),
        // Inside an expression a column is named without its table.
        Expr::CompoundIdentifier(ids) => ids.last()?.value.clone(),
        Expr::Nested(inner) => sql(inner)?,
        Expr::Value(v) => literal(&v.value)?,
        Expr::Interval(i) => crate::functions::interval::literals::Literal::parse(i).ok()?.text(),
        Expr::TypedString(t) => {
            let value = match &t.value.value {
                Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
                _ => return None,
            };
            match t.data_type {
                DataType::Date => format!("DATE '{value}'"),
                DataType::Timestamp(None, sqlparser::ast::TimezoneInfo::None) => format!("TIMESTAMP '{value}'"),
                DataType::TimestampNtz(None) => format!("TIMESTAMP_NTZ '{value}'"),
                _ => return None,
            }
        }
        Expr::UnaryOp { op: UnaryOperator::Minus, expr } => match expr.as_ref() {
            Expr::Value(v) if matches!(v.value, Value::Number(..)) => format!("-{}", literal(&v.value)?),
            other => format!("(- {})", sql(other)?),
        },
        Expr::UnaryOp { op: UnaryOperator::Not | UnaryOperator::BangNot, expr } => format!("(NOT {})", sql(expr)?),
        Expr::UnaryOp { op: UnaryOperator::Plus, expr } => format!("(+ {})", sql(expr)?),
        Expr::UnaryOp { op: UnaryOperator::BitwiseNot, expr } => format!("~{}", sql(expr)?),
        Expr::BinaryOp { left, op, right } => {
            let (l, r) = (sql(left)?, sql(right)?);
            // A date or timestamp plus or minus an interval literal is named without
            // parentheses, a date moved by days as the `date_add` Spark computes it with.
            if let (BinaryOperator::Plus | BinaryOperator::Minus, Expr::Interval(i)) = (op, right.as_ref()) {
                let days_only =
                    i.leading_field.as_ref().is_some_and(|f| f.to_string().to_ascii_uppercase().starts_with("DAY"))
                        && i.last_field.is_none();
                if days_only && is_date(left) {
                    let days = format!("extractansiintervaldays({r})");
                    let days = if *op == BinaryOperator::Minus { format!("(- {days})") } else { days };
                    return Some(format!("date_add({l}, {days})"));
                }
                if !matches!(left.as_ref(), Expr::Interval(_)) {
                    return Some(format!("{l} {} {r}", operator(op)?));
                }
            }
            // Spark multiplies an interval by a number, the interval first.
            if *op == BinaryOperator::Multiply
                && matches!(right.as_ref(), Expr::Interval(_))
                && !matches!(left.as_ref(), Expr::Interval(_))
            {
                return Some(format!("({r} * {l})"));
            }
            match op {
                BinaryOperator::StringConcat => format!("concat({l}, {r})"),
                BinaryOperator::NotEq => format!("(NOT ({l} = {r}))"),
                BinaryOperator::MyIntegerDivide => format!("({l} div {r})"),
                BinaryOperator::PGBitwiseShiftLeft => format!("({l} << {r})"),
                BinaryOperator::PGBitwiseShiftRight => format!("({l} >> {r})"),
                BinaryOperator::Custom(op) if op == ">>>" => format!("({l} >>> {r})"),
                op => format!("({l} {} {r})", operator(op)?),
            }
        }
        Expr::IsNull(inner) => format!("({} IS NULL)", sql(inner)?),
        Expr::IsNotNull(inner) => format!("({} IS NOT NULL)", sql(inner)?),
        Expr::InList { expr, list, negated } => {
            let items = list.iter().map(sql).collect::<Option<Vec<_>>>()?.join(", ");
            let test = format!("({} IN ({items}))", sql(expr)?);
            if *negated {
                format!("(NOT {test})")
            } else {
                test
            }
        }
        Expr::Between { expr, negated, low, high } => {
            let test = format!("between({}, {}, {})", sql(expr)?, sql(low)?, sql(high)?);
            if *negated {
                format!("(NOT {test})")
            } else {
                test
            }
        }
        Expr::Like { negated, any: false, expr, pattern, escape_char: None } => {
            let test = format!("{} LIKE {}", sql(expr)?, sql(pattern)?);
            if *negated {
                format!("(NOT {test})")
            } else {
                test
            }
        }
        Expr::Case { operand, conditions, else_result, .. } => {
            let mut out = String::from("CASE");
            for c in conditions {
                let condition = match operand {
                    Some(o) => format!("({} = {})", sql(o)?, sql(&c.condition)?),
                    None => sql(&c.condition)?,
                };
                out.push_str(&format!(" WHEN {condition} THEN {}", sql(&c.result)?));
            }
            if let Some(e) = else_result {
                out.push_str(&format!(" ELSE {}", sql(e)?));
            }
            out.push_str(" END");
            out
        }
        Expr::Cast { kind: CastKind::Cast | CastKind::DoubleColon, expr, data_type, format: None, .. } => {
            format!("CAST({} AS {})", sql(expr)?, type_name(data_type)?)
        }
        Expr::CompoundFieldAccess { root, access_chain } => {
            let mut out = sql(root)?;
            for access in access_chain {
                match access {
                    AccessExpr::Dot(Expr::Identifier(i)) => out.push_str(&format!(".{}", i.value)),
                    AccessExpr::Subscript(Subscript::Index { index }) => out.push_str(&format!("[{}]", sql(index)?)),
                    _ => return None,
                }
            }
            out
        }
        Expr::Function(f) => {
            if f.over.is_some() || f.filter.is_some() || !f.within_group.is_empty() || f.null_treatment.is_some() {
                return None;
            }
            let name = f.name.0.last()?.as_ident()?.value.to_lowercase();
            let (distinct, args) = match &f.args {
                FunctionArguments::None => (false, Vec::new()),
                FunctionArguments::List(list) => {
                    if !list.clauses.is_empty() {
                        return None;
                    }
                    let distinct = matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct));
                    let args = list
                        .args
                        .iter()
                        .map(|a| match a {
                            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => sql(e),
                            FunctionArg::Unnamed(FunctionArgExpr::Wildcard) if name == "count" => Some("1".into()),
                            _ => None,
                        })
                        .collect::<Option<Vec<_>>>()?;
                    (distinct, args)
                }
                FunctionArguments::Subquery(_) => return None,
            };
            let mut args = args;
            // Spark prints the arguments these take by default.
            let default = match (name.as_str(), args.len()) {
                ("position" | "locate", 2) | ("regexp_replace", 3) => Some("1"),
                ("substring" | "substr", 2) => Some("2147483647"),
                ("lpad" | "rpad", 2) => Some(" "),
                ("regexp_instr" | "regexp_extract" | "regexp_extract_all", 2) => Some("0"),
                ("from_unixtime", 1) => Some("yyyy-MM-dd HH:mm:ss"),
                ("mask", 1..=4) => {
                    // Spark prints the replacements it takes by default.
                    let defaults = ["X", "x", "n", "NULL"];
                    args.extend(defaults[args.len() - 1..].iter().map(|d| d.to_string()));
                    None
                }
                // `aggregate`'s finish is the identity.
                ("aggregate" | "reduce", 3) => Some("lambdafunction(namedlambdavariable(), namedlambdavariable())"),
                ("percentile_approx" | "approx_percentile", 2) => Some("10000"),
                // The frequency of each value.
                ("percentile", 2) => Some("1"),
                ("make_interval" | "try_make_interval", 0..=6) => {
                    let defaults = ["0", "0", "0", "0", "0", "0", "0.000000"];
                    args.extend(defaults[args.len()..].iter().map(|d| d.to_string()));
                    None
                }
                ("assert_true", 1) => {
                    let message = format!("'{}' is not true!", args[0]);
                    args.push(message);
                    None
                }
                _ => None,
            };
            args.extend(default.map(String::from));
            match name.as_str() {
                "if" if args.len() == 3 => return Some(format!("(IF({}))", args.join(", "))),
                "if" => return None,
                // Spark names a parse of JSON after its text only.
                "from_json" if !args.is_empty() => return Some(format!("from_json({})", args[0])),
                "str_to_map" if args.len() == 1 => args.extend([",".into(), ":".into()]),
                "datepart" if args.len() == 2 => return Some(format!("datepart({} FROM {})", args[0], args[1])),
                // Whether NULLs are skipped is not in the name.
                "first" | "last" | "first_value" | "last_value" | "any_value" if args.len() == 2 => {
                    return Some(format!("{name}({})", args[0]))
                }
                "positive" if args.len() == 1 => return Some(format!("(+ {})", args[0])),
                // The type a value is read as is not in the name.
                "variant_get" | "try_variant_get" if args.len() == 3 => {
                    return Some(format!("{name}({}, {})", args[0], args[1]))
                }
                "current_database" => return Some("current_schema()".into()),
                _ => {}
            }
            let name = match name.as_str() {
                "array_agg" => "collect_list".to_string(),
                n if UPPER_CASE.contains(&n) => n.to_uppercase(),
                _ => name,
            };
            let distinct = if distinct { "DISTINCT " } else { "" };
            format!("{name}({distinct}{})", args.join(", "))
        }
        Expr::Ceil { expr, field: CeilFloorKind::DateTimeField(DateTimeField::NoDateTime) } => {
            format!("CEIL({})", sql(expr)?)
        }
        Expr::Floor { expr, field: CeilFloorKind::DateTimeField(DateTimeField::NoDateTime) } => {
            format!("FLOOR({})", sql(expr)?)
        }
        Expr::Substring { expr, substring_from: Some(from), substring_for, shorthand, .. } => {
            let length = match substring_for {
                Some(l) => sql(l)?,
                None => "2147483647".into(),
            };
            let name = if *shorthand { "substr" } else { "substring" };
            format!("{name}({}, {}, {length})", sql(expr)?, sql(from)?)
        }
        Expr::Overlay { expr, overlay_what, overlay_from, overlay_for } => {
            let length = match overlay_for {
                Some(l) => sql(l)?,
                None => "-1".into(),
            };
            format!("overlay({}, {}, {}, {length})", sql(expr)?, sql(overlay_what)?, sql(overlay_from)?)
        }
        Expr::Position { expr, r#in } => format!("locate({}, {}, 1)", sql(expr)?, sql(r#in)?),
        Expr::Struct { values, fields } if fields.is_empty() => {
            format!("struct({})", values.iter().map(sql).collect::<Option<Vec<_>>>()?.join(", "))
        }
        Expr::Extract { field, expr, .. } => format!("extract({field} FROM {})", sql(expr)?),
        Expr::Lambda(lambda) => {
            // Spark prints a lambda's variables without their names.
            let params: Vec<&str> = lambda.params.iter().map(|p| p.name.value.as_str()).collect();
            let mut body = lambda.body.as_ref().clone();
            // `(x, y)` is Spark's `named_struct('x', x, 'y', y)`, as the engine plans it.
            let _ = sqlparser::ast::visit_expressions_mut(&mut body, |e| {
                if let Expr::Tuple(values) = e {
                    let as_struct = Expr::Struct { values: std::mem::take(values), fields: Vec::new() };
                    *e = crate::analysis::spellings::rewrite_struct(&as_struct).unwrap_or(as_struct);
                }
                std::ops::ControlFlow::<()>::Continue(())
            });
            let _ = sqlparser::ast::visit_expressions_mut(&mut body, |e| {
                if matches!(e, Expr::Identifier(i) if params.contains(&i.value.as_str())) {
                    *e = Expr::Identifier(Ident::new(LAMBDA_VARIABLE));
                }
                if let Expr::CompoundIdentifier(ids) = e {
                    if ids.len() > 1 && params.contains(&ids[0].value.as_str()) {
                        let fields: Vec<&str> = ids[1..].iter().map(|i| i.value.as_str()).collect();
                        *e = Expr::Identifier(Ident::new(format!("{LAMBDA_VARIABLE}.{}", fields.join("."))));
                    }
                }
                std::ops::ControlFlow::<()>::Continue(())
            });
            let variables = vec![LAMBDA_VARIABLE; params.len()].join(", ");
            format!("lambdafunction({}, {variables})", sql(&body)?)
        }
        Expr::Trim { expr, trim_where, trim_what, trim_characters: None } => match (trim_where, trim_what) {
            (None, None) => format!("trim({})", sql(expr)?),
            (Some(w), Some(what)) => format!("TRIM({w} {} FROM {})", sql(what)?, sql(expr)?),
            (None, Some(what)) => format!("TRIM(BOTH {} FROM {})", sql(what)?, sql(expr)?),
            _ => return None,
        },
        _ => return None,
    })
}

/// How Spark prints a lambda's variable.
const LAMBDA_VARIABLE: &str = "namedlambdavariable()";

/// Functions Spark prints in upper case (as its math functions name themselves).
const UPPER_CASE: [&str; 33] = [
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "cbrt",
    "ceil",
    "cos",
    "cosh",
    "cot",
    "csc",
    "degrees",
    "exp",
    "expm1",
    "floor",
    "hypot",
    "log",
    "log10",
    "log1p",
    "log2",
    "pi",
    "power",
    "radians",
    "regexp_like",
    "sec",
    "signum",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
];

fn literal(v: &Value) -> Option<String> {
    Some(match v {
        // A DOUBLE with an exponent prints as Java prints it (`1.5e3` is `1500.0`): not done here.
        Value::Number(n, _) if n.ends_with("E0") && !n[..n.len() - 2].contains(['e', 'E']) => {
            n[..n.len() - 2].to_string()
        }
        Value::Number(n, _) if n.contains(['e', 'E']) => return None,
        // A number prints by its value: `.5` is `0.5`, `01.5` is `1.5`.
        Value::Number(n, _) => {
            let trimmed = n.trim_start_matches('0').trim_end_matches('.');
            match trimmed.chars().next() {
                None => "0".into(),
                Some('.') => format!("0{trimmed}"),
                Some(_) => trimmed.to_string(),
            }
        }
        Value::HexStringLiteral(h) => format!("X'{}'", h.to_uppercase()),
        Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => {
            crate::analysis::string_literals::spark_unescape(s)
        }
        Value::Boolean(b) => b.to_string(),
        Value::Null => "NULL".into(),
        _ => return None,
    })
}

fn operator(op: &BinaryOperator) -> Option<&'static str> {
    Some(match op {
        BinaryOperator::Plus => "+",
        BinaryOperator::Minus => "-",
        BinaryOperator::Multiply => "*",
        BinaryOperator::Divide => "/",
        BinaryOperator::Modulo => "%",
        BinaryOperator::Eq => "=",
        BinaryOperator::Gt => ">",
        BinaryOperator::Lt => "<",
        BinaryOperator::GtEq => ">=",
        BinaryOperator::LtEq => "<=",
        BinaryOperator::Spaceship => "<=>",
        BinaryOperator::And => "AND",
        BinaryOperator::Or => "OR",
        BinaryOperator::BitwiseAnd => "&",
        BinaryOperator::BitwiseOr => "|",
        BinaryOperator::BitwiseXor => "^",
        _ => return None,
    })
}

/// Spark's name of a type written in a cast.
fn type_name(t: &DataType) -> Option<String> {
    use sqlparser::ast::ExactNumberInfo;
    Some(match t {
        DataType::Int(_) | DataType::Integer(_) => "INT".into(),
        DataType::BigInt(_) => "BIGINT".into(),
        DataType::SmallInt(_) => "SMALLINT".into(),
        DataType::TinyInt(_) => "TINYINT".into(),
        DataType::String(_) => "STRING".into(),
        DataType::Double(_) | DataType::DoublePrecision => "DOUBLE".into(),
        DataType::Float(_) | DataType::Real => "FLOAT".into(),
        DataType::Boolean | DataType::Bool => "BOOLEAN".into(),
        DataType::Date => "DATE".into(),
        DataType::Timestamp(None, sqlparser::ast::TimezoneInfo::None) => "TIMESTAMP".into(),
        DataType::Decimal(ExactNumberInfo::PrecisionAndScale(p, s))
        | DataType::Numeric(ExactNumberInfo::PrecisionAndScale(p, s)) => format!("DECIMAL({p},{s})"),
        _ => return None,
    })
}

/// Spark's names for an inline table's columns, `col1`, `col2`, … (DataFusion's are `column1`,
/// …): every `VALUES` query becomes `SELECT * FROM (VALUES …) AS __values(col1, …)`, which an
/// alias's own column names (`VALUES (1, 2) AS t(a, b)`) rename as before.
pub(crate) fn name_inline_tables(query: &mut sqlparser::ast::Query, _: &crate::modes::SqlModes) -> Result<(), String> {
    use sqlparser::ast::{
        GroupByExpr, Query, SelectFlavor, TableAlias, TableAliasColumnDef, TableFactor, TableWithJoins, VisitMut,
        VisitorMut, WildcardAdditionalOptions,
    };
    struct Inline;
    impl VisitorMut for Inline {
        type Break = ();
        // After the query's own parts are visited, so the query written here is not visited again.
        fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            let SetExpr::Values(values) = query.body.as_ref() else { return ControlFlow::Continue(()) };
            let Some(width) = values.rows.first().map(|r| r.len()) else { return ControlFlow::Continue(()) };
            let values = Query {
                with: None,
                body: Box::new(SetExpr::Values(values.clone())),
                order_by: None,
                limit_clause: None,
                fetch: None,
                locks: vec![],
                for_clause: None,
                settings: None,
                format_clause: None,
                pipe_operators: vec![],
            };
            let alias = TableAlias {
                explicit: true,
                name: Ident::new("__values"),
                at: None,
                columns: (1..=width).map(|i| TableAliasColumnDef::from_name(format!("col{i}"))).collect(),
            };
            let select = Select {
                select_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
                optimizer_hints: vec![],
                distinct: None,
                select_modifiers: None,
                top: None,
                top_before_distinct: false,
                projection: vec![SelectItem::Wildcard(WildcardAdditionalOptions::default())],
                exclude: None,
                into: None,
                from: vec![TableWithJoins {
                    relation: TableFactor::Derived {
                        lateral: false,
                        subquery: Box::new(values),
                        alias: Some(alias),
                        sample: None,
                    },
                    joins: vec![],
                }],
                lateral_views: vec![],
                prewhere: None,
                selection: None,
                connect_by: vec![],
                group_by: GroupByExpr::Expressions(vec![], vec![]),
                cluster_by: vec![],
                distribute_by: vec![],
                sort_by: vec![],
                having: None,
                named_window: vec![],
                qualify: None,
                window_before_qualify: false,
                value_table_mode: None,
                flavor: SelectFlavor::Standard,
            };
            *query.body = SetExpr::Select(Box::new(select));
            ControlFlow::Continue(())
        }
    }
    let _ = query.visit(&mut Inline);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(select: &str) -> Vec<String> {
        let dialect = sqlparser::dialect::GenericDialect {};
        let mut stmt = sqlparser::parser::Parser::parse_sql(&dialect, select).unwrap().remove(0);
        let sqlparser::ast::Statement::Query(q) = &mut stmt else { panic!("a query") };
        name_select_items(&mut q.body);
        let SetExpr::Select(s) = q.body.as_ref() else { panic!("a select") };
        s.projection
            .iter()
            .map(|i| match i {
                SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
                other => format!("unnamed {other}"),
            })
            .collect()
    }

    #[test]
    fn spark_names_what_it_prints() {
        // Each name as Spark 4.1.4 gave it for the same expression.
        assert_eq!(
            names(
                "SELECT 1 + 2, -x, abs(-1), upper('abc'), count(*), count(DISTINCT x), CAST(x AS STRING), \
                 CAST(x + 1 AS DOUBLE), x IS NULL, x NOT IN (1, 2), CASE x WHEN 1 THEN 'a' END, \
                 x BETWEEN 1 AND 2, s.f, a[x - 1], y || 'z', x <> 1, position('b', y), if(x > 1, 1, 0), \
                 .5, 'it''s', DATE '2020-01-01' FROM t"
            ),
            [
                "(1 + 2)",
                "(- x)",
                "abs(-1)",
                "upper(abc)",
                "count(1)",
                "count(DISTINCT x)",
                "x",
                "CAST((x + 1) AS DOUBLE)",
                "(x IS NULL)",
                "(NOT (x IN (1, 2)))",
                "CASE WHEN (x = 1) THEN a END",
                "between(x, 1, 2)",
                "f",
                "a[(x - 1)]",
                "concat(y, z)",
                "(NOT (x = 1))",
                "position(b, y, 1)",
                "(IF((x > 1), 1, 0))",
                "0.5",
                "it's",
                "DATE '2020-01-01'",
            ]
        );
    }

    #[test]
    fn a_name_that_would_repeat_another_is_left_to_the_planner() {
        assert_eq!(names("SELECT t.a + 1, u.a + 1, x FROM t"), ["(a + 1)", "unnamed u.a + 1", "unnamed x"]);
        assert_eq!(names("SELECT t.a, u.a FROM t"), ["a", "unnamed u.a"]);
        assert_eq!(names("SELECT x AS `(a + 1)`, t.a + 1 FROM t"), ["(a + 1)", "unnamed t.a + 1"]);
    }
}
