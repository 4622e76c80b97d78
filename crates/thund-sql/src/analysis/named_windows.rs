//! A named window in parentheses, as Spark reads it: `OVER (w)` is `OVER w` (DataFusion's
//! planner drops the name and runs the function over the whole input). Spark's parser takes
//! nothing beside the name inside the parentheses: `OVER (w ORDER BY v)` is refused, as there.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Query, VisitMut, VisitorMut, WindowType};

use crate::modes::SqlModes;

/// Every `OVER (w)` of `query` as `OVER w`.
pub(crate) fn rewrite_rule(query: &mut Query, _: &SqlModes) -> Result<(), String> {
    struct Named(Option<String>);
    impl VisitorMut for Named {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            let Expr::Function(f) = e else { return ControlFlow::Continue(()) };
            let Some(WindowType::WindowSpec(spec)) = &f.over else { return ControlFlow::Continue(()) };
            let Some(name) = spec.window_name.clone() else { return ControlFlow::Continue(()) };
            if !spec.partition_by.is_empty() || !spec.order_by.is_empty() || spec.window_frame.is_some() {
                self.0 = Some(format!(
                    "`OVER ({spec})`: Spark takes a named window alone (`OVER {name}`) or a whole specification, \
                     not both"
                ));
                return ControlFlow::Break(());
            }
            f.over = Some(WindowType::NamedWindow(name));
            ControlFlow::Continue(())
        }
    }
    let mut named = Named(None);
    let _ = query.visit(&mut named);
    named.0.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> Result<String, String> {
        crate::analysis::rewritten_by(rewrite_rule, sql)
    }

    #[test]
    fn a_named_window_in_parentheses_is_the_window() {
        assert_eq!(
            rewritten("SELECT sum(v) OVER (w) FROM t WINDOW w AS (PARTITION BY k)").unwrap(),
            "SELECT sum(v) OVER w FROM t WINDOW w AS (PARTITION BY k)"
        );
        let refused = rewritten("SELECT sum(v) OVER (w ORDER BY v) FROM t WINDOW w AS (PARTITION BY k)").unwrap_err();
        assert!(refused.contains("named window alone"), "{refused}");
    }
}
