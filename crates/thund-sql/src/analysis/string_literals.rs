//! Spark's string literals: the parser's unescaping (`'(\\d+)'` is the regular expression
//! `(\d+)`), and `spark.sql.parser.escapedStringLiterals`, under which a literal is its text as
//! written.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Value, VisitMut};

use crate::modes::SqlModes;

/// The analysis rule: under `spark.sql.parser.escapedStringLiterals`, a string literal is its
/// text as written. The literals of `query` are escaped here so that the unescaping every
/// literal goes through (its value, and its name as a column) gives that text back.
pub(crate) fn keep_backslashes(query: &mut sqlparser::ast::Query, modes: &SqlModes) -> Result<(), String> {
    keep_backslashes_in(query, modes);
    Ok(())
}

/// [`keep_backslashes`] in any part of a syntax tree (an expression planned alone).
pub(crate) fn keep_backslashes_in<T: VisitMut>(ast: &mut T, modes: &SqlModes) {
    if !modes.escaped_string_literals {
        return;
    }
    let _ = sqlparser::ast::visit_expressions_mut(ast, |e| {
        if let Expr::Value(v) = e {
            if let Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) = &mut v.value {
                *s = s.replace('\\', "\\\\");
            }
        }
        ControlFlow::<()>::Continue(())
    });
}

/// A string literal's text as Spark's parser reads it (`unescapeSQLString`): `\\` is one
/// backslash, `\n` a newline, `\u0041` an `A`, …; `\%` and `\_` keep their backslash (LIKE
/// escapes), and any other escaped character stands for itself. So `'(\\d+)'` is the regular
/// expression `(\d+)`, as on Spark.
pub(crate) fn spark_unescape(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c != '\\' || i + 1 == chars.len() {
            out.push(c);
            i += 1;
            continue;
        }
        let next = chars[i + 1];
        let hex = |from: usize| -> Option<char> {
            let digits: String = chars.get(from..from + 4)?.iter().collect();
            char::from_u32(u32::from_str_radix(&digits, 16).ok()?)
        };
        let octal = |from: usize| -> Option<char> {
            let digits: String = chars.get(from..from + 3)?.iter().collect();
            (digits.chars().all(|d| ('0'..='7').contains(&d)) && digits.starts_with(['0', '1']))
                .then(|| u32::from_str_radix(&digits, 8).ok().and_then(char::from_u32))
                .flatten()
        };
        match next {
            'u' if hex(i + 2).is_some() => {
                out.extend(hex(i + 2));
                i += 6;
                continue;
            }
            '0'..='7' if octal(i + 1).is_some() => {
                out.extend(octal(i + 1));
                i += 4;
                continue;
            }
            '0' => out.push('\u{0}'),
            'b' => out.push('\u{8}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'Z' => out.push('\u{1A}'),
            '%' | '_' => {
                out.push('\\');
                out.push(next);
            }
            other => out.push(other),
        }
        i += 2;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::spark_unescape;

    #[test]
    fn string_literals_unescape_as_sparks_parser_does() {
        assert_eq!(spark_unescape(r"(\\d+)"), r"(\d+)");
        assert_eq!(spark_unescape(r"a\nb\tc"), "a\nb\tc");
        assert_eq!(spark_unescape(r"\u0041\101\q"), "AAq");
        assert_eq!(spark_unescape(r"100\%\_"), r"100\%\_");
        assert_eq!(spark_unescape(r"end\"), r"end\");
        assert_eq!(spark_unescape("plain"), "plain");
    }
}
