//! Source text plumbing: `${key}` substitution, tokens with byte offsets, and positions.

use std::collections::BTreeMap;

use sqlparser::ast::{BinaryOperator, Expr};
use sqlparser::dialect::{Dialect, SparkSqlDialect};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Word};

use crate::error::Diagnostic;
use crate::ir::query::LineIndex;
use crate::ir::SourceLocation;

/// The dialect every pipeline file is read in.
pub(crate) const DIALECT: SparkSql = SparkSql;

/// Spark SQL as sqlparser's `SparkSqlDialect` reads it, with Spark's operators that dialect
/// lacks or binds otherwise:
///
/// - `<<`, `>>` and `>>>` shift, binding looser than `+`/`-` and tighter than `&` (Spark's
///   grammar); `>>>` (the tokenizer's `>>` and `>`, adjacent) is `BinaryOperator::Custom(">>>")`;
/// - `a DIV b` binds as `*` does (sqlparser's reads the whole rest of the expression as `b`, so
///   `7 div 2 * 3` was `7 div 6`).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SparkSql;

/// The precedence of Spark's shift operators, between `+`/`-` (30) and `&` (23).
const SHIFT: u8 = 25;
/// The precedence of `*`, `/`, `%` and `DIV`.
const MULTIPLY: u8 = 40;

impl SparkSql {
    /// Whether the next tokens are `>>>`: `>>` and `>` with nothing between them.
    fn unsigned_shift_next(parser: &Parser) -> bool {
        let (a, b) = (parser.peek_nth_token_ref(0), parser.peek_nth_token_ref(1));
        a.token == Token::ShiftRight && b.token == Token::Gt && a.span.end == b.span.start
    }
}

impl Dialect for SparkSql {
    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        SparkSqlDialect.is_delimited_identifier_start(ch)
    }
    fn is_identifier_start(&self, ch: char) -> bool {
        SparkSqlDialect.is_identifier_start(ch)
    }
    fn is_identifier_part(&self, ch: char) -> bool {
        SparkSqlDialect.is_identifier_part(ch)
    }
    fn supports_filter_during_aggregation(&self) -> bool {
        SparkSqlDialect.supports_filter_during_aggregation()
    }
    fn supports_group_by_expr(&self) -> bool {
        SparkSqlDialect.supports_group_by_expr()
    }
    fn supports_group_by_with_modifier(&self) -> bool {
        SparkSqlDialect.supports_group_by_with_modifier()
    }
    fn supports_lambda_functions(&self) -> bool {
        SparkSqlDialect.supports_lambda_functions()
    }
    fn supports_select_wildcard_except(&self) -> bool {
        SparkSqlDialect.supports_select_wildcard_except()
    }
    fn supports_struct_literal(&self) -> bool {
        SparkSqlDialect.supports_struct_literal()
    }
    fn supports_nested_comments(&self) -> bool {
        SparkSqlDialect.supports_nested_comments()
    }
    fn supports_create_table_using(&self) -> bool {
        SparkSqlDialect.supports_create_table_using()
    }
    fn supports_long_type_as_bigint(&self) -> bool {
        SparkSqlDialect.supports_long_type_as_bigint()
    }
    fn supports_values_as_table_factor(&self) -> bool {
        SparkSqlDialect.supports_values_as_table_factor()
    }
    /// `INTERVAL '1 day 2 hours'` is Spark's too (the units in the text); `INTERVAL 5 days 3
    /// hours` is read as that (`spark_forms`).
    fn require_interval_qualifier(&self) -> bool {
        false
    }
    fn supports_bang_not_operator(&self) -> bool {
        SparkSqlDialect.supports_bang_not_operator()
    }
    fn supports_select_item_multi_column_alias(&self) -> bool {
        SparkSqlDialect.supports_select_item_multi_column_alias()
    }
    fn supports_cte_without_as(&self) -> bool {
        SparkSqlDialect.supports_cte_without_as()
    }
    fn supports_map_literal_with_angle_brackets(&self) -> bool {
        SparkSqlDialect.supports_map_literal_with_angle_brackets()
    }
    fn supports_bitwise_shift_operators(&self) -> bool {
        true
    }
    /// `'Don\'t'` is one string in Spark. The tokenizer keeps a string's backslashes as
    /// written (`raw_tokens`): the engine reads them by Spark's rules.
    fn supports_string_literal_backslash_escape(&self) -> bool {
        true
    }

    fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>> {
        match &parser.peek_token_ref().token {
            Token::ShiftLeft | Token::ShiftRight => Some(Ok(SHIFT)),
            _ => None,
        }
    }

    fn parse_infix(&self, parser: &mut Parser, expr: &Expr, _precedence: u8) -> Option<Result<Expr, ParserError>> {
        let op = if parser.parse_keyword(Keyword::DIV) {
            (BinaryOperator::MyIntegerDivide, MULTIPLY)
        } else if Self::unsigned_shift_next(parser) {
            parser.advance_token();
            parser.advance_token();
            (BinaryOperator::Custom(">>>".into()), SHIFT)
        } else {
            return None;
        };
        Some(parser.parse_subexpr(op.1).map(|right| Expr::BinaryOp {
            left: Box::new(expr.clone()),
            op: op.0,
            right: Box::new(right),
        }))
    }
}

