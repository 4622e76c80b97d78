//! `fillna` / `na.fill` and `dropna` / `na.drop` as Spark SQL over their input's typed columns:
//! which columns a value fills is decided by their types, and a NaN is missing as a NULL is.

use super::{expression_sql, pb, refuse, Result};
use crate::registration::quote_identifier;

/// What kind of column a `fillna` value fills: Spark fills a number into numeric columns, text
/// into STRING ones and a boolean into BOOLEAN ones.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FillKind {
    Number,
    Text,
    Boolean,
}

fn fill_kind_of_value(l: &pb::expression::Literal) -> Result<FillKind> {
    use pb::expression::literal::LiteralType;
    Ok(match &l.literal_type {
        Some(
            LiteralType::Byte(_)
            | LiteralType::Short(_)
            | LiteralType::Integer(_)
            | LiteralType::Long(_)
            | LiteralType::Float(_)
            | LiteralType::Double(_)
            | LiteralType::Decimal(_),
        ) => FillKind::Number,
        Some(LiteralType::String(_)) => FillKind::Text,
        Some(LiteralType::Boolean(_)) => FillKind::Boolean,
        _ => return refuse("fillna with a value that is not a number, a string or a boolean"),
    })
}

fn fill_kind_of_column(spark_type: &str) -> Option<FillKind> {
    let t = spark_type.to_ascii_uppercase();
    if ["TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE"].contains(&t.as_str()) || t.starts_with("DECIMAL") {
        Some(FillKind::Number)
    } else if t == "STRING" {
        Some(FillKind::Text)
    } else if t == "BOOLEAN" {
        Some(FillKind::Boolean)
    } else {
        None
    }
}

fn floating(spark_type: &str) -> bool {
    spark_type.eq_ignore_ascii_case("DOUBLE") || spark_type.eq_ignore_ascii_case("FLOAT")
}

/// `fillna` / `na.fill`: each filled column as `coalesce(c, value)`, the value cast to the
/// column's type, and a NaN of a floating column filled too (Spark's `nanvl`). One value without
/// columns fills every column of its kind; with columns, those of them of its kind; a dict gives
/// each column its value.
pub(super) fn fill_na_items(columns: &[(String, String)], f: &pb::NaFill) -> Result<Vec<String>> {
    let lit = |l: &pb::expression::Literal| {
        expression_sql(&pb::Expression { common: None, expr_type: Some(pb::expression::ExprType::Literal(l.clone())) })
    };
    let value_of = |name: &str, spark_type: &str| -> Result<Option<String>> {
        let kind = fill_kind_of_column(spark_type);
        match (f.cols.as_slice(), f.values.as_slice()) {
            ([], [v]) => Ok((kind == Some(fill_kind_of_value(v)?)).then(|| lit(v)).transpose()?),
            (cols, [v]) if cols.iter().any(|c| c.eq_ignore_ascii_case(name)) => {
                Ok((kind == Some(fill_kind_of_value(v)?)).then(|| lit(v)).transpose()?)
            }
            (cols, values) if cols.len() == values.len() && values.len() > 1 => {
                match cols.iter().position(|c| c.eq_ignore_ascii_case(name)) {
                    None => Ok(None),
                    Some(i) if kind == Some(fill_kind_of_value(&values[i])?) => Ok(Some(lit(&values[i])?)),
                    Some(_) => {
                        refuse(format!("fillna of the {spark_type} column `{name}` with a value of another kind"))
                    }
                }
            }
            (_, [_]) => Ok(None),
            _ => refuse("fillna with other than one value, or one per column"),
        }
    };
    for c in &f.cols {
        if !columns.iter().any(|(n, _)| n.eq_ignore_ascii_case(c)) {
            return refuse(format!("fillna of `{c}`, which is not a column"));
        }
    }
    columns
        .iter()
        .map(|(name, spark_type)| {
            let q = quote_identifier(name);
            Ok(match value_of(name, spark_type)? {
                None => q,
                Some(v) if floating(spark_type) => format!(
                    "CASE WHEN isnan({q}) THEN CAST({v} AS {spark_type}) ELSE coalesce({q}, CAST({v} AS {spark_type})) END AS {q}"
                ),
                Some(v) => format!("coalesce({q}, CAST({v} AS {spark_type})) AS {q}"),
            })
        })
        .collect()
}

