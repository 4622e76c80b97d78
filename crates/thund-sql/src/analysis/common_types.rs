//! Spark's common types where DataFusion's differ: of the operands of a conditional, a
//! comparison or an `IN` list, of a column of VALUES, and of the columns of a set operation
//! (UNION, and INTERSECT / EXCEPT, which DataFusion plans as semi and anti joins). Part of the
//! plan rule `fidelity::SparkSemantics`, which runs these before the aggregates and windows
//! above read the types.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field};
use datafusion::common::{DFSchema, TableReference};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    cast, BinaryExpr, Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder, Operator, Projection, Union,
};
use datafusion::optimizer::analyzer::type_coercion::coerce_union_schema;

use super::fidelity::refresh_schema;

/// Spark's common type of numbers where it differs from DataFusion's, for the operands of a
/// conditional, a comparison, an `IN` list, or a column of a UNION or VALUES:
/// - a DOUBLE (or FLOAT) with a DECIMAL is a DOUBLE (DataFusion's is a DECIMAL, which rounds the
///   DOUBLE: `0.8333333333333334` becomes `0.83`, or fails on one a DECIMAL cannot hold);
/// - DECIMALs of different types (an integer as the DECIMAL of its type) have the scale of the
///   larger and the integral digits of the larger, and where that is over 38 digits Spark keeps
///   the integral digits and drops scale (DECIMAL(38,0) with DECIMAL(38,18) is DECIMAL(38,0), so
///   on Spark `1 = 1.4` there), where DataFusion keeps the scale.
///
/// `None` where the types are not so mixed.
pub(crate) fn spark_common_number(types: &[DataType]) -> Option<DataType> {
    let decimal = |t: &DataType| matches!(t, DataType::Decimal128(..));
    if !types.iter().any(decimal) {
        return None;
    }
    if types.iter().any(DataType::is_floating) {
        return Some(DataType::Float64);
    }
    let digits = crate::functions::math::decimals::decimal_of;
    let numbers: Vec<(i32, i32)> = types.iter().filter_map(digits).collect();
    let (mut range, mut scale) = (0, 0);
    for (p, s) in &numbers {
        range = range.max(p - s);
        scale = scale.max(*s);
    }
    let (precision, scale) =
        if range + scale > 38 { (38, (scale - (range + scale - 38)).max(0)) } else { (range + scale, scale) };
    let common = DataType::Decimal128(precision as u8, scale as i8);
    let mixed = types.iter().filter(|t| digits(t).is_some()).any(|t| t != &common);
    mixed.then_some(common)
}

/// `x` cast to the common type `to` if it is a number of another type.
fn to_common(x: Expr, to: &DataType, schema: &DFSchema) -> Result<Expr> {
    let t = x.get_type(schema)?;
    Ok(match (&t, to) {
        (DataType::Decimal128(_, from), DataType::Decimal128(_, into)) if into < from => {
            crate::functions::cast::rounded_decimal(x, to.clone())
        }
        _ if t.is_numeric() && &t != to => cast(x, to.clone()),
        _ => x,
    })
}

