//! The clauses of pipeline statements: a table's columns and constraints, its storage clauses,
//! and AUTO CDC's.

use std::collections::BTreeMap;

use sqlparser::tokenizer::Token;

use super::super::query::{matching_paren, NameContext};
use super::cursor::{Cursor, PResult};
use super::{expression, query_from, FileDefinitions};
use crate::ir::{
    AutoCdc, ColumnDef, ColumnSelection, Dataset, DatasetKind, Expectation, Flow, FlowKind, QualifiedName,
    RefreshPolicy, ScdType, SourceLocation, ViolationAction,
};

/// `(col TYPE [NOT NULL] [COMMENT '…'], CONSTRAINT n EXPECT (p) [ON VIOLATION …], …)`.
pub(super) fn columns_and_constraints(c: &mut Cursor<'_>, ds: &mut Dataset) -> PResult<()> {
    c.expect(&Token::LParen)?;
    let close = matching_paren(c.toks, c.pos - 1).ok_or_else(|| c.error("unbalanced parentheses"))?;
    while c.pos < close {
        if c.peek_word("CONSTRAINT") {
            let at = c.loc();
            c.pos += 1;
            let name = c.ident()?;
            c.expect_word("EXPECT")?;
            let open = c.pos;
            c.expect(&Token::LParen)?;
            let end = matching_paren(c.toks, open).ok_or_else(|| c.error("unbalanced parentheses"))?;
            let pred_at = c.loc();
            let predicate = expression(c.slice(open + 1, end), &pred_at)?;
            c.pos = end + 1;
            let action = if c.eat_words(&["ON", "VIOLATION"]) {
                if c.eat_words(&["DROP", "ROW"]) {
                    ViolationAction::Drop
                } else if c.eat_words(&["FAIL", "UPDATE"]) {
                    ViolationAction::Fail
                } else {
                    return Err(c.error(format!("expected `DROP ROW` or `FAIL UPDATE`, found {}", c.found())));
                }
            } else {
                ViolationAction::Warn
            };
            ds.expectations.push(Expectation { name, predicate, action, location: at });
        } else {
            let name = c.ident()?;
            let type_start = c.pos;
            let mut depth = 0i32;
            while c.pos < close {
                let t = &c.toks[c.pos];
                match t.token {
                    Token::LParen | Token::Lt => depth += 1,
                    Token::RParen | Token::Gt => depth -= 1,
                    // `ARRAY<ARRAY<INT>>` ends in one `>>` token: it closes two levels.
                    Token::ShiftRight => depth -= 2,
                    Token::Comma if depth == 0 => break,
                    _ if depth == 0 && (t.is_word("NOT") || t.is_word("COMMENT")) => break,
                    _ => {}
                }
                c.pos += 1;
            }
            // As written: a STRUCT's field names keep their case.
            let data_type = c.slice(type_start, c.pos).to_string();
            let nullable = !c.eat_words(&["NOT", "NULL"]);
            let comment = if c.eat_word("COMMENT") { Some(c.string()?) } else { None };
            ds.details.columns.push(ColumnDef { name, data_type, nullable, comment });
        }
        if c.pos < close {
            c.expect(&Token::Comma)?;
        }
    }
    c.pos = close + 1;
    Ok(())
}

/// Clauses after the name and column list: `COMMENT`, `USING`, `PARTITIONED BY`, `CLUSTER BY`,
/// `TBLPROPERTIES`, `REFRESH POLICY`, in any order.
pub(super) fn table_clauses(c: &mut Cursor<'_>, ds: &mut Dataset) -> PResult<()> {
    loop {
        if c.eat_word("COMMENT") {
            ds.comment = Some(c.string()?);
        } else if c.eat_word("USING") {
            ds.details.format = Some(c.ident()?);
        } else if c.eat_words(&["PARTITIONED", "BY"]) {
            ds.details.partitioned_by = c.ident_list(false)?;
        } else if c.eat_words(&["CLUSTER", "BY"]) {
            ds.details.cluster_by = c.ident_list(true)?;
        } else if c.eat_word("TBLPROPERTIES") {
            ds.details.properties.extend(c.properties()?);
        } else if c.eat_words(&["REFRESH", "POLICY"]) {
            let policy = if c.eat_word("AUTO") {
                RefreshPolicy::Auto
            } else if c.eat_word("FULL") {
                RefreshPolicy::Full
            } else if c.eat_word("INCREMENTAL") {
                match c.eat_word("STRICT") {
                    true => RefreshPolicy::IncrementalStrict,
                    false => RefreshPolicy::Incremental,
                }
            } else {
                return Err(c.error(format!(
                    "expected AUTO, INCREMENTAL, INCREMENTAL STRICT or FULL after `REFRESH POLICY`, found {}",
                    c.found()
                )));
            };
            if ds.kind != DatasetKind::MaterializedView {
                return Err(c.error("`REFRESH POLICY` is a clause of materialized views only"));
            }
            ds.details.refresh_policy = Some(policy);
        } else {
            return Ok(());
        }
    }
}

