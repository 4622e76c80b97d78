//! Spark's XPath functions: `xpath(xml, path)` (an ARRAY<STRING>), `xpath_string`,
//! `xpath_boolean`, `xpath_number`/`xpath_double`, `xpath_float`, `xpath_int`, `xpath_long`
//! and `xpath_short`.
//!
//! Spark parses the text with Java's DOM parser without namespaces and evaluates XPath 1.0 on
//! it; here the text is read into a small tree the same way (quick-xml, names as written:
//! `p:b` is an element named `p:b`, an `xmlns` declaration is an attribute like any other) and
//! evaluated by this module's XPath 1.0: location paths on the child, descendant, self,
//! parent, ancestor, sibling and attribute axes, predicates, the four value types with XPath's
//! conversions, the operators, and the core function library. A name test with a prefix matches
//! nothing, as on Spark (its XPath has no namespace context). Text that is not XML fails the
//! query; an empty text gives NULL. A path must be a literal; one this module does not read runs
//! on the Spark backend.
//!
//! `xpath` answers each node's DOM value: a text's or attribute's text, NULL for an element.
//! The number forms convert as Java narrows a `Double`: NaN is 0, a value out of range the
//! nearest bound (then, for SMALLINT, its low 16 bits).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, ListBuilder, StringBuilder};
use arrow::datatypes::{DataType, Field};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

use crate::functions::{columnar, utf8};

pub(crate) fn register(ctx: &SessionContext) {
    for kind in [
        Kind::Nodes,
        Kind::String,
        Kind::Boolean,
        Kind::Number("xpath_number"),
        Kind::Number("xpath_double"),
        Kind::Float,
        Kind::Int,
        Kind::Long,
        Kind::Short,
    ] {
        ctx.register_udf(ScalarUDF::from(XPath { kind, signature: Signature::any(2, Volatility::Immutable) }));
    }
}

// ---------------------------------------------------------------------------------------------
// The document.

#[derive(Debug, Clone, PartialEq)]
enum NodeKind {
    Root,
    Element(String),
    Attribute(String, String),
    Text(String),
    Comment(String),
    Instruction(String, String),
}

#[derive(Debug)]
struct Node {
    kind: NodeKind,
    parent: Option<usize>,
    children: Vec<usize>,
    attributes: Vec<usize>,
}

/// A parsed document; node 0 is the root, nodes are numbered in document order.
#[derive(Debug)]
struct Doc {
    nodes: Vec<Node>,
}

fn xml_error<T>(why: impl std::fmt::Display) -> Result<T> {
    exec_err!("the XML does not parse: {why}")
}

impl Doc {
    fn parse(text: &str) -> Result<Doc> {
        use quick_xml::events::Event;
        let mut reader = quick_xml::Reader::from_str(text);
        reader.config_mut().check_end_names = true;
        let mut doc =
            Doc { nodes: vec![Node { kind: NodeKind::Root, parent: None, children: vec![], attributes: vec![] }] };
        let mut open = vec![0usize];
        let mut elements = 0;
        loop {
            let event = reader.read_event().or_else(xml_error)?;
            let parent = *open.last().unwrap_or(&0);
            match event {
                Event::Start(e) => {
                    let id = doc.element(&e, parent, open.len() == 1, &mut elements)?;
                    open.push(id);
                }
                Event::Empty(e) => {
                    doc.element(&e, parent, open.len() == 1, &mut elements)?;
                }
                Event::End(_) => {
                    open.pop();
                }
                Event::Text(t) => {
                    let t = t.xml_content().or_else(xml_error)?;
                    let t = quick_xml::escape::unescape(&t).or_else(xml_error)?;
                    if open.len() == 1 {
                        if !t.trim().is_empty() {
                            return xml_error("text outside the root element");
                        }
                        continue;
                    }
                    doc.text(&t, parent);
                }
                Event::CData(t) => {
                    let t = String::from_utf8_lossy(&t).into_owned();
                    doc.text(&t, parent);
                }
                Event::GeneralRef(r) => {
                    let c = match r.resolve_char_ref().or_else(xml_error)? {
                        Some(c) => c.to_string(),
                        None => match r.as_ref() {
                            b"lt" => "<".into(),
                            b"gt" => ">".into(),
                            b"amp" => "&".into(),
                            b"apos" => "'".into(),
                            b"quot" => "\"".into(),
                            other => {
                                return exec_err!(
                                    "the XML entity &{}; runs on the Spark backend",
                                    String::from_utf8_lossy(other)
                                )
                            }
                        },
                    };
                    if open.len() == 1 {
                        return xml_error("a reference outside the root element");
                    }
                    doc.text(&c, parent);
                }
                Event::Comment(t) => {
                    let t = String::from_utf8_lossy(&t).into_owned();
                    doc.add(NodeKind::Comment(t), parent);
                }
                Event::PI(p) => {
                    let target = String::from_utf8_lossy(p.target()).into_owned();
                    let content = String::from_utf8_lossy(p.content()).trim_start().to_string();
                    doc.add(NodeKind::Instruction(target, content), parent);
                }
                Event::Decl(_) | Event::DocType(_) => {}
                Event::Eof => break,
            }
        }
        if open.len() != 1 || elements == 0 {
            return xml_error("the root element is not closed");
        }
        Ok(doc)
    }