/// The operands of a conditional (`CASE`, `IF`, `coalesce`, `nvl`, `greatest`, …), a comparison
/// or an `IN` list in Spark's common type of numbers (`spark_common_number`).
pub(super) fn doubles_over_decimals(e: &Expr, schema: &DFSchema) -> Result<Option<Expr>> {
    use datafusion::logical_expr::expr::{Case, InList};
    let common = |exprs: &[&Expr]| -> Result<Option<DataType>> {
        let types: Vec<DataType> = exprs.iter().map(|x| x.get_type(schema)).collect::<Result<_>>()?;
        Ok(spark_common_number(&types))
    };
    Ok(match e {
        Expr::Case(c) => {
            let branches: Vec<&Expr> =
                c.when_then_expr.iter().map(|(_, t)| t.as_ref()).chain(c.else_expr.as_deref()).collect();
            let operands: Vec<&Expr> =
                c.expr.as_deref().into_iter().chain(c.when_then_expr.iter().map(|(w, _)| w.as_ref())).collect();
            let branches = common(&branches)?;
            let operands = if c.expr.is_some() { common(&operands)? } else { None };
            if branches.is_none() && operands.is_none() {
                return Ok(None);
            }
            let then = |x: &Expr| match &branches {
                Some(t) => to_common(x.clone(), t, schema),
                None => Ok(x.clone()),
            };
            let when = |x: &Expr| match &operands {
                Some(t) => to_common(x.clone(), t, schema),
                None => Ok(x.clone()),
            };
            Some(Expr::Case(Case {
                expr: c.expr.as_deref().map(when).transpose()?.map(Box::new),
                when_then_expr: c
                    .when_then_expr
                    .iter()
                    .map(|(w, t)| Ok((Box::new(when(w)?), Box::new(then(t)?))))
                    .collect::<Result<_>>()?,
                else_expr: c.else_expr.as_deref().map(then).transpose()?.map(Box::new),
            }))
        }
        Expr::ScalarFunction(f) => {
            // The arguments that give or compare the answer (`if`'s condition does neither).
            let from = match f.name() {
                "coalesce" | "nvl" | "ifnull" | "greatest" | "least" | "nullif" => 0,
                "if" | "nvl2" => 1,
                _ => return Ok(None),
            };
            let values: Vec<&Expr> = f.args.iter().skip(from).collect();
            let Some(t) = common(&values)? else { return Ok(None) };
            let args = f
                .args
                .iter()
                .enumerate()
                .map(|(i, a)| if i < from { Ok(a.clone()) } else { to_common(a.clone(), &t, schema) })
                .collect::<Result<_>>()?;
            Some(Expr::ScalarFunction(ScalarFunction { func: Arc::clone(&f.func), args }))
        }
        Expr::BinaryExpr(b) if is_comparison(b.op) => {
            // Spark compares no date or timestamp with a number, in either mode.
            let (lt, rt) = (b.left.get_type(schema)?, b.right.get_type(schema)?);
            let datetime = |t: &DataType| matches!(t, DataType::Date32 | DataType::Timestamp(..));
            if lt.is_numeric() && datetime(&rt) || datetime(&lt) && rt.is_numeric() {
                return Err(DataFusionError::Plan(format!(
                    "[DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES] the operands of `{}` have incompatible types (\"{}\" and \"{}\")",
                    b.op,
                    crate::types::spark_type_name(&lt),
                    crate::types::spark_type_name(&rt)
                )));
            }
            let Some(t) = common(&[b.left.as_ref(), b.right.as_ref()])? else { return Ok(None) };
            Some(Expr::BinaryExpr(BinaryExpr::new(
                Box::new(to_common(b.left.as_ref().clone(), &t, schema)?),
                b.op,
                Box::new(to_common(b.right.as_ref().clone(), &t, schema)?),
            )))
        }
        Expr::InList(l) => {
            let all: Vec<&Expr> = std::iter::once(l.expr.as_ref()).chain(&l.list).collect();
            let Some(t) = common(&all)? else { return Ok(None) };
            Some(Expr::InList(InList {
                expr: Box::new(to_common(l.expr.as_ref().clone(), &t, schema)?),
                list: l.list.iter().map(|x| to_common(x.clone(), &t, schema)).collect::<Result<_>>()?,
                negated: l.negated,
            }))
        }
        _ => None,
    })
}

/// The rows of VALUES where a column mixes DOUBLEs and DECIMALs, as DOUBLEs: Spark's common type
/// (`spark_common_number`), where DataFusion's planner cast the DOUBLEs to a DECIMAL; `planned`
/// are the column types the planner gave. (A cast the planner added cannot be told from one the
/// user wrote to the same type: only casts of floating point are read through, and only to a
/// type the planner can have chosen — it reads a DOUBLE as a DECIMAL(30,15), so the common type
/// it casts to has a scale of 15 or more. A user's `CAST(9e37 AS DECIMAL(38,0))` row among
/// DECIMAL(38,0) rows was read through, and the whole column became DOUBLE.)
pub(super) fn values_doubles_over_decimals(values: &mut [Vec<Expr>], planned: &[DataType]) -> Result<()> {
    let empty = DFSchema::empty();
    for (i, column_type) in planned.iter().enumerate() {
        if !matches!(column_type, DataType::Decimal128(_, s) if *s >= 15) {
            continue;
        }
        let own = |e: &Expr| match e {
            Expr::Cast(c)
                if c.field.data_type() == column_type && c.expr.get_type(&empty).is_ok_and(|t| t.is_floating()) =>
            {
                c.expr.as_ref().clone()
            }
            other => other.clone(),
        };
        let types: Vec<DataType> =
            values.iter().filter_map(|r| r.get(i)).map(|e| own(e).get_type(&empty)).collect::<Result<_>>()?;
        if !(types.iter().any(DataType::is_floating) && types.iter().any(|t| matches!(t, DataType::Decimal128(..)))) {
            continue;
        }
        for row in values.iter_mut() {
            if let Some(e) = row.get_mut(i) {
                *e = to_common(own(e), &DataType::Float64, &empty)?;
            }
        }
    }
    Ok(())
}

