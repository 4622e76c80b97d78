//! Generated Python DataFrame programs, run natively and by pyspark on Spark: the differential
//! test of the DataFrame translation. `frames/frames.py` writes a pipeline project of one
//! materialized view per seed, whose query function is a random DataFrame program (see its opening
//! comment for what the programs hold), and runs each program's body with pyspark against the
//! Spark Connect server, writing what Spark answered. The project then runs natively (`thund
//! run`), and each view's table is judged by Spark's answer as the query corpus judges
//! (`differential::outcome`, rows unordered: a table has no order): equal, names differ, both
//! fail, refused (before the run, or the flow failed), or **different** — a table other than
//! Spark's answer without an error, which fails the test, as does a column name that differs (a
//! DataFrame's names are the table's).
//!
//! CI runs seeds `1..=THUND_FRAMES_PROGRAMS` (400 by default). A difference prints its seed and
//! program. Each block of 100 seeds reads input tables of its own, so a difference reruns
//! alone (`THUND_FRAMES_SEED=61 THUND_FRAMES_PROGRAMS=1`); a longer run takes `--profile long`.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

#[path = "../../thund-native/tests/common/mod.rs"]
mod common;
mod differential;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use arrow::array::RecordBatch;
use differential::{outcome, Outcome};
use thund_native::EngineOptions;

fn number(var: &str, default: u64) -> u64 {
    match std::env::var(var) {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| panic!("{var}={v} is not a number")),
        Err(_) => default,
    }
}

fn frames_py() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/frames/frames.py")
}

fn python() -> String {
    std::env::var("THUND_PYTHON").unwrap_or_else(|_| {
        panic!("THUND_PYTHON is not set: run the tests with scripts/test.sh, which installs pyspark-client")
    })
}

fn checked(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

/// What Spark answered for a program: its Arrow IPC file, or its error.
fn on_spark(out: &Path, name: &str) -> Result<Vec<RecordBatch>, String> {
    let err = out.join(format!("{name}.err"));
    if err.exists() {
        return Err(std::fs::read_to_string(err).unwrap());
    }
    let file = std::fs::File::open(out.join(format!("{name}.arrow")))
        .unwrap_or_else(|e| panic!("Spark's answer for {name} is missing: {e}"));
    let reader = arrow::ipc::reader::FileReader::try_new(file, None).unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    Ok(if batches.is_empty() { vec![RecordBatch::new_empty(schema)] } else { batches })
}

/// The program named in a line of `thund`'s output (`transformations/p12.py:8:35: …`), and the line.
fn program_of(line: &str) -> Option<(String, String)> {
    let at = line.find("transformations/p")?;
    let rest = &line[at + "transformations/".len()..];
    let name = rest.split(".py").next()?.to_string();
    Some((name, line.trim().to_string()))
}

#[test]
fn generated_dataframe_programs_give_sparks_answers_natively_or_are_refused() {
    let Some(url) = thund_testkit::spark_url("4.1", "generated DataFrame programs") else { return };
    let count = number("THUND_FRAMES_PROGRAMS", 400);
    let first = number("THUND_FRAMES_SEED", 1);
    let python = python();
    let started = std::time::Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    checked(
        Command::new(&python).arg(frames_py()).args(["generate", &first.to_string(), &count.to_string()]).arg(root),
    );
    std::fs::write(
        root.join("spark-pipeline.yml"),
        "name: frames\nstorage: store\nlibraries:\n  - glob:\n      include: transformations/**\n",
    )
    .unwrap();
    let spark_out = root.join("spark-answers");
    checked(Command::new(&python).arg(frames_py()).args(["spark", &url]).arg(root).arg(&spark_out));

    // Natively: what the engine refuses before a run is listed program by program; those
    // programs leave the project and the rest runs. A flow that fails is named with its error.
    let mut failed: BTreeMap<String, String> = BTreeMap::new();
    for _ in 0..3 {
        let out = Command::new(env!("CARGO_BIN_EXE_thund"))
            .args(["run", "-p"])
            .arg(root)
            .env("NO_COLOR", "1")
            .env("THUND_PYTHON", &python)
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let refused_before: Vec<(String, String)> =
            if out.status.code() == Some(2) { text.lines().filter_map(program_of).collect() } else { Vec::new() };
        if refused_before.is_empty() {
            for (name, line) in text.lines().filter_map(program_of) {
                failed.entry(name).or_insert(line);
            }
            assert!(
                out.status.success() || !failed.is_empty(),
                "the native run failed without naming a program:\n{text}"
            );
            break;
        }
        for (name, line) in refused_before {
            let _ = std::fs::remove_file(root.join("transformations").join(format!("{name}.py")));
            failed.entry(name).or_insert(line);
        }
    }

    let p = common::load(root);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut counts: BTreeMap<Outcome, usize> = BTreeMap::new();
    let mut wrong = Vec::new();
    let verbose = std::env::var_os("THUND_FRAMES_VERBOSE").is_some();
    let programs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("programs.json")).unwrap()).unwrap();
    for program in programs["programs"].as_array().unwrap() {
        let name = program["name"].as_str().unwrap();
        let body: Vec<&str> = program["body"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
        // The query opens every table of its pipeline: of this one, the program's own.
        let mut one = p.clone();
        one.datasets.retain(|d| d.name.name == name);
        let natively = match failed.get(name) {
            Some(why) => Err(why.clone()),
            None => rt
                .block_on(thund_native::query(&one, &format!("SELECT * FROM {name}"), &EngineOptions::default()))
                .map(differential::result_batches)
                .map_err(|e| e.to_string()),
        };
        let (o, detail) = outcome(on_spark(&spark_out, name), natively, false);
        *counts.entry(o).or_default() += 1;
        if matches!(o, Outcome::Different | Outcome::NamesDiffer) {
            println!("{o:?} {name}:\n    {}\n    {detail}\n", body.join("\n    "));
            wrong.push(name.to_string());
        } else if o == Outcome::Refused && verbose {
            println!("Refused {name}:\n    {}\n    {detail}\n", body.join("\n    "));
        }
    }

    println!(
        "Spark {url}: {count} generated DataFrame programs (seeds {first}..={}) in {:.0} s",
        first + count - 1,
        started.elapsed().as_secs_f64()
    );
    assert_eq!(counts.values().sum::<usize>(), count as usize, "outcomes do not add up");
    differential::print_shares("", &BTreeMap::from([("programs", counts)]), count as usize);
    assert!(
        wrong.is_empty(),
        "{} generated DataFrame programs answer differently from Spark without an error: {}",
        wrong.len(),
        wrong.join(", ")
    );
}