    /// Adds the element `e` (with its attributes) under `parent`; `top` when it is the root
    /// element, of which there is one.
    fn element(
        &mut self,
        e: &quick_xml::events::BytesStart,
        parent: usize,
        top: bool,
        elements: &mut usize,
    ) -> Result<usize> {
        if top {
            *elements += 1;
            if *elements > 1 {
                return xml_error("more than one root element");
            }
        }
        let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
        let id = self.add(NodeKind::Element(name), parent);
        for a in e.attributes() {
            let a = a.or_else(xml_error)?;
            let key = String::from_utf8_lossy(a.key.as_ref()).into_owned();
            let value = a.unescape_value().or_else(xml_error)?.into_owned();
            let attr = self.nodes.len();
            self.nodes.push(Node {
                kind: NodeKind::Attribute(key, value),
                parent: Some(id),
                children: vec![],
                attributes: vec![],
            });
            self.nodes[id].attributes.push(attr);
        }
        Ok(id)
    }

    fn add(&mut self, kind: NodeKind, parent: usize) -> usize {
        let id = self.nodes.len();
        self.nodes.push(Node { kind, parent: Some(parent), children: vec![], attributes: vec![] });
        self.nodes[parent].children.push(id);
        id
    }

    /// Text joins the text node before it, as XPath sees adjacent text.
    fn text(&mut self, t: &str, parent: usize) {
        if let Some(&last) = self.nodes[parent].children.last() {
            if let NodeKind::Text(s) = &mut self.nodes[last].kind {
                s.push_str(t);
                return;
            }
        }
        self.add(NodeKind::Text(t.to_string()), parent);
    }

    /// XPath's string-value of a node.
    fn string_value(&self, id: usize) -> String {
        match &self.nodes[id].kind {
            NodeKind::Root | NodeKind::Element(_) => {
                let mut out = String::new();
                self.descendant_text(id, &mut out);
                out
            }
            NodeKind::Attribute(_, v) => v.clone(),
            NodeKind::Text(t) | NodeKind::Comment(t) => t.clone(),
            NodeKind::Instruction(_, c) => c.clone(),
        }
    }

    fn descendant_text(&self, id: usize, out: &mut String) {
        for &c in &self.nodes[id].children {
            match &self.nodes[c].kind {
                NodeKind::Text(t) => out.push_str(t),
                NodeKind::Element(_) => self.descendant_text(c, out),
                _ => {}
            }
        }
    }

    /// The DOM's `getNodeValue`: NULL for the root and elements.
    fn node_value(&self, id: usize) -> Option<String> {
        match &self.nodes[id].kind {
            NodeKind::Root | NodeKind::Element(_) => None,
            _ => Some(self.string_value(id)),
        }
    }

    fn name(&self, id: usize) -> &str {
        match &self.nodes[id].kind {
            NodeKind::Element(n) | NodeKind::Attribute(n, _) | NodeKind::Instruction(n, _) => n,
            _ => "",
        }
    }

    fn descendants(&self, id: usize, out: &mut Vec<usize>) {
        for &c in &self.nodes[id].children {
            out.push(c);
            self.descendants(c, out);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Expressions.

#[derive(Debug, Clone, Copy, PartialEq)]
enum Axis {
    Child,
    Descendant,
    DescendantOrSelf,
    Itself,
    Parent,
    Ancestor,
    AncestorOrSelf,
    FollowingSibling,
    PrecedingSibling,
    Attribute,
}

#[derive(Debug, Clone, PartialEq)]
enum Test {
    /// `*`
    Any,
    Name(String),
    /// A prefixed name: nothing matches without a namespace context.
    Prefixed,
    Text,
    Node,
    Comment,
    Instruction,
}

#[derive(Debug, Clone, PartialEq)]
struct Step {
    axis: Axis,
    test: Test,
    predicates: Vec<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Number(f64),
    Literal(String),
    /// A location path: from the root when absolute.
    Path {
        absolute: bool,
        steps: Vec<Step>,
    },
    /// A filter expression then steps (`(a|b)[1]/c`).
    Filtered {
        base: Box<Expr>,
        predicates: Vec<Expr>,
        steps: Vec<Step>,
    },
    Call(String, Vec<Expr>),
    Binary(Box<Expr>, &'static str, Box<Expr>),
    Negate(Box<Expr>),
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(f64),
    Literal(String),
    Name(String),
    Symbol(&'static str),
}

fn tokens(s: &str) -> std::result::Result<Vec<Token>, String> {
    let b: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let two: String = b[i..(i + 2).min(b.len())].iter().collect();
        if let Some(sym) = ["//", "::", "..", "!=", "<=", ">="].into_iter().find(|s| *s == two) {
            out.push(Token::Symbol(sym));
            i += 2;
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && b.get(i + 1).is_some_and(char::is_ascii_digit)) {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == '.') {
                i += 1;
            }
            let text: String = b[start..i].iter().collect();
            out.push(Token::Number(text.parse().map_err(|_| format!("the number `{text}`"))?));
            continue;
        }
        if let Some(sym) = ["/", "(", ")", "[", "]", ".", "@", ",", "|", "+", "-", "=", "<", ">", "*"]
            .into_iter()
            .find(|s| s.starts_with(c))
        {
            out.push(Token::Symbol(sym));
            i += 1;
            continue;
        }
        if c == '"' || c == '\'' {
            let end = b[i + 1..].iter().position(|x| *x == c).ok_or("an unclosed literal")? + i + 1;
            out.push(Token::Literal(b[i + 1..end].iter().collect()));
            i = end + 1;
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_alphanumeric() || matches!(b[i], '_' | '-' | '.' | ':')) {
                // `a::b`: the axis ends before `::`.
                if b[i] == ':' && b.get(i + 1) == Some(&':') {
                    break;
                }
                i += 1;
            }
            out.push(Token::Name(b[start..i].iter().collect()));
            continue;
        }
        return Err(format!("the character `{c}`"));
    }
    Ok(out)
}

struct Parser {
    t: Vec<Token>,
    at: usize,
}

type Parsed<T> = std::result::Result<T, String>;

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.t.get(self.at)
    }

