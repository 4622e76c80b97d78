//! The tables are true: each name has one home, each UDF a table names is registered, and each
//! function the categories register is in a table.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use datafusion::execution::FunctionRegistry;
use datafusion::prelude::SessionContext;

use super::*;
use crate::declare::Runs;

/// A session with DataFusion's and `datafusion-spark`'s functions and no others.
fn builtin_session() -> SessionContext {
    let config = crate::session::spark_config(datafusion::prelude::SessionConfig::new(), Default::default());
    let state = crate::session::spark_state_builder(config, Arc::new(Default::default())).build();
    SessionContext::new_with_state(state)
}

/// Every function of the session, by name, with the type that runs it (the name its `Debug`
/// starts with: a session builds some of DataFusion's functions anew, so addresses differ).
fn functions_of(ctx: &SessionContext) -> BTreeMap<String, String> {
    let kind =
        |debug: String| debug.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("").to_string();
    let state = ctx.state();
    let mut out = BTreeMap::new();
    for n in state.udfs() {
        out.insert(n.clone(), state.udf(&n).map_or(String::new(), |f| kind(format!("{:?}", f.inner()))));
    }
    for n in state.udafs() {
        out.insert(n.clone(), state.udaf(&n).map_or(String::new(), |f| kind(format!("{:?}", f.inner()))));
    }
    for n in state.udwfs() {
        out.insert(n.clone(), state.udwf(&n).map_or(String::new(), |f| kind(format!("{:?}", f.inner()))));
    }
    for (n, f) in state.table_functions() {
        out.insert(n.clone(), kind(format!("{:?}", f.function())));
    }
    for (n, f) in state.higher_order_functions() {
        out.insert(n.clone(), kind(format!("{f:?}")));
    }
    out
}

#[test]
fn every_function_has_one_home() {
    let mut seen = BTreeSet::new();
    let twice: Vec<&str> = all().map(|f| f.name).filter(|n| !seen.insert(*n)).collect();
    assert!(twice.is_empty(), "declared in two tables: {twice:?}");
    let cased: Vec<&str> = all().map(|f| f.name).filter(|n| n.to_ascii_lowercase() != *n).collect();
    assert!(cased.is_empty(), "names are lower case: {cased:?}");
}

#[test]
fn every_udf_a_table_names_is_registered() {
    let ctx = crate::session::test_context(Default::default());
    let registered = functions_of(&ctx);
    let missing: Vec<&str> =
        all().filter(|f| f.runs == Runs::Udf && !registered.contains_key(f.name)).map(|f| f.name).collect();
    assert!(missing.is_empty(), "declared UDFs no category registers: {missing:?}");
}

#[test]
fn every_function_a_category_registers_is_declared() {
    let builtins = functions_of(&builtin_session());
    let ours = functions_of(&crate::session::test_context(Default::default()));
    let declared: BTreeSet<&str> = all().filter(|f| f.runs == Runs::Udf).map(|f| f.name).collect();
    let undeclared: Vec<&String> = ours
        .iter()
        .filter(|(name, at)| builtins.get(*name) != Some(at))
        .map(|(name, _)| name)
        .filter(|name| !declared.contains(name.as_str()) && !interval::WRAPPED.contains(&name.as_str()))
        .collect();
    assert!(undeclared.is_empty(), "registered, but in no category's table: {undeclared:?}");
}

#[test]
fn a_refused_function_is_refused_when_planned() {
    let version = lookup("version").map(|f| f.runs);
    assert!(matches!(version, Some(Runs::Refused(_))), "{version:?}");
}