/// `INTERSECT` and `EXCEPT` (planned as a semi or anti join on every column, NULLs equal) in the
/// types a `UNION` of the two sides has, as on Spark (`99` INTERSECT `99.0` is a DECIMAL);
/// DataFusion's keeps the left side's types.
pub(super) fn set_operation_types(node: LogicalPlan, ansi: bool) -> Result<LogicalPlan> {
    use datafusion::common::{Column, NullEquality};
    use datafusion::logical_expr::JoinType;
    let inputs: Vec<&Arc<LogicalPlan>> = match &node {
        LogicalPlan::Union(u) => u.inputs.iter().collect(),
        LogicalPlan::Join(j)
            if matches!(
                j.join_type,
                datafusion::logical_expr::JoinType::LeftSemi | datafusion::logical_expr::JoinType::LeftAnti
            ) && j.null_equality == NullEquality::NullEqualsNull
                && j.filter.is_none()
                && j.on.len() == j.left.schema().fields().len()
                && j.on.len() == j.right.schema().fields().len() =>
        {
            vec![&j.left, &j.right]
        }
        _ => vec![],
    };
    incompatible_columns(&inputs)?;
    if let LogicalPlan::Union(u) = &node {
        let common = common_columns(u.inputs.iter().map(|i| i.schema().as_ref()), ansi);
        if common.iter().all(Option::is_none) {
            return Ok(node);
        }
        let to = |i: usize, _: Option<&TableReference>, f: &Field| match &common[i] {
            Some(t) if f.data_type() != t => Some(t.clone()),
            _ => None,
        };
        let inputs =
            u.inputs.iter().map(|i| cast_columns(Arc::clone(i), to).map(Arc::new)).collect::<Result<Vec<_>>>()?;
        return refresh_schema(LogicalPlan::Union(Union { inputs, schema: Arc::clone(&u.schema) }));
    }
    let LogicalPlan::Join(j) = &node else { return Ok(node) };
    let width = j.left.schema().fields().len();
    let set_operation = matches!(j.join_type, JoinType::LeftSemi | JoinType::LeftAnti)
        && j.null_equality == NullEquality::NullEqualsNull
        && j.filter.is_none()
        && j.on.len() == width
        && width == j.right.schema().fields().len();
    if !set_operation {
        return Ok(node);
    }
    if ansi {
        // Spark casts the text to the other side's type, failing on a row that is not one, even
        // where the other side has no rows (where the join here would not read the text).
        for (l, r) in j.left.schema().fields().iter().zip(j.right.schema().fields()) {
            let (l, r) = (l.data_type(), r.data_type());
            let other = |t: &DataType| {
                t.is_numeric() || matches!(t, DataType::Boolean | DataType::Date32 | DataType::Timestamp(..))
            };
            if l != r && (l.is_string() && other(r) || r.is_string() && other(l)) {
                return Err(crate::declare::refused(
                    "INTERSECT / EXCEPT",
                    "in ANSI mode Spark casts the text to the other side's type; cast one side explicitly",
                ));
            }
        }
    }
    let numbers = common_columns([j.left.schema().as_ref(), j.right.schema().as_ref()].into_iter(), ansi);
    let common: Vec<DataType> = coerce_union_schema(&[Arc::clone(&j.left), Arc::clone(&j.right)])?
        .fields()
        .iter()
        .zip(numbers)
        .map(|(f, number)| number.unwrap_or_else(|| f.data_type().clone()))
        .collect();
    let same = |side: &LogicalPlan| side.schema().fields().iter().zip(&common).all(|(a, b)| a.data_type() == b);
    if same(&j.left) && same(&j.right) {
        return Ok(node);
    }
    let to_common =
        |i: usize, _: Option<&TableReference>, f: &Field| (f.data_type() != &common[i]).then(|| common[i].clone());
    let columns = |plan: &LogicalPlan| -> Vec<Column> { plan.schema().columns() };
    // The side DataFusion made distinct (INTERSECT and EXCEPT without ALL) is cast below its
    // DISTINCT: Spark removes duplicates of the common type's values, and a cast can make two
    // values one (28.198 and 27.817 as a DECIMAL(38,0) are both 28).
    let cast_side = |side: &Arc<LogicalPlan>| -> Result<LogicalPlan> {
        match side.as_ref() {
            LogicalPlan::Distinct(datafusion::logical_expr::Distinct::All(input)) => Ok(LogicalPlan::Distinct(
                datafusion::logical_expr::Distinct::All(Arc::new(cast_columns(Arc::clone(input), to_common)?)),
            )),
            _ => cast_columns(Arc::clone(side), to_common),
        }
    };
    let (left, right) = (cast_side(&j.left)?, cast_side(&j.right)?);
    let keys = (columns(&left), columns(&right));
    LogicalPlanBuilder::from(left).join_detailed(right, j.join_type, keys, None, NullEquality::NullEqualsNull)?.build()
}