    fn is(&self, sym: &str) -> bool {
        matches!(self.peek(), Some(Token::Symbol(s)) if *s == sym)
    }

    fn expect(&mut self, sym: &str) -> Parsed<()> {
        if self.is(sym) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("expected `{sym}`"))
        }
    }

    /// Whether the previous token makes `*` and names operators (XPath's lexical rule).
    fn operator_position(&self) -> bool {
        match self.at.checked_sub(1).and_then(|i| self.t.get(i)) {
            None => false,
            Some(Token::Symbol(s)) => matches!(*s, ")" | "]" | "." | ".."),
            Some(_) => true,
        }
    }

    fn binary(&mut self, ops: &[&'static str], next: fn(&mut Self) -> Parsed<Expr>) -> Parsed<Expr> {
        let mut left = next(self)?;
        loop {
            let op = ops.iter().find(|op| match self.peek() {
                Some(Token::Symbol(s)) => s == *op,
                Some(Token::Name(n)) => n == *op && self.operator_position(),
                _ => false,
            });
            let Some(op) = op else { return Ok(left) };
            self.at += 1;
            let right = next(self)?;
            left = Expr::Binary(Box::new(left), op, Box::new(right));
        }
    }

    fn or(&mut self) -> Parsed<Expr> {
        self.binary(&["or"], Self::and)
    }
    fn and(&mut self) -> Parsed<Expr> {
        self.binary(&["and"], Self::equality)
    }
    fn equality(&mut self) -> Parsed<Expr> {
        self.binary(&["=", "!="], Self::relational)
    }
    fn relational(&mut self) -> Parsed<Expr> {
        self.binary(&["<=", ">=", "<", ">"], Self::additive)
    }
    fn additive(&mut self) -> Parsed<Expr> {
        self.binary(&["+", "-"], Self::multiplicative)
    }
    fn multiplicative(&mut self) -> Parsed<Expr> {
        self.binary(&["*", "div", "mod"], Self::unary)
    }

    fn unary(&mut self) -> Parsed<Expr> {
        if self.is("-") {
            self.at += 1;
            return Ok(Expr::Negate(Box::new(self.unary()?)));
        }
        self.binary(&["|"], Self::path)
    }

    fn path(&mut self) -> Parsed<Expr> {
        // A filter expression: a literal, number, parenthesised expression or function call.
        let filter = match self.peek() {
            Some(Token::Number(_) | Token::Literal(_)) => true,
            Some(Token::Symbol("(")) => true,
            Some(Token::Name(n)) => {
                let call = matches!(self.t.get(self.at + 1), Some(Token::Symbol("(")));
                call && !matches!(n.as_str(), "text" | "node" | "comment" | "processing-instruction")
            }
            _ => false,
        };
        if !filter {
            let absolute = self.is("/") || self.is("//");
            let mut steps = Vec::new();
            if self.is("/") {
                self.at += 1;
                // `/` alone is the root.
                if !self.starts_step() {
                    return Ok(Expr::Path { absolute, steps });
                }
            } else if self.is("//") {
                self.at += 1;
                steps.push(descendant_or_self());
            }
            self.steps(&mut steps)?;
            return Ok(Expr::Path { absolute, steps });
        }
        let base = match self.peek().cloned() {
            Some(Token::Number(n)) => {
                self.at += 1;
                Expr::Number(n)
            }
            Some(Token::Literal(l)) => {
                self.at += 1;
                Expr::Literal(l)
            }
            Some(Token::Symbol("(")) => {
                self.at += 1;
                let e = self.or()?;
                self.expect(")")?;
                e
            }
            Some(Token::Name(name)) => {
                self.at += 2;
                let mut args = Vec::new();
                if !self.is(")") {
                    loop {
                        args.push(self.or()?);
                        if self.is(",") {
                            self.at += 1;
                        } else {
                            break;
                        }
                    }
                }
                self.expect(")")?;
                Expr::Call(name, args)
            }
            _ => return Err("an unexpected token".into()),
        };
        let predicates = self.predicates()?;
        let mut steps = Vec::new();
        if self.is("/") || self.is("//") {
            if self.is("//") {
                steps.push(descendant_or_self());
            }
            self.at += 1;
            self.steps(&mut steps)?;
        }
        if predicates.is_empty() && steps.is_empty() {
            return Ok(base);
        }
        Ok(Expr::Filtered { base: Box::new(base), predicates, steps })
    }

    fn starts_step(&self) -> bool {
        matches!(self.peek(), Some(Token::Name(_)) | Some(Token::Symbol("." | ".." | "@" | "*")))
    }

    fn steps(&mut self, steps: &mut Vec<Step>) -> Parsed<()> {
        loop {
            steps.push(self.step()?);
            if self.is("/") {
                self.at += 1;
            } else if self.is("//") {
                self.at += 1;
                steps.push(descendant_or_self());
            } else {
                return Ok(());
            }
        }
    }

    fn step(&mut self) -> Parsed<Step> {
        if self.is(".") {
            self.at += 1;
            return Ok(Step { axis: Axis::Itself, test: Test::Node, predicates: vec![] });
        }
        if self.is("..") {
            self.at += 1;
            return Ok(Step { axis: Axis::Parent, test: Test::Node, predicates: vec![] });
        }
        let mut axis = Axis::Child;
        if self.is("@") {
            self.at += 1;
            axis = Axis::Attribute;
        } else if let (Some(Token::Name(n)), Some(Token::Symbol("::"))) = (self.peek(), self.t.get(self.at + 1)) {
            axis = match n.as_str() {
                "child" => Axis::Child,
                "descendant" => Axis::Descendant,
                "descendant-or-self" => Axis::DescendantOrSelf,
                "self" => Axis::Itself,
                "parent" => Axis::Parent,
                "ancestor" => Axis::Ancestor,
                "ancestor-or-self" => Axis::AncestorOrSelf,
                "following-sibling" => Axis::FollowingSibling,
                "preceding-sibling" => Axis::PrecedingSibling,
                "attribute" => Axis::Attribute,
                other => return Err(format!("the axis `{other}`")),
            };
            self.at += 2;
        }
        let test = match self.peek().cloned() {
            Some(Token::Symbol("*")) => {
                self.at += 1;
                Test::Any
            }
            Some(Token::Name(n)) => {
                self.at += 1;
                let kind = matches!(n.as_str(), "text" | "node" | "comment" | "processing-instruction");
                if kind && self.is("(") {
                    self.at += 1;
                    if let Some(Token::Literal(_)) = self.peek() {
                        self.at += 1;
                    }
                    self.expect(")")?;
                    match n.as_str() {
                        "text" => Test::Text,
                        "node" => Test::Node,
                        "comment" => Test::Comment,
                        _ => Test::Instruction,
                    }
                } else if n.contains(':') {
                    Test::Prefixed
                } else {
                    Test::Name(n)
                }
            }
            _ => return Err("expected a step".into()),
        };
        Ok(Step { axis, test, predicates: self.predicates()? })
    }

    fn predicates(&mut self) -> Parsed<Vec<Expr>> {
        let mut out = Vec::new();
        while self.is("[") {
            self.at += 1;
            out.push(self.or()?);
            self.expect("]")?;
        }
        Ok(out)
    }
}

