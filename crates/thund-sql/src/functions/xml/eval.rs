//! Evaluation: an expression over the tree, with XPath's four value types and conversions and
//! the core function library.

use super::document::{Doc, NodeKind};
use super::parse::{Axis, Expr, Parsed, Step, Test};

#[derive(Debug, Clone)]
pub(super) enum Value {
    Nodes(Vec<usize>),
    Number(f64),
    Text(String),
    Boolean(bool),
}

pub(super) struct Context {
    pub(super) node: usize,
    pub(super) position: usize,
    pub(super) size: usize,
}

/// XPath's `number()` of a text: optional white space, an optional minus, digits with at most
/// one point; anything else is NaN.
pub(super) fn text_number(s: &str) -> f64 {
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
pub(super) fn number_text(n: f64) -> String {
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
    pub(super) fn to_text(&self, v: &Value) -> String {
        match v {
            Value::Nodes(ns) => ns.first().map(|n| self.string_value(*n)).unwrap_or_default(),
            Value::Number(n) => number_text(*n),
            Value::Text(s) => s.clone(),
            Value::Boolean(b) => b.to_string(),
        }
    }

    pub(super) fn to_number(&self, v: &Value) -> f64 {
        match v {
            Value::Number(n) => *n,
            Value::Boolean(b) => f64::from(u8::from(*b)),
            other => text_number(&self.to_text(other)),
        }
    }

    pub(super) fn to_boolean(v: &Value) -> bool {
        match v {
            Value::Nodes(ns) => !ns.is_empty(),
            Value::Number(n) => *n != 0.0 && !n.is_nan(),
            Value::Text(s) => !s.is_empty(),
            Value::Boolean(b) => *b,
        }
    }

    pub(super) fn eval(&self, e: &Expr, ctx: &Context) -> Parsed<Value> {
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
    pub(super) fn compare(&self, a: &Value, op: &str, b: &Value) -> bool {
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

    pub(super) fn compare_atoms(&self, a: &Value, op: &str, b: &Value) -> bool {
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

    pub(super) fn call(&self, name: &str, args: &[Expr], ctx: &Context) -> Parsed<Value> {
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

    pub(super) fn walk(&self, mut nodes: Vec<usize>, steps: &[Step]) -> Parsed<Vec<usize>> {
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
    pub(super) fn filter(&self, candidates: Vec<usize>, p: &Expr, reverse: bool) -> Parsed<Vec<usize>> {
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

    pub(super) fn axis(&self, n: usize, axis: Axis) -> Vec<usize> {
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

    pub(super) fn matches(&self, n: usize, test: &Test, axis: Axis) -> bool {
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
pub(super) fn xpath_round(x: f64) -> f64 {
    if x.is_nan() || x.is_infinite() {
        x
    } else {
        (x + 0.5).floor()
    }
}
