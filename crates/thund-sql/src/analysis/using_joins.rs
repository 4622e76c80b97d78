//! Spark's join columns of `JOIN … USING (k)`: one column `k` per key, first in `SELECT *`,
//! then the left side's other columns, then the right side's (none in a semi or anti join); and read unqualified, `k` is the
//! left side's key in an inner or left join, the right side's in a right join, and the one that
//! is not NULL in a full join. DataFusion's planner puts the keys where the left side has them,
//! and reads `k` as the left side's key in every join (NULL for a right join's unmatched rows).
//!
//! The rule rewrites a SELECT over one `l JOIN r USING (…)` whose sides are named (a table or an
//! alias): `*` becomes `<keys>, l.* EXCEPT (keys), r.* EXCEPT (keys)`, and an unqualified key
//! in the SELECT's own clauses becomes `r.k` (right join) or `coalesce(l.k, r.k)` (full join),
//! named `k` where it is a select item. Other shapes keep DataFusion's reading: a full join's
//! unqualified keys there are refused (`shapes`), as a NATURAL right join's are.

use std::ops::ControlFlow;

use sqlparser::ast::{
    ExceptSelectItem, Expr, Ident, JoinConstraint, JoinOperator, ObjectNamePart, Query, Select, SelectItem,
    SelectItemQualifiedWildcardKind, SetExpr, TableFactor, VisitMut, VisitorMut, WildcardAdditionalOptions,
};

use crate::modes::SqlModes;

/// The rule: every SELECT of `query` (subqueries included) over one USING join.
pub(crate) fn rewrite_rule(query: &mut Query, _: &SqlModes) -> Result<(), String> {
    struct Joins;
    impl VisitorMut for Joins {
        type Break = ();
        fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            rewrite_body(&mut query.body);
            ControlFlow::Continue(())
        }
    }
    let _ = query.visit(&mut Joins);
    Ok(())
}

fn rewrite_body(body: &mut SetExpr) {
    match body {
        SetExpr::Select(select) => rewrite_select(select),
        SetExpr::SetOperation { left, right, .. } => {
            rewrite_body(left);
            rewrite_body(right);
        }
        _ => {}
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Inner,
    Left,
    Right,
    Full,
    /// A left semi or anti join: the left side's columns only, its keys first.
    Semi,
}

fn rewrite_select(select: &mut Select) {
    let [from] = select.from.as_slice() else { return };
    let [join] = from.joins.as_slice() else { return };
    let (kind, keys) = match &join.join_operator {
        JoinOperator::Join(JoinConstraint::Using(k)) | JoinOperator::Inner(JoinConstraint::Using(k)) => {
            (Kind::Inner, k)
        }
        JoinOperator::Left(JoinConstraint::Using(k)) | JoinOperator::LeftOuter(JoinConstraint::Using(k)) => {
            (Kind::Left, k)
        }
        JoinOperator::Right(JoinConstraint::Using(k)) | JoinOperator::RightOuter(JoinConstraint::Using(k)) => {
            (Kind::Right, k)
        }
        JoinOperator::FullOuter(JoinConstraint::Using(k)) => (Kind::Full, k),
        JoinOperator::LeftSemi(JoinConstraint::Using(k))
        | JoinOperator::LeftAnti(JoinConstraint::Using(k))
        | JoinOperator::Semi(JoinConstraint::Using(k))
        | JoinOperator::Anti(JoinConstraint::Using(k)) => (Kind::Semi, k),
        _ => return,
    };
    let (Some(l), Some(r)) = (name_of(&from.relation), name_of(&join.relation)) else { return };
    let keys: Vec<Ident> =
        keys.iter().filter_map(|k| k.0.last()).filter_map(ObjectNamePart::as_ident).cloned().collect();
    let is_key = |id: &Ident| keys.iter().any(|k| k.value.eq_ignore_ascii_case(&id.value));
    let key_expr = |id: &Ident| -> Expr {
        let side = |q: &Ident| Expr::CompoundIdentifier(vec![q.clone(), id.clone()]);
        match kind {
            Kind::Inner | Kind::Left | Kind::Semi => side(&l),
            Kind::Right => side(&r),
            Kind::Full => crate::syntax::function("coalesce", vec![side(&l), side(&r)]),
        }
    };
    // `*`: the keys first, then either side's other columns.
    let mut projection = Vec::with_capacity(select.projection.len());
    for item in std::mem::take(&mut select.projection) {
        match item {
            SelectItem::Wildcard(options) if wildcard_is_plain(&options) => {
                for k in &keys {
                    projection.push(SelectItem::ExprWithAlias { expr: key_expr(k), alias: k.clone() });
                }
                let sides = if kind == Kind::Semi { vec![&l] } else { vec![&l, &r] };
                for side in sides {
                    let mut options = WildcardAdditionalOptions::default();
                    // (As written: EXCEPT matches a column's name by case.)
                    let written: Vec<Ident> = keys.iter().map(|k| Ident::with_quote('`', k.value.clone())).collect();
                    if let Some((first, rest)) = written.split_first() {
                        options.opt_except =
                            Some(ExceptSelectItem { first_element: first.clone(), additional_elements: rest.to_vec() });
                    }
                    projection.push(SelectItem::QualifiedWildcard(
                        SelectItemQualifiedWildcardKind::ObjectName(sqlparser::ast::ObjectName::from(vec![
                            side.clone()
                        ])),
                        options,
                    ));
                }
            }
            SelectItem::UnnamedExpr(Expr::Identifier(id))
                if matches!(kind, Kind::Right | Kind::Full) && is_key(&id) =>
            {
                projection.push(SelectItem::ExprWithAlias { expr: key_expr(&id), alias: id });
            }
            other => projection.push(other),
        }
    }
    select.projection = projection;
    if matches!(kind, Kind::Inner | Kind::Left | Kind::Semi) {
        return;
    }
    // An unqualified key anywhere else in this SELECT (not in its subqueries' own FROMs).
    struct Keys<'a> {
        is_key: &'a dyn Fn(&Ident) -> bool,
        key_expr: &'a dyn Fn(&Ident) -> Expr,
    }
    impl VisitorMut for Keys<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
            // A subquery's names are its own (a correlated one is left as DataFusion reads it).
            ControlFlow::Break(())
        }
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            if let Expr::Identifier(id) = e {
                if (self.is_key)(id) {
                    *e = (self.key_expr)(id);
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut visitor = Keys { is_key: &is_key, key_expr: &key_expr };
    for item in &mut select.projection {
        if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
            let _ = e.visit(&mut visitor);
        }
    }
    if let Some(selection) = &mut select.selection {
        let _ = selection.visit(&mut visitor);
    }
    if let Some(having) = &mut select.having {
        let _ = having.visit(&mut visitor);
    }
    if let sqlparser::ast::GroupByExpr::Expressions(exprs, _) = &mut select.group_by {
        for e in exprs {
            let _ = e.visit(&mut visitor);
        }
    }
    // `WINDOW w AS (PARTITION BY k …)`: a named window reads the keys as the select list does.
    for window in &mut select.named_window {
        let _ = window.visit(&mut visitor);
    }
}