/// `target FROM … KEYS …` after `AUTO CDC INTO` or `APPLY CHANGES INTO`: an explicit flow named
/// `name`, or after its target.
pub(super) fn auto_cdc_flow(
    c: &mut Cursor<'_>,
    names: &NameContext,
    name: Option<QualifiedName>,
    start: SourceLocation,
    conf: &BTreeMap<String, String>,
    out: &mut FileDefinitions,
) -> PResult<()> {
    let target = c.qualified(names)?;
    let cdc = auto_cdc(c, names)?;
    out.flows.push(Flow {
        name: name.unwrap_or_else(|| target.clone()),
        target,
        kind: FlowKind::AutoCdc(cdc),
        implicit: false,
        sql_conf: conf.clone(),
        location: start,
    });
    Ok(())
}

const CDC_CLAUSES: [&str; 7] = ["KEYS", "IGNORE", "APPLY", "SEQUENCE", "COLUMNS", "STORED", "TRACK"];

/// `FROM src KEYS (…) [IGNORE NULL UPDATES] [APPLY AS DELETE WHEN …] [APPLY AS TRUNCATE WHEN …] SEQUENCE BY …
/// [COLUMNS …] [STORED AS SCD TYPE 1|2] [TRACK HISTORY ON …]`.
pub(super) fn auto_cdc(c: &mut Cursor<'_>, names: &NameContext) -> PResult<AutoCdc> {
    c.expect_word("FROM")?;
    let src_at = c.loc();
    let end = c.find_top_level(&CDC_CLAUSES);
    if end == c.pos {
        return Err(c.error("expected the change feed after `FROM`"));
    }
    let relation = c.slice(c.pos, end).to_string();
    c.pos = end;
    // The feed is a relation; as a query it is `SELECT * FROM <relation>`, which both engines read.
    let mut source = query_from(format!("SELECT * FROM {relation}"), src_at.clone(), names)?;
    source.location = src_at;
    let mut cdc = AutoCdc {
        source,
        keys: Vec::new(),
        sequence_by: None,
        apply_as_delete: None,
        apply_as_truncate: None,
        columns: ColumnSelection::All,
        scd_type: ScdType::Type1,
        track_history: None,
        ignore_null_updates: false,
    };
    while !c.at_end() {
        if c.eat_word("KEYS") {
            cdc.keys = c.ident_list(false)?;
        } else if c.eat_words(&["IGNORE", "NULL", "UPDATES"]) {
            cdc.ignore_null_updates = true;
        } else if c.eat_words(&["APPLY", "AS", "DELETE", "WHEN"]) {
            cdc.apply_as_delete = Some(c.expression_until(&CDC_CLAUSES, "a condition")?);
        } else if c.eat_words(&["APPLY", "AS", "TRUNCATE", "WHEN"]) {
            cdc.apply_as_truncate = Some(c.expression_until(&CDC_CLAUSES, "a condition")?);
        } else if c.eat_words(&["SEQUENCE", "BY"]) {
            cdc.sequence_by = Some(c.expression_until(&CDC_CLAUSES, "an ordering expression")?);
        } else if c.eat_word("COLUMNS") {
            cdc.columns = column_selection(c)?;
        } else if c.eat_words(&["STORED", "AS", "SCD", "TYPE"]) {
            cdc.scd_type = match c.peek().map(|t| &t.token) {
                Some(Token::Number(n, _)) if n == "1" => ScdType::Type1,
                Some(Token::Number(n, _)) if n == "2" => ScdType::Type2,
                _ => return Err(c.error(format!("expected SCD TYPE 1 or 2, found {}", c.found()))),
            };
            c.pos += 1;
        } else if c.eat_words(&["TRACK", "HISTORY", "ON"]) {
            cdc.track_history = Some(column_selection(c)?);
        } else {
            return Err(c.error(format!("unexpected {} in AUTO CDC", c.found())));
        }
    }
    if cdc.keys.is_empty() {
        return Err(c.error("AUTO CDC needs `KEYS (…)`"));
    }
    Ok(cdc)
}

pub(super) fn column_selection(c: &mut Cursor<'_>) -> PResult<ColumnSelection> {
    if c.eat(&Token::Mul) {
        if c.eat_word("EXCEPT") {
            return Ok(ColumnSelection::Except(c.ident_list(false)?));
        }
        return Ok(ColumnSelection::All);
    }
    Ok(ColumnSelection::Include(c.ident_list(true)?))
}
