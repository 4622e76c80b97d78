//! Protocol drift: every message field and enum value of our `.proto` subset must have the same
//! name, number, type and presence (`optional`) in the pyspark wheel of each target Spark
//! version — except the fields listed in `SINCE`, which must be absent from older wheels (so the
//! list stays true), and those in `AS_BYTES`, messages we keep serialized. Each wheel is also
//! where two facts of `knut_pipelines::versions` are read from: whether its line has AUTO CDC
//! flows, and that its AUTO CDC message has no field ours lacks (no `IGNORE NULL UPDATES`, no
//! `APPLY AS TRUNCATE`, which the backend therefore refuses rather than drop).

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use prost::Message;
use prost_types::{DescriptorProto, EnumDescriptorProto, FileDescriptorSet};

/// Target wheels: each Spark line's newest, as `scripts/test.sh` installs them.
const VERSIONS: &[&str] = &["4.1.4", "4.2.1", "4.3.0"];

/// Parts of our subset that only newer lines have: (full name, field or value or `*`, first version).
/// The first entry that names a member wins (a member before its message's `*`).
const SINCE: &[(&str, &str, (u32, u32))] = &[
    ("spark.connect.PipelineCommand.DefineFlow", "auto_cdc_flow_details", (4, 2)),
    ("spark.connect.PipelineCommand.DefineFlow.AutoCdcFlowDetails", "track_history_column_list", (4, 3)),
    ("spark.connect.PipelineCommand.DefineFlow.AutoCdcFlowDetails", "track_history_except_column_list", (4, 3)),
    ("spark.connect.PipelineCommand.DefineFlow.AutoCdcFlowDetails", "*", (4, 2)),
    ("spark.connect.PipelineCommand.DefineFlow.SCDType", "SCD_TYPE_2", (4, 3)),
    ("spark.connect.PipelineCommand.DefineFlow.SCDType", "*", (4, 2)),
];

/// Fields of the wheels' AUTO CDC message that ours leaves out, and why: a field a new wheel adds
/// fails the test until it is sent or listed here. (Each must exist in some wheel.)
const NOT_SENT: &[(&str, &str)] = &[
    (
        "ignore_null_updates_column_list",
        "IGNORE NULL UPDATES is refused on Spark: that a server applies it is unmeasured",
    ),
    ("ignore_null_updates_except_column_list", "as ignore_null_updates_column_list"),
];

/// Message fields ours declares as `bytes` (the message kept serialized): (message, field, type).
const AS_BYTES: &[(&str, &str, &str)] =
    &[("spark.connect.PipelineCommand.DefineFlow.WriteRelationFlowDetails", "relation", "spark.connect.Relation")];

/// The type name protoc gives `bytes`.
const BYTES: &str = "12";

#[derive(Default)]
struct Facts {
    /// message → field → (number, type with ` optional` when proto3-optional)
    messages: BTreeMap<String, BTreeMap<String, (i64, String)>>,
    /// enum → value → number
    enums: BTreeMap<String, BTreeMap<String, i64>>,
}

fn walk_enum(prefix: &str, e: &EnumDescriptorProto, f: &mut Facts) {
    let values = e.value.iter().map(|v| (v.name().to_string(), i64::from(v.number()))).collect();
    f.enums.insert(format!("{prefix}{}", e.name()), values);
}

fn walk_message(prefix: &str, m: &DescriptorProto, f: &mut Facts) {
    let name = format!("{prefix}{}", m.name());
    let fields = m
        .field
        .iter()
        .map(|fd| {
            let kind = if fd.type_name().is_empty() {
                fd.r#type.unwrap_or_default().to_string()
            } else {
                fd.type_name().trim_start_matches('.').to_string()
            };
            let optional = if fd.proto3_optional() { " optional" } else { "" };
            (fd.name().to_string(), (i64::from(fd.number()), format!("{kind}{optional}")))
        })
        .collect();
    f.messages.insert(name.clone(), fields);
    for n in &m.nested_type {
        walk_message(&format!("{name}."), n, f);
    }
    for e in &m.enum_type {
        walk_enum(&format!("{name}."), e, f);
    }
}

fn ours() -> Facts {
    let fds = FileDescriptorSet::decode(knut_pipelines::proto::FILE_DESCRIPTOR_SET).unwrap();
    let mut f = Facts::default();
    for file in fds.file.iter().filter(|f| !f.name().starts_with("google/protobuf/")) {
        let prefix = format!("{}.", file.package());
        for m in &file.message_type {
            walk_message(&prefix, m, &mut f);
        }
        for e in &file.enum_type {
            walk_enum(&prefix, e, &mut f);
        }
    }
    f
}