fn descendant_or_self() -> Step {
    Step { axis: Axis::DescendantOrSelf, test: Test::Node, predicates: vec![] }
}

/// An XPath 1.0 expression, or why it is not read here.
fn parse(path: &str) -> std::result::Result<Expr, String> {
    let mut p = Parser { t: tokens(path)?, at: 0 };
    if p.t.is_empty() {
        return Err("an empty path".into());
    }
    let e = p.or()?;
    if p.at != p.t.len() {
        return Err("tokens after the expression".into());
    }
    Ok(e)
}

// ---------------------------------------------------------------------------------------------
// Evaluation.

#[derive(Debug, Clone)]
enum Value {
    Nodes(Vec<usize>),
    Number(f64),
    Text(String),
    Boolean(bool),
}

struct Context {
    node: usize,
    position: usize,
    size: usize,
}

/// XPath's `number()` of a text: optional white space, an optional minus, digits with at most
/// one point; anything else is NaN.
fn text_number(s: &str) -> f64 {
    let t = s.trim_matches(|c: char| matches!(c, ' ' | '\t' | '\n' | '\r'));
    let body = t.strip_prefix('-').unwrap_or(t);
    let valid = !body.is_empty()
        && body.chars().all(|c| c.is_ascii_digit() || c == '.')
        && body.matches('.').count() <= 1
        && body != ".";
    if valid {
        t.parse().unwrap_or(f64::NAN)
    } else {
        f64::NAN
    }
}