/// `dropna` / `na.drop`: rows with at least `min_non_nulls` (every one, by default) of the
/// columns neither NULL nor NaN, as Spark counts them.
pub(super) fn drop_na_condition(columns: &[(String, String)], d: &pb::NaDrop) -> Result<String> {
    let mut chosen = Vec::new();
    if d.cols.is_empty() {
        chosen.extend(columns.iter().cloned());
    } else {
        for c in &d.cols {
            match columns.iter().find(|(n, _)| n.eq_ignore_ascii_case(c)) {
                Some(col) => chosen.push(col.clone()),
                None => return refuse(format!("dropna of `{c}`, which is not a column")),
            }
        }
    }
    let present: Vec<String> = chosen
        .iter()
        .map(|(name, spark_type)| {
            let q = quote_identifier(name);
            if floating(spark_type) {
                format!("{q} IS NOT NULL AND NOT isnan({q})")
            } else {
                format!("{q} IS NOT NULL")
            }
        })
        .collect();
    let needed = d.min_non_nulls.map_or(present.len(), |n| usize::try_from(n).unwrap_or(0));
    if needed == 0 || present.is_empty() {
        return Ok("TRUE".into());
    }
    if needed == present.len() {
        return Ok(present.iter().map(|p| format!("({p})")).collect::<Vec<_>>().join(" AND "));
    }
    let counts: Vec<String> = present.iter().map(|p| format!("CASE WHEN {p} THEN 1 ELSE 0 END")).collect();
    Ok(format!("({}) >= {needed}", counts.join(" + ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fillna_and_dropna_act_on_columns_by_their_type() {
        use pb::expression::literal::LiteralType;
        let lit = |t: LiteralType| pb::expression::Literal { literal_type: Some(t) };
        let columns: Vec<(String, String)> = [("id", "INT"), ("x", "DOUBLE"), ("k", "STRING"), ("d", "DECIMAL(10,2)")]
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .to_vec();
        let fill = pb::NaFill { input: None, cols: vec![], values: vec![lit(LiteralType::Long(0))] };
        assert_eq!(
            fill_na_items(&columns, &fill).unwrap(),
            [
                "coalesce(`id`, CAST(CAST(0 AS BIGINT) AS INT)) AS `id`",
                "CASE WHEN isnan(`x`) THEN CAST(CAST(0 AS BIGINT) AS DOUBLE) ELSE coalesce(`x`, CAST(CAST(0 AS BIGINT) AS DOUBLE)) END AS `x`",
                "`k`",
                "coalesce(`d`, CAST(CAST(0 AS BIGINT) AS DECIMAL(10,2))) AS `d`",
            ]
        );
        let text = pb::NaFill { input: None, cols: vec![], values: vec![lit(LiteralType::String("?".into()))] };
        assert_eq!(fill_na_items(&columns, &text).unwrap()[2], "coalesce(`k`, CAST('?' AS STRING)) AS `k`");
        let drop = pb::NaDrop { input: None, cols: vec!["x".into(), "k".into()], min_non_nulls: Some(1) };
        assert_eq!(
            drop_na_condition(&columns, &drop).unwrap(),
            "(CASE WHEN `x` IS NOT NULL AND NOT isnan(`x`) THEN 1 ELSE 0 END + CASE WHEN `k` IS NOT NULL THEN 1 ELSE 0 END) >= 1"
        );
        let missing = pb::NaDrop { input: None, cols: vec!["nope".into()], min_non_nulls: None };
        assert!(drop_na_condition(&columns, &missing).unwrap_err().0.contains("not a column"));
    }
}