/// Replaces `${key}` with `configuration[key]` outside comments. Every undefined key is
/// reported with its line. Values are spliced as they are, so lines keep their numbers as long
/// as values hold no newline.
pub(crate) fn substitute(text: &str, conf: &BTreeMap<String, String>, file: &str) -> Result<String, Vec<Diagnostic>> {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut errors = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let mut quote: Option<u8> = None;
    let mut last = 0usize;
    while i < bytes.len() {
        let b = bytes[i];
        if quote.is_none() && b == b'-' && bytes.get(i + 1) == Some(&b'-') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if quote.is_none() && b == b'/' && bytes.get(i + 1) == Some(&b'*') {
            i += 2;
            while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                if bytes[i] == b'\n' {
                    line += 1;
                    col = 1;
                }
                i += 1;
            }
            i = (i + 2).min(bytes.len());
            continue;
        }
        match (quote, b) {
            (None, b'\'' | b'"' | b'`') => quote = Some(b),
            (Some(q), _) if q == b => quote = None,
            _ => {}
        }
        if b == b'$' && bytes.get(i + 1) == Some(&b'{') {
            if let Some(end) = text[i + 2..].find('}') {
                let key = &text[i + 2..i + 2 + end];
                out.push_str(&text[last..i]);
                match conf.get(key.trim()) {
                    Some(v) => out.push_str(v),
                    None => {
                        let mut d = Diagnostic::at(
                            &SourceLocation::new(file, line, col),
                            format!("`${{{key}}}` is not defined in the spec's `configuration`"),
                        );
                        if let Some(best) = crate::validate::did_you_mean(key, conf.keys()) {
                            d = d.with_hint(format!("did you mean `${{{best}}}`?"));
                        }
                        errors.push(d);
                    }
                }
                i += 3 + end;
                col += 3 + end as u32;
                last = i;
                continue;
            }
        }
        if b == b'\n' {
            line += 1;
            col = 1;
        } else if (b & 0xC0) != 0x80 {
            col += 1;
        }
        i += 1;
    }
    out.push_str(&text[last..]);
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// A token with its byte range in the text it came from.
#[derive(Debug, Clone)]
pub(crate) struct Tok {
    /// The token.
    pub token: Token,
    /// Byte offset of its first character.
    pub start: usize,
    /// Byte offset just past it.
    pub end: usize,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

impl Tok {
    /// Whether it is the unquoted word `w` (any case).
    pub(crate) fn is_word(&self, w: &str) -> bool {
        matches!(&self.token, Token::Word(word) if word.quote_style.is_none() && word.value.eq_ignore_ascii_case(w))
    }
}

/// Tokenizes `text`, dropping whitespace and comments. `base` shifts positions for texts that
/// start inside a file (line 1 of `text` is `base.line`, starting at `base.column`).
pub(crate) fn tokenize(text: &str, base: Option<&SourceLocation>, file: &str) -> Result<Vec<Tok>, Diagnostic> {
    let raw: Vec<TokenWithSpan> = raw_tokens(text).map_err(|e| {
        let loc = shift(base, file, e.location.line, e.location.column);
        Diagnostic::at(&loc, e.message)
    })?;
    let index = LineIndex::new(text);
    Ok(raw
        .into_iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
        .map(|t| {
            let loc = shift(base, file, t.span.start.line, t.span.start.column);
            Tok {
                start: index.offset(t.span.start.line, t.span.start.column),
                end: index.offset(t.span.end.line, t.span.end.column),
                line: loc.line,
                column: loc.column,
                token: t.token,
            }
        })
        .collect())
}

/// The tokens of `text`, each string's text with its backslash escapes as written (`\'` and
/// `\\` included, for the engine to read as Spark does) and a doubled quote read as one, in a
/// string as in a quoted name.
pub(crate) fn raw_tokens(text: &str) -> Result<Vec<TokenWithSpan>, sqlparser::tokenizer::TokenizerError> {
    let mut tokens = Tokenizer::new(&DIALECT, text).with_unescape(false).tokenize_with_location()?;
    for t in &mut tokens {
        match &mut t.token {
            Token::SingleQuotedString(s) => *s = undoubled(s, '\''),
            Token::DoubleQuotedString(s) => *s = undoubled(s, '"'),
            // A quoted name's doubled quote is one (a backslash there is itself).
            Token::Word(w) => {
                if let Some(q) = w.quote_style {
                    let doubled: String = [q, q].iter().collect();
                    w.value = w.value.replace(&doubled, &q.to_string());
                }
            }
            _ => {}
        }
    }
    Ok(tokens)
}

/// `s` with each doubled `quote` (outside a backslash escape) read as one.
fn undoubled(s: &str, quote: char) -> String {
    if !s.contains(quote) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '\\' {
            out.extend(chars.next());
        } else if c == quote && chars.peek() == Some(&quote) {
            chars.next();
        }
    }
    out
}

