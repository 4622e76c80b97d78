//! The document: XML text read into a small tree as Java's DOM parser reads it without
//! namespaces.

use datafusion::common::{exec_err, Result};

#[derive(Debug, Clone, PartialEq)]
pub(super) enum NodeKind {
    Root,
    Element(String),
    Attribute(String, String),
    Text(String),
    Comment(String),
    Instruction(String, String),
}

#[derive(Debug)]
pub(super) struct Node {
    pub(super) kind: NodeKind,
    pub(super) parent: Option<usize>,
    pub(super) children: Vec<usize>,
    pub(super) attributes: Vec<usize>,
}

/// A parsed document; node 0 is the root, nodes are numbered in document order.
#[derive(Debug)]
pub(super) struct Doc {
    pub(super) nodes: Vec<Node>,
}

pub(super) fn xml_error<T>(why: impl std::fmt::Display) -> Result<T> {
    exec_err!("the XML does not parse: {why}")
}

impl Doc {
    pub(super) fn parse(text: &str) -> Result<Doc> {
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
    pub(super) fn element(
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

    pub(super) fn add(&mut self, kind: NodeKind, parent: usize) -> usize {
        let id = self.nodes.len();
        self.nodes.push(Node { kind, parent: Some(parent), children: vec![], attributes: vec![] });
        self.nodes[parent].children.push(id);
        id
    }

    /// Text joins the text node before it, as XPath sees adjacent text.
    pub(super) fn text(&mut self, t: &str, parent: usize) {
        if let Some(&last) = self.nodes[parent].children.last() {
            if let NodeKind::Text(s) = &mut self.nodes[last].kind {
                s.push_str(t);
                return;
            }
        }
        self.add(NodeKind::Text(t.to_string()), parent);
    }

    /// XPath's string-value of a node.
    pub(super) fn string_value(&self, id: usize) -> String {
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

    pub(super) fn descendant_text(&self, id: usize, out: &mut String) {
        for &c in &self.nodes[id].children {
            match &self.nodes[c].kind {
                NodeKind::Text(t) => out.push_str(t),
                NodeKind::Element(_) => self.descendant_text(c, out),
                _ => {}
            }
        }
    }

    /// The DOM's `getNodeValue`: NULL for the root and elements.
    pub(super) fn node_value(&self, id: usize) -> Option<String> {
        match &self.nodes[id].kind {
            NodeKind::Root | NodeKind::Element(_) => None,
            _ => Some(self.string_value(id)),
        }
    }

    pub(super) fn name(&self, id: usize) -> &str {
        match &self.nodes[id].kind {
            NodeKind::Element(n) | NodeKind::Attribute(n, _) | NodeKind::Instruction(n, _) => n,
            _ => "",
        }
    }

    pub(super) fn descendants(&self, id: usize, out: &mut Vec<usize>) {
        for &c in &self.nodes[id].children {
            out.push(c);
            self.descendants(c, out);
        }
    }
}
