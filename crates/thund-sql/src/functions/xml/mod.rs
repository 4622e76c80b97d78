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
//!
//! Files: `document` (the tree), `parse` (XPath text into `Expr`), `eval` (evaluation and the
//! function library); this file holds the SQL functions.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, ListBuilder, StringBuilder};
use arrow::datatypes::{DataType, Field};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

use crate::columnar::{columnar, utf8};

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

mod document;
mod eval;
mod parse;

use document::Doc;
use eval::{Context, Value};
use parse::{parse, Expr};

/// Spark's XPath functions, as they run here.
pub(crate) const FUNCTIONS: &[crate::declare::Function] = &[
    crate::declare::Function::udf("xpath"),
    crate::declare::Function::udf("xpath_string"),
    crate::declare::Function::udf("xpath_boolean"),
    crate::declare::Function::udf("xpath_number"),
    crate::declare::Function::udf("xpath_double"),
    crate::declare::Function::udf("xpath_float"),
    crate::declare::Function::udf("xpath_int"),
    crate::declare::Function::udf("xpath_long"),
    crate::declare::Function::udf("xpath_short"),
];

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