/// Translates a position inside a text that starts at `base` into a file position.
pub(crate) fn shift(base: Option<&SourceLocation>, file: &str, line: u64, column: u64) -> SourceLocation {
    let (line, column) = (line.max(1) as u32, column.max(1) as u32);
    match base {
        None => SourceLocation::new(file, line, column),
        Some(b) if line == 1 => SourceLocation::new(file, b.line, b.column + column - 1),
        Some(b) => SourceLocation::new(file, b.line + line - 1, column),
    }
}

/// Where the token an error complains about starts. sqlparser's reported position is not always
/// that token's (after a consumed token it is the next one), so look for the last token at or
/// before the position whose text is the `found: X` of the message.
pub(crate) fn found_token_start(text: &str, message: &str, line: u64, column: u64) -> (u64, u64) {
    let Some(found) = message.rsplit("found: ").next().filter(|_| message.contains("found: ")) else {
        return (line, column);
    };
    let Ok(toks) = raw_tokens(text) else {
        return (line, column);
    };
    toks.iter()
        .rev()
        .filter(|t| (t.span.start.line, t.span.start.column) <= (line, column))
        .find(|t| t.token.to_string().eq_ignore_ascii_case(found.trim()))
        .map_or((line, column), |t| (t.span.start.line, t.span.start.column))
}

/// Splits sqlparser's "… at Line: L, Column: C" into the message and the position.
pub(crate) fn split_parser_error(message: &str) -> (String, Option<(u64, u64)>) {
    let Some(at) = message.rfind(" at Line: ") else {
        return (message.to_string(), None);
    };
    let pos = &message[at + " at Line: ".len()..];
    let mut parts = pos.split(", Column: ");
    let line = parts.next().and_then(|l| l.trim().parse().ok());
    let column = parts.next().and_then(|c| c.trim().parse().ok());
    let text = message[..at].trim_start_matches("sql parser error: ").to_string();
    match (line, column) {
        (Some(l), Some(c)) => (text, Some((l, c))),
        _ => (text, None),
    }
}

