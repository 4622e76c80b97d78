//! A cursor over one file's tokens: what the statement parsers read SQL with.

use std::collections::BTreeMap;

use sqlparser::tokenizer::Token;

use super::super::query::NameContext;
use super::super::text::Tok;
use super::{expression, query_from};
use crate::error::Diagnostic;
use crate::ir::{Expression, QualifiedName, Query, SourceLocation};

/// A position in one statement's tokens.
pub(super) struct Cursor<'a> {
    pub(super) toks: &'a [Tok],
    pub(super) pos: usize,
    pub(super) text: &'a str,
    pub(super) file: &'a str,
}

pub(super) type PResult<T> = Result<T, Diagnostic>;

impl<'a> Cursor<'a> {
    pub(super) fn peek(&self) -> Option<&'a Tok> {
        self.toks.get(self.pos)
    }

    pub(super) fn loc(&self) -> SourceLocation {
        match self.peek().or_else(|| self.toks.last()) {
            Some(t) => SourceLocation::new(self.file, t.line, t.column),
            None => SourceLocation::new(self.file, 1, 1),
        }
    }

    pub(super) fn error(&self, message: impl Into<String>) -> Diagnostic {
        Diagnostic::at(&self.loc(), message)
    }

    pub(super) fn found(&self) -> String {
        match self.peek() {
            Some(t) => format!("`{}`", t.token),
            None => "the end of the statement".into(),
        }
    }

    pub(super) fn peek_word(&self, w: &str) -> bool {
        self.peek().is_some_and(|t| t.is_word(w))
    }

    pub(super) fn eat_word(&mut self, w: &str) -> bool {
        let hit = self.peek_word(w);
        if hit {
            self.pos += 1;
        }
        hit
    }

    pub(super) fn eat_words(&mut self, ws: &[&str]) -> bool {
        let hit = ws.iter().enumerate().all(|(k, w)| self.toks.get(self.pos + k).is_some_and(|t| t.is_word(w)));
        if hit {
            self.pos += ws.len();
        }
        hit
    }

    pub(super) fn expect_word(&mut self, w: &str) -> PResult<()> {
        let hit = self.eat_word(w);
        self.expected(hit, w)
    }

    /// `Ok` if `hit`, else "expected `what`, found …".
    pub(super) fn expected(&self, hit: bool, what: impl std::fmt::Display) -> PResult<()> {
        if hit {
            Ok(())
        } else {
            Err(self.error(format!("expected `{what}`, found {}", self.found())))
        }
    }

    pub(super) fn eat(&mut self, tok: &Token) -> bool {
        let hit = self.peek().is_some_and(|t| &t.token == tok);
        if hit {
            self.pos += 1;
        }
        hit
    }

    pub(super) fn expect(&mut self, tok: &Token) -> PResult<()> {
        let hit = self.eat(tok);
        self.expected(hit, tok)
    }

    pub(super) fn at_end(&self) -> bool {
        self.pos >= self.toks.len()
    }

    pub(super) fn ident(&mut self) -> PResult<String> {
        match self.peek().map(|t| &t.token) {
            Some(Token::Word(w)) => {
                self.pos += 1;
                Ok(if w.quote_style.is_some() { w.value.clone() } else { w.value.to_ascii_lowercase() })
            }
            _ => Err(self.error(format!("expected a name, found {}", self.found()))),
        }
    }

    /// `a`, `a.b` or `a.b.c`.
    pub(super) fn name_parts(&mut self) -> PResult<Vec<String>> {
        let mut parts = vec![self.ident()?];
        while self.eat(&Token::Period) {
            parts.push(self.ident()?);
        }
        if parts.len() > 3 {
            return Err(self.error(format!("`{}` has more than three name parts", parts.join("."))));
        }
        Ok(parts)
    }

    pub(super) fn qualified(&mut self, names: &NameContext) -> PResult<QualifiedName> {
        let at = self.loc();
        let mut parts = self.name_parts()?;
        // DLT's `LIVE.x` is the pipeline's own `x`.
        if parts.len() == 2 && parts[0] == "live" {
            parts.remove(0);
        }
        names.resolve(&parts).ok_or_else(|| Diagnostic::at(&at, "a name has at most three parts"))
    }

    pub(super) fn string(&mut self) -> PResult<String> {
        match self.peek().map(|t| &t.token) {
            Some(Token::SingleQuotedString(s) | Token::DoubleQuotedString(s)) => {
                self.pos += 1;
                Ok(s.clone())
            }
            _ => Err(self.error(format!("expected a quoted string, found {}", self.found()))),
        }
    }

    /// A property key or value: a string, a (dotted) word, a number or a boolean.
    pub(super) fn property_atom(&mut self) -> PResult<String> {
        match self.peek().map(|t| &t.token) {
            Some(Token::SingleQuotedString(s) | Token::DoubleQuotedString(s)) => {
                self.pos += 1;
                Ok(s.clone())
            }
            Some(Token::Number(n, _)) => {
                self.pos += 1;
                Ok(n.clone())
            }
            Some(Token::Word(_)) => Ok(self.name_parts_raw()?.join(".")),
            _ => Err(self.error(format!("expected a key or value, found {}", self.found()))),
        }
    }

    pub(super) fn name_parts_raw(&mut self) -> PResult<Vec<String>> {
        let mut parts = Vec::new();
        loop {
            match self.peek().map(|t| &t.token) {
                Some(Token::Word(w)) => parts.push(w.value.clone()),
                _ => return Err(self.error(format!("expected a name, found {}", self.found()))),
            }
            self.pos += 1;
            if !self.eat(&Token::Period) {
                return Ok(parts);
            }
        }
    }

    /// `(k = v, k2 v2, …)`: `TBLPROPERTIES` and `OPTIONS`.
    pub(super) fn properties(&mut self) -> PResult<BTreeMap<String, String>> {
        self.expect(&Token::LParen)?;
        let mut map = BTreeMap::new();
        if self.eat(&Token::RParen) {
            return Ok(map);
        }
        loop {
            let k = self.property_atom()?;
            self.eat(&Token::Eq);
            let v = self.property_atom()?;
            map.insert(k, v);
            if self.eat(&Token::RParen) {
                return Ok(map);
            }
            self.expect(&Token::Comma)?;
        }
    }

    /// `(a, b, c)` or, with `parens_optional`, `a, b, c`.
    pub(super) fn ident_list(&mut self, parens_optional: bool) -> PResult<Vec<String>> {
        let parens = self.eat(&Token::LParen);
        if !parens && !parens_optional {
            return Err(self.error(format!("expected `(`, found {}", self.found())));
        }
        let mut v = vec![self.ident()?];
        while self.eat(&Token::Comma) {
            v.push(self.ident()?);
        }
        if parens {
            self.expect(&Token::RParen)?;
        }
        Ok(v)
    }

    /// Source text of tokens `from..to` (exclusive).
    pub(super) fn slice(&self, from: usize, to: usize) -> &'a str {
        if from >= to || from >= self.toks.len() {
            return "";
        }
        &self.text[self.toks[from].start..self.toks[to - 1].end]
    }

    /// The rest of the statement as a query.
    pub(super) fn rest_as_query(&mut self, names: &NameContext) -> PResult<Query> {
        let Some(first) = self.peek() else {
            return Err(self.error("expected a query after `AS`"));
        };
        let location = SourceLocation::new(self.file, first.line, first.column);
        let sql = self.slice(self.pos, self.toks.len()).to_string();
        self.pos = self.toks.len();
        query_from(sql, location, names)
    }

    /// Index of the first top-level token at or after the cursor that is one of `stops`.
    pub(super) fn find_top_level(&self, stops: &[&str]) -> usize {
        let mut depth = 0i32;
        for k in self.pos..self.toks.len() {
            match self.toks[k].token {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                _ if depth == 0 && stops.iter().any(|s| self.toks[k].is_word(s)) => return k,
                _ => {}
            }
        }
        self.toks.len()
    }

    /// The SQL expression up to the next top-level stop word, parsed.
    pub(super) fn expression_until(&mut self, stops: &[&str], what: &str) -> PResult<Expression> {
        let end = self.find_top_level(stops);
        if end == self.pos {
            return Err(self.error(format!("expected {what}, found {}", self.found())));
        }
        let at = self.loc();
        let text = self.slice(self.pos, end).to_string();
        let parsed = expression(&text, &at)?;
        self.pos = end;
        Ok(parsed)
    }
}
