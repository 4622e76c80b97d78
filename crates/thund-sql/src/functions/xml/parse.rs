//! Expressions: XPath 1.0 text parsed into an expression tree.

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Axis {
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
pub(super) enum Test {
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
pub(super) struct Step {
    pub(super) axis: Axis,
    pub(super) test: Test,
    pub(super) predicates: Vec<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Expr {
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
pub(super) enum Token {
    Number(f64),
    Literal(String),
    Name(String),
    Symbol(&'static str),
}

pub(super) fn tokens(s: &str) -> std::result::Result<Vec<Token>, String> {
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

pub(super) struct Parser {
    t: Vec<Token>,
    at: usize,
}

pub(super) type Parsed<T> = std::result::Result<T, String>;

impl Parser {
    pub(super) fn peek(&self) -> Option<&Token> {
        self.t.get(self.at)
    }

    pub(super) fn is(&self, sym: &str) -> bool {
        matches!(self.peek(), Some(Token::Symbol(s)) if *s == sym)
    }

    pub(super) fn expect(&mut self, sym: &str) -> Parsed<()> {
        if self.is(sym) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("expected `{sym}`"))
        }
    }

    /// Whether the previous token makes `*` and names operators (XPath's lexical rule).
    pub(super) fn operator_position(&self) -> bool {
        match self.at.checked_sub(1).and_then(|i| self.t.get(i)) {
            None => false,
            Some(Token::Symbol(s)) => matches!(*s, ")" | "]" | "." | ".."),
            Some(_) => true,
        }
    }

    pub(super) fn binary(&mut self, ops: &[&'static str], next: fn(&mut Self) -> Parsed<Expr>) -> Parsed<Expr> {
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

    pub(super) fn or(&mut self) -> Parsed<Expr> {
        self.binary(&["or"], Self::and)
    }
    pub(super) fn and(&mut self) -> Parsed<Expr> {
        self.binary(&["and"], Self::equality)
    }
    pub(super) fn equality(&mut self) -> Parsed<Expr> {
        self.binary(&["=", "!="], Self::relational)
    }
    pub(super) fn relational(&mut self) -> Parsed<Expr> {
        self.binary(&["<=", ">=", "<", ">"], Self::additive)
    }
    pub(super) fn additive(&mut self) -> Parsed<Expr> {
        self.binary(&["+", "-"], Self::multiplicative)
    }
    pub(super) fn multiplicative(&mut self) -> Parsed<Expr> {
        self.binary(&["*", "div", "mod"], Self::unary)
    }

    pub(super) fn unary(&mut self) -> Parsed<Expr> {
        if self.is("-") {
            self.at += 1;
            return Ok(Expr::Negate(Box::new(self.unary()?)));
        }
        self.binary(&["|"], Self::path)
    }

    pub(super) fn path(&mut self) -> Parsed<Expr> {
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

    pub(super) fn starts_step(&self) -> bool {
        matches!(self.peek(), Some(Token::Name(_)) | Some(Token::Symbol("." | ".." | "@" | "*")))
    }

    pub(super) fn steps(&mut self, steps: &mut Vec<Step>) -> Parsed<()> {
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

    pub(super) fn step(&mut self) -> Parsed<Step> {
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

    pub(super) fn predicates(&mut self) -> Parsed<Vec<Expr>> {
        let mut out = Vec::new();
        while self.is("[") {
            self.at += 1;
            out.push(self.or()?);
            self.expect("]")?;
        }
        Ok(out)
    }
}

pub(super) fn descendant_or_self() -> Step {
    Step { axis: Axis::DescendantOrSelf, test: Test::Node, predicates: vec![] }
}

/// An XPath 1.0 expression, or why it is not read here.
pub(super) fn parse(path: &str) -> std::result::Result<Expr, String> {
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