/// A parser over `sql` that reads Spark's typed number literals as Spark does. The tokenizer
/// reads `1.5D` as the number `1.5` and the word `D`, which the parser then takes for an alias
/// (`SELECT 1.5D` would be a column `D` holding a DECIMAL): `…D` becomes a DOUBLE (`1.5E0`), `…BD`
/// a DECIMAL (`10.`), and `…F`, `…S`, `…Y` casts to FLOAT, SMALLINT and TINYINT. (`…L` the
/// dialect reads itself.) Raw strings and `TRIM(BOTH FROM …)` are read as `spark_forms` says.
pub(crate) fn spark_parser(sql: &str) -> Result<Parser<'static>, ParserError> {
    let raw = raw_tokens(sql).map_err(|e| ParserError::TokenizerError(e.to_string()))?;
    let raw = parenthesized_values(spark_forms(raw));
    let mut tokens = Vec::with_capacity(raw.len());
    let function_exists: Vec<bool> = (0..raw.len()).map(|i| is_exists_function(&raw, i)).collect();
    let mut raw = raw.into_iter().enumerate().map(|(i, mut t)| {
        if function_exists[i] {
            // Quoted, the word is the function's name and no longer the keyword.
            t.token = Token::Word(Word { value: "exists".into(), quote_style: Some('`'), keyword: Keyword::NoKeyword });
        }
        t
    });
    let mut raw = raw.by_ref().peekable();
    while let Some(t) = raw.next() {
        let suffix = match (&t.token, raw.peek().map(|n| &n.token)) {
            (Token::Number(_, false), Some(Token::Word(w))) if w.quote_style.is_none() => {
                Some(w.value.to_ascii_uppercase())
            }
            _ => None,
        };
        let Token::Number(n, _) = &t.token else {
            tokens.push(t);
            continue;
        };
        let n = n.clone();
        let with = |token: Token| TokenWithSpan { token, span: t.span };
        match suffix.as_deref() {
            Some("D") if !n.contains(['e', 'E']) => tokens.push(with(Token::Number(format!("{n}E0"), false))),
            // With an exponent the number is a DOUBLE already.
            Some("D") => tokens.push(with(Token::Number(n.clone(), false))),
            Some("BD") if !n.contains(['e', 'E']) => {
                let decimal = if n.contains('.') { n.clone() } else { format!("{n}.") };
                tokens.push(with(Token::Number(decimal, false)));
            }
            Some(s @ ("F" | "S" | "Y")) => {
                let ty = match s {
                    "F" => "FLOAT",
                    "S" => "SMALLINT",
                    _ => "TINYINT",
                };
                tokens.extend([
                    with(Token::make_keyword("CAST")),
                    with(Token::LParen),
                    with(Token::Number(n.clone(), false)),
                    with(Token::make_keyword("AS")),
                    with(Token::make_keyword(ty)),
                    with(Token::RParen),
                ]);
            }
            _ => {
                tokens.push(t);
                continue;
            }
        }
        raw.next(); // the suffix
    }
    Ok(Parser::new(&DIALECT).with_tokens_with_locations(tokens))
}