/// XPath's `string()` of a number.
fn number_text(n: f64) -> String {
    if n.is_nan() {
        "NaN".into()
    } else if n.is_infinite() {
        if n > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else if n == n.trunc() && n.abs() < 1e18 {
        format!("{}", n as i64)
    } else {
        let s = format!("{n}");
        s
    }
}

impl Doc {
    fn to_text(&self, v: &Value) -> String {
        match v {
            Value::Nodes(ns) => ns.first().map(|n| self.string_value(*n)).unwrap_or_default(),
            Value::Number(n) => number_text(*n),
            Value::Text(s) => s.clone(),
            Value::Boolean(b) => b.to_string(),
        }
    }

    fn to_number(&self, v: &Value) -> f64 {
        match v {
            Value::Number(n) => *n,
            Value::Boolean(b) => f64::from(u8::from(*b)),
            other => text_number(&self.to_text(other)),
        }
    }

    fn to_boolean(v: &Value) -> bool {
        match v {
            Value::Nodes(ns) => !ns.is_empty(),
            Value::Number(n) => *n != 0.0 && !n.is_nan(),
            Value::Text(s) => !s.is_empty(),
            Value::Boolean(b) => *b,
        }
    }

    fn eval(&self, e: &Expr, ctx: &Context) -> Parsed<Value> {
        Ok(match e {
            Expr::Number(n) => Value::Number(*n),
            Expr::Literal(s) => Value::Text(s.clone()),
            Expr::Negate(x) => Value::Number(-self.to_number(&self.eval(x, ctx)?)),
            Expr::Path { absolute, steps } => {
                let start = if *absolute { 0 } else { ctx.node };
                Value::Nodes(self.walk(vec![start], steps)?)
            }
            Expr::Filtered { base, predicates, steps } => {
                let Value::Nodes(mut nodes) = self.eval(base, ctx)? else {
                    return Err("a predicate or step on a value that is not a node set".into());
                };
                for p in predicates {
                    nodes = self.filter(nodes, p, false)?;
                }
                Value::Nodes(self.walk(nodes, steps)?)
            }
            Expr::Call(name, args) => self.call(name, args, ctx)?,
            Expr::Binary(l, op, r) => {
                match *op {
                    "or" => {
                        return Ok(Value::Boolean(
                            Self::to_boolean(&self.eval(l, ctx)?) || Self::to_boolean(&self.eval(r, ctx)?),
                        ))
                    }
                    "and" => {
                        return Ok(Value::Boolean(
                            Self::to_boolean(&self.eval(l, ctx)?) && Self::to_boolean(&self.eval(r, ctx)?),
                        ))
                    }
                    _ => {}
                }
                let (a, b) = (self.eval(l, ctx)?, self.eval(r, ctx)?);
                match *op {
                    "|" => match (a, b) {
                        (Value::Nodes(mut x), Value::Nodes(y)) => {
                            x.extend(y);
                            x.sort_unstable();
                            x.dedup();
                            Value::Nodes(x)
                        }
                        _ => return Err("`|` of values that are not node sets".into()),
                    },
                    "=" | "!=" | "<" | "<=" | ">" | ">=" => Value::Boolean(self.compare(&a, op, &b)),
                    _ => {
                        let (x, y) = (self.to_number(&a), self.to_number(&b));
                        Value::Number(match *op {
                            "+" => x + y,
                            "-" => x - y,
                            "*" => x * y,
                            "div" => x / y,
                            _ => x % y,
                        })
                    }
                }
            }
        })
    }

    /// XPath's comparison of two values, node sets compared member by member.
    fn compare(&self, a: &Value, op: &str, b: &Value) -> bool {
        let atoms = |v: &Value| -> Vec<Value> {
            match v {
                Value::Nodes(ns) => ns.iter().map(|n| Value::Text(self.string_value(*n))).collect(),
                other => vec![other.clone()],
            }
        };
        let (xs, ys) = (atoms(a), atoms(b));
        let node_and_boolean =
            matches!((a, b), (Value::Nodes(_), Value::Boolean(_)) | (Value::Boolean(_), Value::Nodes(_)));
        if node_and_boolean {
            let (x, y) = (Self::to_boolean(a), Self::to_boolean(b));
            return self.compare_atoms(&Value::Boolean(x), op, &Value::Boolean(y));
        }
        xs.iter().any(|x| ys.iter().any(|y| self.compare_atoms(x, op, y)))
    }

    fn compare_atoms(&self, a: &Value, op: &str, b: &Value) -> bool {
        if matches!(op, "=" | "!=") {
            let equal = match (a, b) {
                (Value::Boolean(_), _) | (_, Value::Boolean(_)) => Self::to_boolean(a) == Self::to_boolean(b),
                (Value::Number(_), _) | (_, Value::Number(_)) => self.to_number(a) == self.to_number(b),
                _ => self.to_text(a) == self.to_text(b),
            };
            return (op == "=") == equal;
        }
        let (x, y) = (self.to_number(a), self.to_number(b));
        match op {
            "<" => x < y,
            "<=" => x <= y,
            ">" => x > y,
            _ => x >= y,
        }
    }

    fn call(&self, name: &str, args: &[Expr], ctx: &Context) -> Parsed<Value> {
        let arg = |i: usize| self.eval(&args[i], ctx);
        let text = |i: usize| -> Parsed<String> {
            match args.get(i) {
                Some(_) => Ok(self.to_text(&arg(i)?)),
                None => Ok(self.string_value(ctx.node)),
            }
        };
        let arity = |lo: usize, hi: usize| -> Parsed<()> {
            if (lo..=hi).contains(&args.len()) {
                Ok(())
            } else {
                Err(format!("`{name}` with {} arguments", args.len()))
            }
        };
        Ok(match name {
            "last" => Value::Number(ctx.size as f64),
            "position" => Value::Number(ctx.position as f64),
            "count" => {
                arity(1, 1)?;
                match arg(0)? {
                    Value::Nodes(ns) => Value::Number(ns.len() as f64),
                    _ => return Err("count of a value that is not a node set".into()),
                }
            }
            "sum" => {
                arity(1, 1)?;
                match arg(0)? {
                    Value::Nodes(ns) => Value::Number(ns.iter().map(|n| text_number(&self.string_value(*n))).sum()),
                    _ => return Err("sum of a value that is not a node set".into()),
                }
            }
            "string" => {
                arity(0, 1)?;
                Value::Text(text(0)?)
            }
            "number" => {
                arity(0, 1)?;
                match args.first() {
                    Some(_) => Value::Number(self.to_number(&arg(0)?)),
                    None => Value::Number(text_number(&self.string_value(ctx.node))),
                }
            }
            "boolean" => {
                arity(1, 1)?;
                Value::Boolean(Self::to_boolean(&arg(0)?))
            }
            "not" => {
                arity(1, 1)?;
                Value::Boolean(!Self::to_boolean(&arg(0)?))
            }
            "true" => Value::Boolean(true),
            "false" => Value::Boolean(false),
            "concat" => {
                if args.len() < 2 {
                    return Err("concat with fewer than two arguments".into());
                }
                Value::Text((0..args.len()).map(text).collect::<Parsed<Vec<_>>>()?.concat())
            }
            "contains" => {
                arity(2, 2)?;
                Value::Boolean(text(0)?.contains(&text(1)?))
            }
            "starts-with" => {
                arity(2, 2)?;
                Value::Boolean(text(0)?.starts_with(&text(1)?))
            }
            "substring-before" => {
                arity(2, 2)?;
                let (s, t) = (text(0)?, text(1)?);
                Value::Text(s.find(&t).map(|i| s[..i].to_string()).unwrap_or_default())
            }
            "substring-after" => {
                arity(2, 2)?;
                let (s, t) = (text(0)?, text(1)?);
                Value::Text(s.find(&t).map(|i| s[i + t.len()..].to_string()).unwrap_or_default())
            }
            "substring" => {
                arity(2, 3)?;
                let s: Vec<char> = text(0)?.chars().collect();
                let start = xpath_round(self.to_number(&arg(1)?));
                let end = match args.get(2) {
                    Some(_) => start + xpath_round(self.to_number(&arg(2)?)),
                    None => f64::INFINITY,
                };
                Value::Text(
                    s.iter()
                        .enumerate()
                        .filter(|(i, _)| {
                            let p = (*i + 1) as f64;
                            p >= start && p < end
                        })
                        .map(|(_, c)| c)
                        .collect(),
                )
            }
            "string-length" => {
                arity(0, 1)?;
                Value::Number(text(0)?.chars().count() as f64)
            }
            "normalize-space" => {
                arity(0, 1)?;
                Value::Text(text(0)?.split_whitespace().collect::<Vec<_>>().join(" "))
            }
            "translate" => {
                arity(3, 3)?;
                let (s, from, to) = (text(0)?, text(1)?, text(2)?);
                let (from, to): (Vec<char>, Vec<char>) = (from.chars().collect(), to.chars().collect());
                Value::Text(
                    s.chars()
                        .filter_map(|c| match from.iter().position(|f| *f == c) {
                            Some(i) => to.get(i).copied(),
                            None => Some(c),
                        })
                        .collect(),
                )
            }
            "name" | "local-name" => {
                arity(0, 1)?;
                let node = match args.first() {
                    Some(_) => match arg(0)? {
                        Value::Nodes(ns) => ns.first().copied(),
                        _ => return Err(format!("{name} of a value that is not a node set")),
                    },
                    None => Some(ctx.node),
                };
                let n = node.map(|n| self.name(n).to_string()).unwrap_or_default();
                Value::Text(if name == "local-name" { n.rsplit(':').next().unwrap_or("").to_string() } else { n })
            }
            "floor" => Value::Number(self.to_number(&arg(0)?).floor()),
            "ceiling" => Value::Number(self.to_number(&arg(0)?).ceil()),
            "round" => Value::Number(xpath_round(self.to_number(&arg(0)?))),
            other => return Err(format!("the function `{other}`")),
        })
    }

    fn walk(&self, mut nodes: Vec<usize>, steps: &[Step]) -> Parsed<Vec<usize>> {
        for step in steps {
            let mut next = Vec::new();
            for &n in &nodes {
                let mut candidates = self.axis(n, step.axis);
                candidates.retain(|c| self.matches(*c, &step.test, step.axis));
                let reverse = matches!(step.axis, Axis::Ancestor | Axis::AncestorOrSelf | Axis::PrecedingSibling);
                for p in &step.predicates {
                    candidates = self.filter(candidates, p, reverse)?;
                }
                next.extend(candidates);
            }
            next.sort_unstable();
            next.dedup();
            nodes = next;
        }
        Ok(nodes)
    }

    /// The nodes of `candidates` (in axis order: reversed for reverse axes) for which `p`
    /// holds; a number is a position.
    fn filter(&self, candidates: Vec<usize>, p: &Expr, reverse: bool) -> Parsed<Vec<usize>> {
        let mut ordered = candidates;
        if reverse {
            ordered.reverse();
        }
        let size = ordered.len();
        let mut out = Vec::new();
        for (i, &c) in ordered.iter().enumerate() {
            let ctx = Context { node: c, position: i + 1, size };
            let keep = match self.eval(p, &ctx)? {
                Value::Number(n) => n == (i + 1) as f64,
                v => Self::to_boolean(&v),
            };
            if keep {
                out.push(c);
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    fn axis(&self, n: usize, axis: Axis) -> Vec<usize> {
        let node = &self.nodes[n];
        let siblings = || node.parent.map(|p| self.nodes[p].children.clone()).unwrap_or_default();
        match axis {
            Axis::Child => node.children.clone(),
            Axis::Attribute => node.attributes.clone(),
            Axis::Itself => vec![n],
            Axis::Parent => node.parent.into_iter().collect(),
            Axis::Descendant | Axis::DescendantOrSelf => {
                let mut out = if axis == Axis::DescendantOrSelf { vec![n] } else { vec![] };
                self.descendants(n, &mut out);
                out
            }
            Axis::Ancestor | Axis::AncestorOrSelf => {
                let mut out = if axis == Axis::AncestorOrSelf { vec![n] } else { vec![] };
                let mut at = node.parent;
                while let Some(p) = at {
                    out.push(p);
                    at = self.nodes[p].parent;
                }
                out.sort_unstable();
                out
            }
            Axis::FollowingSibling => {
                if matches!(node.kind, NodeKind::Attribute(..)) {
                    return vec![];
                }
                siblings().into_iter().filter(|s| *s > n).collect()
            }
            Axis::PrecedingSibling => {
                if matches!(node.kind, NodeKind::Attribute(..)) {
                    return vec![];
                }
                siblings().into_iter().filter(|s| *s < n).collect()
            }
        }
    }

    fn matches(&self, n: usize, test: &Test, axis: Axis) -> bool {
        let kind = &self.nodes[n].kind;
        // The principal node type: attributes on the attribute axis, elements elsewhere.
        let principal = if axis == Axis::Attribute {
            matches!(kind, NodeKind::Attribute(..))
        } else {
            matches!(kind, NodeKind::Element(_))
        };
        match test {
            Test::Any => principal,
            Test::Name(name) => principal && self.name(n) == name,
            Test::Prefixed => false,
            Test::Text => matches!(kind, NodeKind::Text(_)),
            Test::Node => true,
            Test::Comment => matches!(kind, NodeKind::Comment(_)),
            Test::Instruction => matches!(kind, NodeKind::Instruction(..)),
        }
    }
}

/// XPath's `round`: half up (towards positive infinity).
fn xpath_round(x: f64) -> f64 {
    if x.is_nan() || x.is_infinite() {
        x
    } else {
        (x + 0.5).floor()
    }
}

// ---------------------------------------------------------------------------------------------
// Functions.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Nodes,
    String,
    Boolean,
    Number(&'static str),
    Float,
    Int,
    Long,
    Short,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct XPath {
    kind: Kind,
    signature: Signature,
}

impl XPath {
    fn out_type(&self) -> DataType {
        match self.kind {
            Kind::Nodes => DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true))),
            Kind::String => DataType::Utf8,
            Kind::Boolean => DataType::Boolean,
            Kind::Number(_) => DataType::Float64,
            Kind::Float => DataType::Float32,
            Kind::Int => DataType::Int32,
            Kind::Long => DataType::Int64,
            Kind::Short => DataType::Int16,
        }
    }

    /// The answer for one document (`None` for an empty text).
    fn answer(&self, doc: &Doc, e: &Expr) -> Result<ScalarValue> {
        let root = Context { node: 0, position: 1, size: 1 };
        let v = doc.eval(e, &root).or_else(|why| exec_err!("{}: {why}", self.name()))?;
        Ok(match self.kind {
            Kind::Nodes => {
                let Value::Nodes(ns) = v else {
                    return exec_err!("{}: the path does not select nodes", self.name());
                };
                let values: Vec<ScalarValue> = ns.iter().map(|n| ScalarValue::Utf8(doc.node_value(*n))).collect();
                ScalarValue::List(ScalarValue::new_list_nullable(&values, &DataType::Utf8))
            }
            Kind::String => ScalarValue::Utf8(Some(doc.to_text(&v))),
            Kind::Boolean => ScalarValue::Boolean(Some(Doc::to_boolean(&v))),
            Kind::Number(_) => ScalarValue::Float64(Some(doc.to_number(&v))),
            Kind::Float => ScalarValue::Float32(Some(doc.to_number(&v) as f32)),
            Kind::Int => ScalarValue::Int32(Some(doc.to_number(&v) as i32)),
            Kind::Long => ScalarValue::Int64(Some(doc.to_number(&v) as i64)),
            // Java narrows a double to a short through an int.
            Kind::Short => ScalarValue::Int16(Some(doc.to_number(&v) as i32 as i16)),
        })
    }
}

impl ScalarUDFImpl for XPath {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Nodes => "xpath",
            Kind::String => "xpath_string",
            Kind::Boolean => "xpath_boolean",
            Kind::Number(name) => name,
            Kind::Float => "xpath_float",
            Kind::Int => "xpath_int",
            Kind::Long => "xpath_long",
            Kind::Short => "xpath_short",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let text =
            |t: &DataType| matches!(t, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 | DataType::Null);
        if !text(&args[0]) || !text(&args[1]) {
            return plan_err!("{} takes two strings: the XML and the path", self.name());
        }
        Ok(self.out_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let path = match &args.args[1] {
            ColumnarValue::Scalar(s) => s.try_as_str().flatten().map(str::to_string),
            ColumnarValue::Array(_) => return exec_err!("{}'s path must be a literal", self.name()),
        };
        let out_type = self.out_type();
        let Some(path) = path else {
            return columnar(arrow::array::new_null_array(&out_type, n), scalar);
        };
        let e = parse(&path)
            .or_else(|why| exec_err!("{} with the path '{path}' runs on the Spark backend ({why})", self.name()))?;
        let xml = utf8(&args.args[0].to_array(n)?)?;
        let mut values = Vec::with_capacity(n);
        for i in 0..n {
            if xml.is_null(i) || xml.value(i).is_empty() {
                values.push(ScalarValue::try_from(&out_type)?);
                continue;
            }
            let doc = Doc::parse(xml.value(i))?;
            values.push(self.answer(&doc, &e)?);
        }
        let out: ArrayRef = if values.is_empty() {
            arrow::array::new_empty_array(&out_type)
        } else if self.kind == Kind::Nodes {
            // Built by hand: an all-NULL list of texts keeps its element type.
            let mut b = ListBuilder::new(StringBuilder::new());
            for v in &values {
                match v {
                    ScalarValue::List(l) if !l.is_null(0) => {
                        let items = utf8(&l.value(0))?;
                        for item in items.iter() {
                            b.values().append_option(item);
                        }
                        b.append(true);
                    }
                    _ => b.append(false),
                }
            }
            Arc::new(b.finish())
        } else {
            ScalarValue::iter_to_array(values)?
        };
        columnar(out, scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(xml: &str, path: &str) -> (Doc, Value) {
        let doc = Doc::parse(xml).unwrap();
        let v = doc.eval(&parse(path).unwrap(), &Context { node: 0, position: 1, size: 1 }).unwrap();
        (doc, v)
    }

    fn text(xml: &str, path: &str) -> String {
        let (doc, v) = eval(xml, path);
        doc.to_text(&v)
    }

    #[test]
    fn paths_select_as_sparks_xpath() {
        // Each as Spark 4.1.4 answers.
        let (doc, v) = eval("<a><b>b1</b><b>b2</b><b>b3</b><c>c1</c><c>c2</c></a>", "a/b/text()");
        let Value::Nodes(ns) = v else { panic!() };
        assert_eq!(
            ns.iter().map(|n| doc.node_value(*n)).collect::<Vec<_>>(),
            ["b1", "b2", "b3"].map(|s| Some(s.to_string()))
        );
        let (doc, v) = eval("<a><b>b1</b><b>b2</b></a>", "a/b");
        let Value::Nodes(ns) = v else { panic!() };
        assert_eq!(ns.iter().map(|n| doc.node_value(*n)).collect::<Vec<_>>(), [None, None]);
        assert_eq!(text("<a><b>b</b><c>cc</c></a>", "a/c"), "cc");
        assert_eq!(text("<a><b>b</b><c>cc</c></a>", "a/d"), "");
        assert_eq!(text("<a><b>x<c>y</c></b></a>", "a/b"), "xy");
        assert_eq!(text(r#"<a xmlns="u"><b>1</b></a>"#, "a/b"), "1");
        assert_eq!(text(r#"<a xmlns:p="u"><p:b>1</p:b></a>"#, "a/p:b"), "");
        assert_eq!(text(r#"<a><b x="1"/><b x="2"/></a>"#, "a/b[2]/@x"), "2");
        assert_eq!(text("<!DOCTYPE a><a>z</a>", "a"), "z");
    }

    #[test]
    fn numbers_and_booleans_convert_as_xpath_does() {
        let number = |xml: &str, path: &str| {
            let (doc, v) = eval(xml, path);
            doc.to_number(&v)
        };
        assert_eq!(number("<a><b>1</b><b>2</b></a>", "sum(a/b)"), 3.0);
        assert!(number("<a><b>x</b></a>", "a/b").is_nan());
        assert!(number("<a><b>1e3</b></a>", "a/b").is_nan());
        assert_eq!(number("<a/>", "count(a)"), 1.0);
        assert_eq!(number("<a><b>-3.7</b></a>", "a/b") as i64, -3);
        assert_eq!(number("<a><b>70000</b></a>", "a/b") as i32 as i16, 4464);
        let (_, v) = eval("<a><b>0</b></a>", "a/b=0");
        assert!(Doc::to_boolean(&v));
        let (_, v) = eval("<a><b>1</b></a>", "a/b");
        assert!(Doc::to_boolean(&v));
    }

    #[test]
    fn malformed_xml_fails() {
        assert!(Doc::parse("<a>").is_err());
        assert!(Doc::parse("<a></b>").is_err());
    }
}
