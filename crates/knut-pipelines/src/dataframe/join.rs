//! Joins: a join of two DataFrames as a FROM item, and its shape kept, so that a column of one
//! side can be dropped (`joined.drop(right["k"])`) while the other side's column of that name
//! stays, as Spark resolves a DataFrame's column by the plan it came from.

use super::{expr, pb, quote_identifier, refuse, Frag, Result, Translator};

/// A join of two derived tables, each under one alias.
#[derive(Clone)]
pub(super) struct JoinShape {
    pub(super) kind: pb::join::JoinType,
    /// Each side's alias, the query that selects its columns, and its plan ids.
    pub(super) sides: [(String, String, Vec<i64>); 2],
    pub(super) using: Vec<String>,
}

impl JoinShape {
    pub(super) fn holds(&self, id: i64) -> bool {
        self.sides.iter().any(|(_, _, ids)| ids.contains(&id))
    }
}

impl Translator<'_> {
    pub(super) fn join(&mut self, j: &pb::Join, own: Vec<i64>) -> Result<Frag> {
        use pb::join::JoinType;
        let mut left = self.input(&j.left)?;
        let mut right = self.input(&j.right)?;
        // A USING join's sides are each one table: a side that is itself a join becomes a query
        // of its columns (`SELECT * FROM a CROSS JOIN b`, which lists a USING join's keys first),
        // so that the keys of this join are read as Spark reads them, first and once
        // (`a CROSS JOIN b JOIN c USING (k)` would read them as DataFusion does).
        if !j.using_columns.is_empty() {
            for side in [&mut left, &mut right] {
                let several = side.from_item && side.scope.windows(2).any(|w| w[0].1 != w[1].1);
                if several {
                    let taken = std::mem::replace(side, Frag::query(String::new(), Vec::new()));
                    let ids = taken.ids.clone();
                    *side = Frag::query(self.as_query(taken), ids);
                }
            }
        }
        let mut ids = left.ids.clone();
        ids.extend(right.ids.iter().copied());
        ids.extend(own.iter().copied());
        let (left_ids, right_ids) = (left.ids.clone(), right.ids.clone());
        let (l, mut scope) = self.derived(left);
        let (r, right_scope) = self.derived(right);
        // Each side under one alias (a derived table): its columns can be told from the other's.
        let one_alias = |scope: &[(i64, String)]| match scope.first() {
            Some((_, a)) if scope.iter().all(|(_, b)| b == a) => Some(a.clone()),
            _ => None,
        };
        let sides = match (one_alias(&scope), one_alias(&right_scope)) {
            (Some(la), Some(ra)) => Some([
                (la.clone(), format!("SELECT {la}.* FROM {l}"), left_ids),
                (ra.clone(), format!("SELECT {ra}.* FROM {r}"), right_ids),
            ]),
            _ => None,
        };
        scope.extend(right_scope);
        let kind = match JoinType::try_from(j.join_type) {
            Ok(JoinType::Inner) | Ok(JoinType::Unspecified) => "JOIN",
            Ok(JoinType::FullOuter) => "FULL OUTER JOIN",
            Ok(JoinType::LeftOuter) => "LEFT OUTER JOIN",
            Ok(JoinType::RightOuter) => "RIGHT OUTER JOIN",
            Ok(JoinType::LeftAnti) => "LEFT ANTI JOIN",
            Ok(JoinType::LeftSemi) => "LEFT SEMI JOIN",
            Ok(JoinType::Cross) => "CROSS JOIN",
            Err(_) => return refuse("a join of unknown type"),
        };
        let on = if !j.using_columns.is_empty() {
            let cols: Vec<String> = j.using_columns.iter().map(|c| quote_identifier(c)).collect();
            format!(" USING ({})", cols.join(", "))
        } else if let Some(cond) = &j.join_condition {
            format!(" ON {}", expr(cond, &scope)?)
        } else if kind == "CROSS JOIN" {
            String::new()
        } else {
            " ON TRUE".into()
        };
        let join_type = JoinType::try_from(j.join_type).unwrap_or(JoinType::Inner);
        // A semi or anti join's columns are its left side's: a column the join itself names
        // (`semi["k"]`) is the left side's.
        if let (JoinType::LeftSemi | JoinType::LeftAnti, Some(sides)) = (join_type, &sides) {
            let left_alias = sides[0].0.clone();
            for &id in &own {
                scope.push((id, left_alias.clone()));
            }
        }
        let join = sides.map(|sides| JoinShape { kind: join_type, sides, using: j.using_columns.clone() });
        Ok(Frag {
            sql: format!("{l} {kind} {r}{on}"),
            from_item: true,
            filters: Vec::new(),
            ids,
            scope,
            join,
            qualifier: None,
        })
    }

    /// The select list of a join's columns, as Spark lists them (a USING join's keys first, then
    /// the left's columns and the right's), without the dropped ones: a name drops every column
    /// of that name, a DataFrame's column only the column of that side. A USING key is the left's
    /// column in an inner or left join, the right's in a right join and neither side's in a full
    /// one. `None` when translating without columns.
    pub(super) fn join_columns_without(
        &mut self,
        join: &JoinShape,
        dropped: &[(String, Option<i64>)],
    ) -> Result<Option<Vec<String>>> {
        use pb::join::JoinType;
        let mut sides = Vec::new();
        for (alias, query, ids) in &join.sides {
            let Some(columns) = self.columns_of(query)? else { return Ok(None) };
            sides.push((alias.clone(), columns, ids.clone()));
        }
        let drops = |name: &str, ids: &[i64]| {
            dropped.iter().any(|(n, id)| n.eq_ignore_ascii_case(name) && id.is_none_or(|id| ids.contains(&id)))
        };
        let semi = matches!(join.kind, JoinType::LeftSemi | JoinType::LeftAnti);
        let is_key = |c: &str| join.using.iter().any(|k| k.eq_ignore_ascii_case(c));
        let mut items = Vec::new();
        for key in &join.using {
            let [(l, _, l_ids), (r, _, r_ids)] = [&sides[0], &sides[1]];
            let k = quote_identifier(key);
            let (item, owner): (String, Option<&[i64]>) = match join.kind {
                JoinType::RightOuter => (format!("{r}.{k}"), Some(r_ids)),
                JoinType::FullOuter => (format!("coalesce({l}.{k}, {r}.{k}) AS {k}"), None),
                _ => (format!("{l}.{k}"), Some(l_ids)),
            };
            let gone = dropped.iter().any(|(n, id)| {
                n.eq_ignore_ascii_case(key)
                    && match (id, owner) {
                        (None, _) => true,
                        (Some(id), Some(ids)) => ids.contains(id),
                        (Some(_), None) => false,
                    }
            });
            if !gone {
                items.push(item);
            }
        }
        for (i, (alias, columns, ids)) in sides.iter().enumerate() {
            if i == 1 && semi {
                break;
            }
            for c in columns {
                if !is_key(c) && !drops(c, ids) {
                    items.push(format!("{alias}.{}", quote_identifier(c)));
                }
            }
        }
        Ok(Some(items))
    }
}