/// Spark's inline table of one value per row, `VALUES 1, 2 AS t(a)` (or `VALUES 'x' T(c)`), as
/// rows in parentheses, which sqlparser reads: `VALUES (1), (2) AS t(a)`. A row ends at a comma,
/// or, after a whole operand, at a word that cannot continue an expression (an alias, `AS`, a
/// clause's keyword).
fn parenthesized_values(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    /// Words that continue an expression after an operand.
    const CONTINUING: [&str; 31] = [
        "AND", "OR", "IS", "NOT", "IN", "BETWEEN", "LIKE", "ILIKE", "RLIKE", "REGEXP", "DIV", "COLLATE", "ESCAPE",
        "CASE", "WHEN", "THEN", "ELSE", "END", "YEAR", "YEARS", "MONTH", "MONTHS", "DAY", "DAYS", "HOUR", "HOURS",
        "MINUTE", "MINUTES", "SECOND", "SECONDS", "TO",
    ];
    /// Of those, the words that end an operand (`CASE … END`, `INTERVAL '1' DAY`).
    const ENDING: [&str; 14] = [
        "END", "YEAR", "YEARS", "MONTH", "MONTHS", "DAY", "DAYS", "HOUR", "HOURS", "MINUTE", "MINUTES", "SECOND",
        "SECONDS", "NULL",
    ];
    let significant = |t: &TokenWithSpan| !matches!(t.token, Token::Whitespace(_));
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        out.push(t.clone());
        i += 1;
        let values = matches!(&t.token, Token::Word(w) if w.keyword == Keyword::VALUES && w.quote_style.is_none());
        if !values {
            continue;
        }
        let Some(first) = tokens[i..].iter().position(significant).map(|p| p + i) else { continue };
        if matches!(tokens[first].token, Token::LParen | Token::EOF | Token::SemiColon) {
            continue;
        }
        let at = |t: &TokenWithSpan, token: Token| TokenWithSpan { token, span: t.span };
        out.extend(tokens[i..first].iter().cloned());
        out.push(at(&tokens[first], Token::LParen));
        i = first;
        let mut depth = 0usize;
        let mut after_operand = false;
        let mut previous: Option<&TokenWithSpan> = None;
        while i < tokens.len() {
            let t = &tokens[i];
            let ends = match &t.token {
                Token::LParen | Token::LBracket => {
                    depth += 1;
                    false
                }
                Token::RParen | Token::RBracket if depth > 0 => {
                    depth -= 1;
                    false
                }
                Token::RParen | Token::RBracket | Token::SemiColon | Token::EOF => true,
                Token::Comma if depth == 0 => {
                    out.push(at(t, Token::RParen));
                    out.push(t.clone());
                    i += 1;
                    let next = tokens[i..].iter().position(significant).map_or(tokens.len(), |p| p + i);
                    out.extend(tokens[i..next].iter().cloned());
                    if let Some(n) = tokens.get(next) {
                        out.push(at(n, Token::LParen));
                    }
                    i = next;
                    after_operand = false;
                    previous = None;
                    continue;
                }
                Token::Word(w) if depth == 0 && after_operand => {
                    // `1.5D`, `10L`: a typed number's suffix, read with the number.
                    let suffix =
                        previous.is_some_and(|p| matches!(p.token, Token::Number(..)) && p.span.end == t.span.start);
                    let continues =
                        w.quote_style.is_none() && CONTINUING.iter().any(|c| w.value.eq_ignore_ascii_case(c));
                    !suffix && !continues
                }
                _ => false,
            };
            if ends {
                out.push(at(t, Token::RParen));
                break;
            }
            if significant(t) {
                after_operand = match &t.token {
                    Token::Number(..)
                    | Token::SingleQuotedString(_)
                    | Token::DoubleQuotedString(_)
                    | Token::RParen
                    | Token::RBracket => true,
                    Token::Word(w) => {
                        let is = |words: &[&str]| words.iter().any(|c| w.value.eq_ignore_ascii_case(c));
                        w.quote_style.is_some() || !is(&CONTINUING) || is(&ENDING)
                    }
                    _ => false,
                };
                previous = Some(t);
            }
            out.push(t.clone());
            i += 1;
        }
        if i >= tokens.len() {
            out.push(at(tokens.last().unwrap_or(&tokens[first]), Token::RParen));
        }
    }
    out
}