fn wheel(version: &str) -> Facts {
    let python = thund_testkit::spark_venv_python(version);
    let script = PathBuf::from(manifest_dir()).join("../../scripts/proto_fields.py");
    let out = Command::new(&python).arg(script).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["version"], version);
    let mut f = Facts::default();
    for (m, fields) in json["messages"].as_object().unwrap() {
        let fields = fields
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                let optional = if v[2].as_bool().unwrap() { " optional" } else { "" };
                (k.clone(), (v[0].as_i64().unwrap(), format!("{}{optional}", v[1].as_str().unwrap())))
            })
            .collect();
        f.messages.insert(m.clone(), fields);
    }
    for (e, values) in json["enums"].as_object().unwrap() {
        let values = values.as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_i64().unwrap())).collect();
        f.enums.insert(e.clone(), values);
    }
    f
}

fn since(name: &str, member: &str) -> Option<(u32, u32)> {
    SINCE.iter().find(|(n, m, _)| *n == name && (*m == member || *m == "*")).map(|(_, _, v)| *v)
}

fn line(version: &str) -> (u32, u32) {
    let mut p = version.split('.').map(|x| x.parse().unwrap());
    (p.next().unwrap(), p.next().unwrap())
}

#[test]
fn our_protocol_subset_matches_every_target_wheel() {
    if thund_testkit::opt_out("THUND_SKIP_SPARK", "the protocol drift test") {
        return;
    }
    let ours = ours();
    assert!(ours.messages.contains_key("spark.connect.PipelineCommand.StartRun"));
    let mut problems = Vec::new();
    for version in VERSIONS {
        let theirs = wheel(version);
        let line = line(version);
        let facts = knut_pipelines::versions::facts_for(version).unwrap();
        // The facts read from the wheel: (fact, its value in versions.rs, what the wheel holds).
        let flow = "spark.connect.PipelineCommand.DefineFlow";
        let scd = "spark.connect.PipelineCommand.DefineFlow.SCDType";
        let read = [
            (
                "auto_cdc",
                facts.auto_cdc,
                format!("{flow}.auto_cdc_flow_details"),
                theirs.messages.get(flow).is_some_and(|f| f.contains_key("auto_cdc_flow_details")),
            ),
            (
                "auto_cdc_history",
                facts.auto_cdc_history,
                format!("{scd}.SCD_TYPE_2"),
                theirs.enums.get(scd).is_some_and(|v| v.contains_key("SCD_TYPE_2")),
            ),
        ];
        for (fact, said, member, exists) in read {
            if said != exists {
                problems.push(format!("{version}: {member} exists: {exists}; versions.rs says {fact}: {said}"));
            }
        }
        let cdc = "spark.connect.PipelineCommand.DefineFlow.AutoCdcFlowDetails";
        for field in theirs.messages.get(cdc).into_iter().flat_map(|f| f.keys()) {
            if !ours.messages.get(cdc).is_some_and(|f| f.contains_key(field))
                && !NOT_SENT.iter().any(|(n, _)| n == field)
            {
                problems.push(format!(
                    "{version}: {cdc}.{field} is new: the backend refuses what it would carry (capabilities.rs); send it"
                ));
            }
        }
        for (m, fields) in &ours.messages {
            for (name, (number, kind)) in fields {
                let expected_absent = since(m, name).is_some_and(|v| line < v);
                match theirs.messages.get(m).and_then(|f| f.get(name)) {
                    Some(_) if expected_absent => {
                        problems.push(format!("{version}: {m}.{name} exists, but SINCE says it is newer"))
                    }
                    None if !expected_absent => problems.push(format!("{version}: {m}.{name} does not exist")),
                    Some((n, k))
                        if n == number
                            && AS_BYTES
                                .iter()
                                .any(|(am, af, at)| am == m && af == name && k.replace(at, BYTES) == kind.as_str()) => {
                    }
                    Some((n, k)) if (n, k) != (number, kind) => {
                        problems.push(format!("{version}: {m}.{name} is {n} {k}, ours is {number} {kind}"))
                    }
                    _ => {}
                }
            }
        }
        for (e, values) in &ours.enums {
            for (name, number) in values {
                let expected_absent = since(e, name).is_some_and(|v| line < v);
                match theirs.enums.get(e).and_then(|v| v.get(name)) {
                    Some(_) if expected_absent => {
                        problems.push(format!("{version}: {e}.{name} exists, but SINCE says it is newer"))
                    }
                    None if !expected_absent => problems.push(format!("{version}: {e}.{name} does not exist")),
                    Some(n) if n != number => problems.push(format!("{version}: {e}.{name} = {n}, ours = {number}")),
                    _ => {}
                }
            }
        }
    }
    let cdc = "spark.connect.PipelineCommand.DefineFlow.AutoCdcFlowDetails";
    for (field, _) in NOT_SENT {
        if !VERSIONS.iter().any(|v| wheel(v).messages.get(cdc).is_some_and(|f| f.contains_key(*field))) {
            problems.push(format!("NOT_SENT lists {cdc}.{field}, which no wheel has: take it out"));
        }
    }
    assert!(problems.is_empty(), "our proto subset drifted from the wheels:\n{}", problems.join("\n"));
}

/// The crate's folder, as the test runner reports it when the test starts: a test binary built
/// from another checkout sharing the target directory still reads this checkout's files.
fn manifest_dir() -> String {
    std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string())
}