/// Spark refuses a set operation whose columns have no common type in either mode: a number
/// with a date, a timestamp or a BOOLEAN (DataFusion would cast one to the other).
fn incompatible_columns(inputs: &[&Arc<LogicalPlan>]) -> Result<()> {
    let Some(first) = inputs.first() else { return Ok(()) };
    for (i, field) in first.schema().fields().iter().enumerate() {
        let types: Vec<&DataType> =
            inputs.iter().filter_map(|p| p.schema().fields().get(i)).map(|f| f.data_type()).collect();
        let number = types.iter().find(|t| t.is_numeric());
        let other = types.iter().find(|t| matches!(t, DataType::Date32 | DataType::Timestamp(..) | DataType::Boolean));
        if let (Some(number), Some(other)) = (number, other) {
            return Err(DataFusionError::Plan(format!(
                "[INCOMPATIBLE_COLUMN_TYPE] a set operation's column `{}` is {} on one side and {} on another: \
                 they have no common type",
                field.name(),
                crate::types::spark_type_name(number),
                crate::types::spark_type_name(other)
            )));
        }
    }
    Ok(())
}

/// For each column of inputs that are combined (a UNION's, the sides of an INTERSECT), Spark's
/// common type where it differs from DataFusion's: of numbers (`spark_common_number`), and
/// without ANSI mode, of text with a date or timestamp, which is text on Spark too (DataFusion's
/// common type is the date).
fn common_columns<'a>(schemas: impl Iterator<Item = &'a DFSchema>, ansi: bool) -> Vec<Option<DataType>> {
    let mut columns: Vec<Vec<DataType>> = Vec::new();
    for schema in schemas {
        for (i, f) in schema.fields().iter().enumerate() {
            if columns.len() <= i {
                columns.push(Vec::new());
            }
            columns[i].push(f.data_type().clone());
        }
    }
    let datetime = |t: &DataType| matches!(t, DataType::Date32 | DataType::Timestamp(..));
    columns
        .iter()
        .map(|types| {
            spark_common_number(types)
                .or_else(|| {
                    (!ansi && types.iter().any(DataType::is_string) && types.iter().any(datetime))
                        .then_some(DataType::Utf8)
                })
                .or_else(|| common_datetime(types))
        })
        .collect()
}

/// Dates with timestamps: Spark's TIMESTAMP where one is (in microseconds and the session's
/// zone), else TIMESTAMP_NTZ (DataFusion's common type is a timestamp in nanoseconds without a
/// zone). `None` where they are not all dates and timestamps, or are all of one type.
fn common_datetime(types: &[DataType]) -> Option<DataType> {
    let known: Vec<&DataType> = types.iter().filter(|t| !t.is_null()).collect();
    if known.windows(2).all(|w| w[0] == w[1])
        || !known.iter().all(|t| matches!(t, DataType::Date32 | DataType::Timestamp(..)))
    {
        return None;
    }
    let zone = known.iter().find_map(|t| match t {
        DataType::Timestamp(_, Some(zone)) => Some(Arc::clone(zone)),
        _ => None,
    });
    Some(DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, zone))
}

/// `plan` under a projection that casts each column to the type `to` gives for it (by position,
/// qualifier and field; none: as it is), keeping their names so that the nodes above still find
/// them.
pub(super) fn cast_columns(
    plan: Arc<LogicalPlan>,
    to: impl Fn(usize, Option<&TableReference>, &Field) -> Option<DataType>,
) -> Result<LogicalPlan> {
    let exprs = plan
        .schema()
        .iter()
        .enumerate()
        .map(|(i, (q, f))| {
            let column = Expr::from((q, f));
            match to(i, q, f) {
                Some(t) => cast(column, t).alias_qualified(q.cloned(), f.name()),
                None => column,
            }
        })
        .collect();
    Ok(LogicalPlan::Projection(Projection::try_new(exprs, plan)?))
}

/// Whether `op` compares its operands (`=`, `<>`, `<`, `<=`, `>`, `>=`, `IS [NOT] DISTINCT FROM`).
pub(crate) fn is_comparison(op: Operator) -> bool {
    matches!(
        op,
        Operator::Eq
            | Operator::NotEq
            | Operator::Lt
            | Operator::LtEq
            | Operator::Gt
            | Operator::GtEq
            | Operator::IsDistinctFrom
            | Operator::IsNotDistinctFrom
    )
}