/// Spark's spellings the tokenizer or the parser do not know, as ones they do:
///
/// - a raw string `r'…'` (or `R"…"`), which the tokenizer reads as the word `r` before a string:
///   the string with each backslash doubled, so reading its escapes as Spark's parser does (the
///   engine does, for every string) gives back its text;
/// - `TRIM(BOTH FROM x)`, `TRIM(LEADING FROM x)`, `TRIM(TRAILING FROM x)`, which trim spaces:
///   `TRIM(x)`, `LTRIM(x)`, `RTRIM(x)` (Spark's names for them too);
/// - an interval of several units, `INTERVAL 5 days 3 hours`: `INTERVAL '5 days 3 hours'`,
///   which Spark reads alike (the engine reads the units in the text).
fn spark_forms(raw: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(raw.len());
    let mut raw = raw.into_iter().peekable();
    while let Some(t) = raw.next() {
        if matches!(&t.token, Token::Word(w) if w.keyword == Keyword::INTERVAL && w.quote_style.is_none()) {
            out.push(t);
            if let Some(units) = interval_units(&mut raw) {
                out.push(units);
            }
            continue;
        }
        let raw_prefix =
            matches!(&t.token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("r"));
        if let (true, Some(next)) = (raw_prefix, raw.peek()) {
            if next.span.start == t.span.end {
                let doubled = |s: &str| s.replace('\\', "\\\\");
                let token = match &next.token {
                    Token::SingleQuotedString(s) => Some(Token::SingleQuotedString(doubled(s))),
                    Token::DoubleQuotedString(s) => Some(Token::DoubleQuotedString(doubled(s))),
                    _ => None,
                };
                if let Some(token) = token {
                    let span = sqlparser::tokenizer::Span::new(t.span.start, next.span.end);
                    raw.next();
                    out.push(TokenWithSpan { token, span });
                    continue;
                }
            }
        }
        // `X 'F0'`: Spark's binary literal may have white space after its `X`.
        if matches!(&t.token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("x")) {
            if let Some(hex) = spaced_hex_literal(&mut raw) {
                out.push(TokenWithSpan { token: Token::HexStringLiteral(hex.0), span: t.span.union(&hex.1) });
                continue;
            }
        }
        if matches!(&t.token, Token::Word(w) if w.keyword == Keyword::FROM) && trim_side(&mut out) {
            continue;
        }
        out.push(t);
    }
    out
}

/// After an `INTERVAL`: two or more `value unit` pairs (`5 days 3 hours`, `-1 year '2' months`),
/// taken from `raw` as one string of them (nothing is taken for fewer: the parser reads one).
fn interval_units(raw: &mut std::iter::Peekable<std::vec::IntoIter<TokenWithSpan>>) -> Option<TokenWithSpan> {
    let mut ahead = raw.clone();
    let mut significant = || loop {
        match ahead.next() {
            Some(TokenWithSpan { token: Token::Whitespace(_), .. }) => continue,
            other => return other,
        }
    };
    let (mut pairs, mut text, mut span, mut taken) = (0, String::new(), None::<sqlparser::tokenizer::Span>, 0);
    let mut seen = 0;
    loop {
        let mut value = significant();
        seen += 1;
        let mut sign = "";
        if let Some(TokenWithSpan { token: Token::Minus | Token::Plus, .. }) = &value {
            sign = if value.as_ref().is_some_and(|v| v.token == Token::Minus) { "-" } else { "" };
            value = significant();
            seen += 1;
        }
        let number = match value.as_ref().map(|v| &v.token) {
            Some(Token::Number(n, false)) => n.clone(),
            Some(Token::SingleQuotedString(s)) => s.clone(),
            _ => break,
        };
        let unit = significant();
        seen += 1;
        let Some(TokenWithSpan { token: Token::Word(w), span: end }) = &unit else { break };
        if w.quote_style.is_some() || !is_interval_unit(&w.value) {
            break;
        }
        text.push_str(&format!("{}{sign}{number} {}", if text.is_empty() { "" } else { " " }, w.value));
        let start = value.as_ref().map(|v| v.span).unwrap_or(*end);
        span = Some(span.map_or(start.union(end), |s| s.union(end)));
        pairs += 1;
        taken = seen;
    }
    if pairs < 2 {
        return None;
    }
    // Take exactly the tokens of the pairs (white space between them included).
    let mut significant_taken = 0;
    while significant_taken < taken {
        match raw.next() {
            Some(TokenWithSpan { token: Token::Whitespace(_), .. }) => {}
            Some(_) => significant_taken += 1,
            None => break,
        }
    }
    Some(TokenWithSpan { token: Token::SingleQuotedString(text), span: span? })
}