/// `*` with none of its options (`* EXCEPT (…)` keeps DataFusion's reading).
fn wildcard_is_plain(options: &WildcardAdditionalOptions) -> bool {
    options.opt_ilike.is_none()
        && options.opt_exclude.is_none()
        && options.opt_except.is_none()
        && options.opt_replace.is_none()
        && options.opt_rename.is_none()
}

/// The name a FROM item's columns are qualified with: its alias, or a table's own name.
fn name_of(factor: &TableFactor) -> Option<Ident> {
    match factor {
        TableFactor::Table { alias: Some(a), .. } | TableFactor::Derived { alias: Some(a), .. } => Some(a.name.clone()),
        TableFactor::Table { name, alias: None, .. } => name.0.last().and_then(ObjectNamePart::as_ident).cloned(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::rewrite_rule;
    use crate::analysis::rewritten_by;

    #[test]
    fn a_using_join_reads_its_keys_as_spark_does() {
        let star = rewritten_by(rewrite_rule, "SELECT * FROM a JOIN b USING (id)").unwrap();
        assert_eq!(star, "SELECT a.id AS id, a.* EXCEPT (`id`), b.* EXCEPT (`id`) FROM a JOIN b USING(id)");
        let right =
            rewritten_by(rewrite_rule, "SELECT id, x FROM a AS l RIGHT JOIN b AS r USING (id) WHERE id > 1").unwrap();
        assert_eq!(right, "SELECT r.id AS id, x FROM a AS l RIGHT JOIN b AS r USING(id) WHERE r.id > 1");
        let full = rewritten_by(rewrite_rule, "SELECT id FROM a FULL JOIN b USING (id)").unwrap();
        assert_eq!(full, "SELECT coalesce(a.id, b.id) AS id FROM a FULL JOIN b USING(id)");
        let window = rewritten_by(
            rewrite_rule,
            "SELECT min(x) OVER w FROM a FULL JOIN b USING (id) WINDOW w AS (PARTITION BY id)",
        )
        .unwrap();
        assert!(window.ends_with("WINDOW w AS (PARTITION BY coalesce(a.id, b.id))"), "{window}");
        let semi = rewritten_by(rewrite_rule, "SELECT * FROM a LEFT SEMI JOIN b USING (k, id)").unwrap();
        assert_eq!(semi, "SELECT a.k AS k, a.id AS id, a.* EXCEPT (`k`, `id`) FROM a LEFT SEMI JOIN b USING(k, id)");
        // Two joins: DataFusion's reading, unchanged.
        let two = "SELECT * FROM a JOIN b USING (id) JOIN c USING (id)";
        assert_eq!(rewritten_by(rewrite_rule, two).unwrap(), two.replace("USING (id)", "USING(id)"));
    }
}