/// Whether `word` is a unit of Spark's intervals (`day`, `hours`, `milliseconds`, …).
fn is_interval_unit(word: &str) -> bool {
    let w = word.to_ascii_lowercase();
    let singular = w.strip_suffix('s').unwrap_or(&w);
    ["year", "month", "week", "day", "hour", "minute", "second", "millisecond", "microsecond"].contains(&singular)
}

/// After an `X`: white space and a quoted text of hex digits, taken from `raw` (nothing is
/// taken when they do not follow).
fn spaced_hex_literal(
    raw: &mut std::iter::Peekable<std::vec::IntoIter<TokenWithSpan>>,
) -> Option<(String, sqlparser::tokenizer::Span)> {
    let mut ahead = raw.clone();
    let mut spaced = false;
    while let Some(TokenWithSpan { token: Token::Whitespace(_), .. }) = ahead.peek() {
        spaced = true;
        ahead.next();
    }
    match ahead.next() {
        Some(TokenWithSpan { token: Token::SingleQuotedString(s), span })
            if spaced && s.bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            *raw = ahead;
            Some((s, span))
        }
        _ => None,
    }
}

/// At a `FROM` after `TRIM ( BOTH` (`LEADING`, `TRAILING`): takes the side out of `out` (the
/// tokens so far), naming the function for it, and says so (the `FROM` is then dropped).
fn trim_side(out: &mut Vec<TokenWithSpan>) -> bool {
    let words: Vec<usize> =
        (0..out.len()).rev().filter(|&i| !matches!(out[i].token, Token::Whitespace(_))).take(3).collect();
    let [side, open, trim] = words[..] else { return false };
    let function = match &out[side].token {
        Token::Word(w) if w.keyword == Keyword::BOTH => "TRIM",
        Token::Word(w) if w.keyword == Keyword::LEADING => "LTRIM",
        Token::Word(w) if w.keyword == Keyword::TRAILING => "RTRIM",
        _ => return false,
    };
    if out[open].token != Token::LParen || !matches!(&out[trim].token, Token::Word(w) if w.keyword == Keyword::TRIM) {
        return false;
    }
    out.truncate(side);
    out[trim].token = Token::make_word(function, None);
    true
}

/// Whether token `i` is Spark's higher-order function `exists(array, x -> …)`: the word
/// `EXISTS` before a parenthesis that opens no query. (The parser would read an `EXISTS`
/// subquery there.)
fn is_exists_function(tokens: &[TokenWithSpan], i: usize) -> bool {
    let Token::Word(w) = &tokens[i].token else { return false };
    if w.keyword != Keyword::EXISTS || w.quote_style.is_some() {
        return false;
    }
    let mut next = tokens[i + 1..].iter().map(|t| &t.token).filter(|t| !matches!(t, Token::Whitespace(_)));
    if next.next() != Some(&Token::LParen) {
        return false;
    }
    let opens_query = |t: Option<&Token>| {
        matches!(t, Some(Token::Word(w)) if matches!(w.keyword, Keyword::SELECT | Keyword::WITH | Keyword::VALUES))
            || matches!(t, Some(Token::LParen))
    };
    !opens_query(next.next())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exists_over_an_array_is_the_function_and_over_a_query_the_subquery() {
        let parse = |sql: &str| spark_parser(sql).unwrap().parse_query().unwrap().to_string();
        let f = parse("SELECT exists(xs, x -> x > 1) FROM t");
        assert!(f.contains("`exists`(xs, x -> x > 1)"), "{f}");
        for sub in ["SELECT 1 WHERE EXISTS (SELECT 1)", "SELECT 1 WHERE EXISTS ( WITH c AS (SELECT 1) SELECT * FROM c)"]
        {
            let q = parse(sub);
            assert!(q.contains("EXISTS (") && !q.contains('`'), "{q}");
        }
    }

    #[test]
    fn sparks_operators_bind_as_in_its_grammar() {
        let parse = |sql: &str| format!("{:?}", spark_parser(sql).unwrap().parse_expr().unwrap());
        // `DIV` binds as `*`: (7 DIV 2) * 3.
        let div = parse("7 div 2 * 3");
        assert!(div.starts_with("BinaryOp { left: BinaryOp") && div.contains("MyIntegerDivide"), "{div}");
        // Shifts bind looser than `+` and tighter than `&`: (4 >>> (1 + 1)) & 3.
        let shift = parse("4 >>> 1 + 1 & 3");
        assert!(shift.contains("Custom(\">>>\")") && shift.contains("op: BitwiseAnd"), "{shift}");
        assert!(shift.find("BitwiseAnd") > shift.find("Plus"), "& is the outermost: {shift}");
        // `> >` apart is no shift.
        assert!(spark_parser("1 > > 2").unwrap().parse_expr().is_err());
    }

    #[test]
    fn raw_strings_and_trim_sides_read_as_spark_reads_them() {
        let parse = |sql: &str| spark_parser(sql).unwrap().parse_expr().unwrap().to_string();
        assert_eq!(parse(r"r'\d'"), r"'\\d'", "the backslash doubled, so unescaping gives it back");
        assert_eq!(parse("TRIM(BOTH FROM x)"), "TRIM(x)");
        assert_eq!(parse("trim(LEADING FROM x)"), "LTRIM(x)");
        assert_eq!(parse("TRIM(TRAILING 'a' FROM x)"), "TRIM(TRAILING 'a' FROM x)");
        // A word `r` apart from a string is a word.
        assert!(spark_parser("r 'a'").unwrap().parse_expr().unwrap().to_string().starts_with('r'));
        // Spark's binary literal, with or without space after its `X`.
        assert_eq!(parse("X 'F0'"), "X'F0'");
        assert_eq!(parse("x\n'0a'"), "X'0a'");
        assert_eq!(parse("X'F0'"), "X'F0'");
        assert!(spark_parser("x 'zz'").unwrap().parse_expr().unwrap().to_string().starts_with('x'));
        // An interval of several units is the interval of their text.
        assert_eq!(parse("INTERVAL 5 days 3 hours"), "INTERVAL '5 days 3 hours'");
        assert_eq!(parse("interval -1 year '2' months"), "INTERVAL '-1 year 2 months'");
        assert_eq!(parse("INTERVAL 1 DAY"), "INTERVAL 1 DAY");
        assert_eq!(parse("INTERVAL -'1-1' YEAR TO MONTH"), "INTERVAL -'1-1' YEAR TO MONTH");
        let q = spark_parser("SELECT INTERVAL 1 day 2 hours AS x, 3").unwrap().parse_query().unwrap().to_string();
        assert_eq!(q, "SELECT INTERVAL '1 day 2 hours' AS x, 3");
    }

    #[test]
    fn substitutes_outside_comments_and_reports_undefined_keys() {
        let conf = BTreeMap::from([("root".to_string(), "/data".to_string())]);
        let out = substitute("SELECT '${root}/x' -- ${nope}\n", &conf, "f.sql").unwrap();
        assert_eq!(out, "SELECT '/data/x' -- ${nope}\n");
        let err = substitute("SELECT 1,\n  '${rot}'", &conf, "f.sql").unwrap_err();
        assert_eq!(err[0].location.as_ref().unwrap().line, 2);
        assert_eq!(err[0].location.as_ref().unwrap().column, 4);
        assert!(err[0].hint.as_deref().unwrap().contains("${root}"));
    }

    #[test]
    fn tokens_carry_byte_offsets_and_lines() {
        let text = "SELECT 'ø'\n  , b";
        let toks = tokenize(text, None, "f").unwrap();
        let b = toks.last().unwrap();
        assert_eq!(&text[b.start..b.end], "b");
        assert_eq!((b.line, b.column), (2, 5));
    }

    #[test]
    fn splits_parser_error_positions() {
        let (m, p) = split_parser_error("sql parser error: Expected: x, found: y at Line: 3, Column: 7");
        assert_eq!(m, "Expected: x, found: y");
        assert_eq!(p, Some((3, 7)));
    }
}
