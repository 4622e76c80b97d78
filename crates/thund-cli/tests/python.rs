//! Python definition files (`pyspark.pipelines`), end to end through the binary: the project
//! `spark-pipelines init` writes, Python's errors at their file and line, what the embedded
//! engine cannot translate, and a Python without pyspark.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::path::Path;
use std::process::{Command, Output};

/// The interpreter with pyspark-client that `scripts/test.sh` installs.
fn python() -> String {
    std::env::var("THUND_PYTHON").unwrap_or_else(|_| {
        panic!("THUND_PYTHON is not set: run the tests with scripts/test.sh, which installs pyspark-client")
    })
}

fn thund(dir: &Path, args: &[&str]) -> Output {
    thund_with(&python(), dir, args)
}

fn thund_with(python: &str, dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_thund"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("THUND_PYTHON", python)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("spark-pipeline.yml"),
        "name: py\nstorage: store\nconfiguration:\n  py.limit: \"3\"\nlibraries:\n  - glob:\n      include: transformations/**\n",
    )
    .unwrap();
    for (name, text) in files {
        let path = dir.path().join("transformations").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

const HEADER: &str = "from pyspark import pipelines as dp\nfrom pyspark.sql import SparkSession\nfrom pyspark.sql import functions as F\n\nspark = SparkSession.active()\n";

/// The project Spark 4.1.4's `spark-pipelines init` writes, as it writes it (only its storage
/// moved into the temporary folder), runs natively; its tables are Spark's (the conformance case
/// `python-init` holds what `spark-pipelines run` wrote).
#[test]
fn the_project_spark_pipelines_init_writes_runs_natively() {
    let tmp = tempfile::tempdir().unwrap();
    let o = Command::new(thund_testkit::spark_venv_python("4.1.4"))
        .args(["-m", "pyspark.pipelines.cli", "init", "--name", "hello"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let dir = tmp.path().join("hello");
    let spec = std::fs::read_to_string(dir.join("spark-pipeline.yml")).unwrap();
    let storage = spec.lines().find(|l| l.starts_with("storage:")).expect("init writes a storage");
    std::fs::write(dir.join("spark-pipeline.yml"), spec.replace(storage, "storage: pipeline-storage")).unwrap();
    assert!(dir.join("transformations/example_python_materialized_view.py").exists());

    let o = thund(&dir, &["run"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = thund(&dir, &["query", "SELECT id FROM example_sql_materialized_view ORDER BY id", "--format", "csv"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "id\n0\n2\n4\n6\n8\n");
    let o = thund(
        &dir,
        &["query", "SELECT count(*) AS n, sum(id) AS s FROM example_python_materialized_view", "--format", "csv"],
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout), "n,s\n10,45\n", "{}", text(&o));
}

/// Python and SQL datasets read each other by name; `spark.conf.get` reads the spec's
/// `configuration`; `graph` and `validate` see Python datasets at their Python lines.
#[test]
fn python_and_sql_datasets_read_each_other_and_the_configuration() {
    let dir = project(&[
        (
            "a.py",
            &format!(
                "{HEADER}limit = int(spark.conf.get(\"py.limit\"))\n\n\n\
                 @dp.materialized_view(comment=\"the first numbers\")\n\
                 def numbers():\n    return spark.range(10).where(F.col(\"id\") < limit)\n\n\n\
                 @dp.materialized_view(name=\"doubled\", spark_conf={{\"spark.sql.shuffle.partitions\": \"3\"}})\n\
                 def twice():\n    return spark.read.table(\"from_sql\").select((F.col(\"id\") * 2).alias(\"x\"))\n\n\n\
                 @dp.materialized_view\n\
                 def reshaped():\n    return (spark.read.table(\"doubled\").withColumn(\"n\", F.col(\"x\") / 2)\n\
                 .withColumn(\"x\", F.col(\"x\").cast(\"string\")).withColumn(\"big\", F.col(\"x\") > 2)\n\
                 .withColumnRenamed(\"nope\", \"never\").drop(\"nope\").select(F.col(\"n\").cast(\"int\").alias(\"n\"), \"x\", \"big\"))\n"
            ),
        ),
        ("b.sql", "CREATE MATERIALIZED VIEW from_sql AS SELECT id FROM numbers WHERE id > 0;\n"),
    ]);
    let o = thund(dir.path(), &["run"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = thund(dir.path(), &["query", "SELECT x FROM doubled ORDER BY x", "--format", "csv"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "x\n2\n4\n", "{}", text(&o));
    // withColumn replaces a column where it stands; renaming or dropping a name that is not a
    // column does nothing (Spark's semantics, which need the input's columns).
    let o = thund(dir.path(), &["query", "SELECT * FROM reshaped ORDER BY n", "--format", "csv"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "n,x,big\n1,2,false\n2,4,true\n", "{}", text(&o));
    let o = thund(dir.path(), &["graph"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("doubled"), "{}", text(&o));
}

/// Everything that goes wrong in Python files is reported at once, each at its file and line,
/// with exit code 2: a syntax error, an exception at import, a query function that raises, a
/// query function that asks for its DataFrame's schema, an undefined configuration key.
#[test]
fn broken_python_files_are_each_an_error_at_their_line() {
    let dir = project(&[
        ("1_syntax.py", "from pyspark import pipelines as dp\n\ndef broken(:\n    pass\n"),
        ("2_import.py", &format!("{HEADER}\nraise RuntimeError(\"no source yet\")\n")),
        (
            "3_query.py",
            &format!("{HEADER}\n@dp.materialized_view\ndef q():\n    return 1 / 0\n"),
        ),
        (
            "4_analysis.py",
            &format!("{HEADER}\n@dp.materialized_view\ndef cols():\n    df = spark.range(3)\n    print(df.columns)\n    return df\n"),
        ),
        ("5_conf.py", &format!("{HEADER}\nroot = spark.conf.get(\"py.missing\")\n")),
    ]);
    let o = thund(dir.path(), &["validate"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("5 problem(s)") && !out.contains("without a query"), "{out}");
    for (at, says) in [
        ("transformations/1_syntax.py:3:1", "SyntaxError"),
        ("transformations/2_import.py:7:1", "RuntimeError: no source yet"),
        ("transformations/3_query.py:9:1", "ZeroDivisionError: division by zero"),
        ("transformations/4_analysis.py:10:1", "ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION"),
        ("transformations/5_conf.py:7:1", "py.missing"),
    ] {
        assert!(out.contains(at) && out.contains(says), "expected {says} at {at}:\n{out}");
    }
    // Nothing ran, nothing was written (not even a bytecode cache).
    assert!(!dir.path().join("store").exists());
    assert!(!dir.path().join("transformations/__pycache__").exists());
}

/// A DataFrame operation the embedded engine does not translate is refused before anything runs,
/// at the query function's line, naming the operation and the backend that runs it.
#[test]
fn an_untranslated_dataframe_operation_is_refused_at_its_line() {
    let dir = project(&[(
        "a.py",
        &format!(
            "{HEADER}\n@dp.materialized_view\ndef fine():\n    return spark.range(3)\n\n\n\
             @dp.materialized_view\ndef sampled():\n    return spark.read.table(\"fine\").sample(0.5, seed=1).select(\"id\")\n"
        ),
    )]);
    let o = thund(dir.path(), &["validate"]);
    assert!(o.status.success(), "validation does not depend on a backend: {}", text(&o));
    let o = thund(dir.path(), &["run"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains("transformations/a.py:12") && out.contains("`sample`") && out.contains("--backend spark"),
        "{out}"
    );
    assert!(!dir.path().join("store/tables").exists(), "a refused run writes nothing");
}

/// A Python without pyspark is one clear error saying what to install.
#[test]
fn a_python_without_pyspark_says_what_to_install() {
    let dir = project(&[("a.py", &format!("{HEADER}\n@dp.materialized_view\ndef a():\n    return spark.range(1)\n"))]);
    let bare = tempfile::tempdir().unwrap();
    // A venv of its own, without packages: what a fresh machine's python3 has.
    let made = Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(bare.path()).output().unwrap();
    assert!(made.status.success(), "{}", text(&made));
    let o = Command::new(env!("CARGO_BIN_EXE_thund"))
        .arg("validate")
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("THUND_PYTHON", bare.path().join("bin/python"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("needs pyspark 4.1 or newer") && out.contains("pip install 'pyspark-client>=4.1'"), "{out}");
    // Each file that needs it is named.
    assert!(out.contains("transformations/a.py:1"), "{out}");
}

/// `thund test` replaces a Python dataset's inputs like a SQL dataset's, and a Python sink
/// receives its append flow's rows.
#[test]
fn python_datasets_are_unit_tested_and_feed_sinks() {
    let dir = project(&[(
        "a.py",
        &format!(
            "{HEADER}\n@dp.materialized_view\ndef orders():\n    \
             return spark.read.format(\"json\").schema(\"id INT, amount DECIMAL(10,2), kind STRING\").load(\"data/orders\")\n\n\n\
             @dp.materialized_view\ndef totals():\n    \
             return spark.read.table(\"orders\").where(F.col(\"kind\") != \"test\").groupBy(\"kind\").agg(F.sum(\"amount\").alias(\"total\"))\n\n\n\
             dp.create_sink(\"out\", format=\"json\", options={{\"path\": \"sink_out\"}})\n\n\n\
             @dp.append_flow(target=\"out\")\ndef to_sink():\n    \
             return spark.readStream.format(\"json\").schema(\"id INT, amount DECIMAL(10,2), kind STRING\").load(\"data/orders\")\n"
        ),
    )]);
    std::fs::create_dir_all(dir.path().join("data/orders")).unwrap();
    std::fs::write(
        dir.path().join("data/orders/a.json"),
        "{\"id\": 1, \"amount\": \"3.50\", \"kind\": \"a\"}\n{\"id\": 2, \"amount\": \"1.00\", \"kind\": \"test\"}\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("tests")).unwrap();
    std::fs::write(
        dir.path().join("tests/t.yml"),
        "tests:\n  - name: totals leave test orders out\n    dataset: totals\n    inputs:\n      orders:\n        \
         schema: \"id INT, amount DECIMAL(10,2), kind STRING\"\n        rows:\n          - {id: 1, amount: 10.5, kind: a}\n          \
         - {id: 2, amount: 2.0, kind: a}\n          - {id: 3, amount: 99.0, kind: test}\n    expect:\n      rows:\n        \
         - {kind: a, total: 12.5}\n  - name: a wrong total fails\n    dataset: totals\n    inputs:\n      orders:\n        \
         schema: \"id INT, amount DECIMAL(10,2), kind STRING\"\n        rows:\n          - {id: 1, amount: 10.5, kind: a}\n    \
         expect:\n      rows:\n        - {kind: a, total: 11.0}\n",
    )
    .unwrap();
    let o = thund(dir.path(), &["test"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("PASS totals leave test orders out") && out.contains("FAIL a wrong total fails"), "{out}");

    let o = thund(dir.path(), &["run"]);
    assert!(o.status.success(), "{}", text(&o));
    let written: String = std::fs::read_dir(dir.path().join("sink_out"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let mut lines: Vec<&str> = written.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        ["{\"id\":1,\"amount\":3.50,\"kind\":\"a\"}", "{\"id\":2,\"amount\":1.00,\"kind\":\"test\"}"],
        "{written}"
    );
}

/// A flow's `spark_conf` reaches the flow as a SQL file's `SET` does: one the embedded engine
/// cannot apply is refused at the definition's line, never dropped.
#[test]
fn a_flows_spark_conf_is_never_dropped() {
    let dir = project(&[(
        "a.py",
        &format!(
            "{HEADER}\n@dp.materialized_view(spark_conf={{\"spark.sql.ansi.enabled\": \"false\"}})\ndef lenient():\n    return spark.range(3)\n"
        ),
    )]);
    let o = thund(dir.path(), &["run"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("transformations/a.py:7") && out.contains("SET spark.sql.ansi.enabled"), "{out}");
}

/// `dp.create_auto_cdc_flow` (pyspark 4.3) becomes the AUTO CDC flow a SQL file's `AUTO CDC INTO`
/// is: the conformance case `auto-cdc`'s SCD 1 and SCD 2 tables, defined in Python over three
/// runs of its change feed, equal the independent replay of that feed (`auto-cdc/replay.py`).
#[test]
fn auto_cdc_flows_from_python_equal_the_replay_of_their_feed() {
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/auto-cdc");
    let dir = project(&[(
        "cdc.py",
        &format!(
            "{HEADER}root = spark.conf.get(\"changes.data_root\")\n\n\n\
             @dp.table\ndef customer_changes():\n    return spark.readStream.format(\"json\").load(f\"{{root}}/changes\")\n\n\n\
             dp.create_streaming_table(\"customers\")\n\
             dp.create_auto_cdc_flow(target=\"customers\", source=\"customer_changes\", keys=[\"id\"], sequence_by=\"seq\",\n    \
             apply_as_deletes=\"op = 'DELETE'\", except_column_list=[\"op\"], stored_as_scd_type=1, name=\"customers_cdc\")\n\n\
             dp.create_streaming_table(\"customers_history\")\n\
             dp.create_auto_cdc_flow(target=\"customers_history\", source=\"customer_changes\", keys=[F.col(\"id\")],\n    \
             sequence_by=F.col(\"seq\"), apply_as_deletes=F.col(\"op\") == \"DELETE\", except_column_list=[\"op\"],\n    \
             stored_as_scd_type=\"2\", track_history_except_column_list=[F.col(\"email\")])\n"
        ),
    )]);
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let spec = std::fs::read_to_string(dir.path().join("spark-pipeline.yml"))
        .unwrap()
        .replace("py.limit: \"3\"", &format!("changes.data_root: \"{}\"", data.display()));
    std::fs::write(dir.path().join("spark-pipeline.yml"), spec).unwrap();
    let pyspark_4_3 = thund_testkit::spark_venv_python("4.3.0");
    let pyspark_4_3 = pyspark_4_3.to_str().unwrap();

    // What the Spark backend would be sent: the same flows as the SQL file's.
    let o = thund_with(pyspark_4_3, dir.path(), &["graph", "--format", "sdp"]);
    assert!(o.status.success(), "{}", text(&o));
    let graph: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let flow = |name: &str| graph["flows"].as_array().unwrap().iter().find(|f| f["name"] == name).cloned().unwrap();
    let cdc = &flow("customers_cdc")["details"]["AutoCdc"];
    assert_eq!((&cdc["keys"], &cdc["sequence_by"]), (&serde_json::json!(["id"]), &"(seq)".into()), "{cdc}");
    assert_eq!(
        (&cdc["apply_as_deletes"], &cdc["except_column_list"]),
        (&"(op = 'DELETE')".into(), &serde_json::json!(["op"]))
    );
    let history = &flow("customers_history")["details"]["AutoCdc"];
    assert_eq!(history["stored_as"], "Type2", "{history}");
    assert_eq!(history["track_history_except_columns"], serde_json::json!(["email"]), "{history}");
    for run in 1..=3 {
        let g = Command::new(python()).arg(case.join("gen_changes.py")).arg(&data).arg((run - 1).to_string()).output();
        let g = g.unwrap();
        assert!(g.status.success(), "{}", text(&g));
        let o = thund_with(pyspark_4_3, dir.path(), &["run"]);
        assert!(o.status.success(), "run {run}: {}", text(&o));
        for table in ["customer_changes", "customers", "customers_history"] {
            let expected = std::fs::read_to_string(case.join(format!("expected/run{run}/{table}.csv"))).unwrap();
            let mut lines = expected.lines();
            let header = lines.next().unwrap();
            let mut want: Vec<&str> = lines.collect();
            want.sort();
            let columns: Vec<String> = header.split(',').map(|c| format!("`{c}`")).collect();
            let sql = format!("SELECT {} FROM {table}", columns.join(", "));
            let o = thund_with(pyspark_4_3, dir.path(), &["query", &sql, "--format", "csv"]);
            assert!(o.status.success(), "{}", text(&o));
            let got = String::from_utf8_lossy(&o.stdout).to_string();
            let mut got: Vec<&str> = got.lines().skip(1).collect();
            got.sort();
            assert_eq!(got, want, "run {run}, {table}");
        }
    }
}

/// `dp.create_auto_cdc_flow` as Databricks documents it runs on every pyspark: 4.1 has no such
/// function and 4.2's cannot send SCD type 2 (what this file asks of it), so there the call is
/// read as the `AUTO CDC` statement a SQL file would hold (4.3 sends it itself); a DLT file's
/// `dlt.apply_changes` the same, with Columns or text.
#[test]
fn auto_cdc_from_python_runs_on_every_pyspark() {
    let cdc = format!(
        "{HEADER}import dlt\n\n@dp.temporary_view\ndef changes():\n    return spark.readStream.table(\"feed\")\n\n\
         dlt.create_streaming_table(\"latest\")\n\
         dlt.apply_changes(target=\"latest\", source=\"changes\", keys=[\"id\"], sequence_by=\"seq\",\n    \
         apply_as_deletes=F.expr(\"op = 'D'\"), except_column_list=[F.col(\"op\")])\n\n\
         dp.create_streaming_table(\"history\")\n\
         dp.create_auto_cdc_flow(target=\"history\", source=\"changes\", keys=[F.col(\"id\")], sequence_by=F.col(\"seq\"),\n    \
         apply_as_deletes=\"op = 'D'\", except_column_list=[\"op\"], stored_as_scd_type=2)\n"
    );
    let feed = "CREATE STREAMING TABLE feed AS SELECT * FROM STREAM read_files('data', format => 'json', \
                schema => 'id INT, v STRING, seq INT, op STRING');\n";
    let rows = [(1, "a", 1, "I"), (1, "b", 2, "U"), (2, "c", 1, "I"), (2, "c", 3, "D")];
    let rows: String = rows
        .iter()
        .map(|(id, v, seq, op)| format!("{{\"id\": {id}, \"v\": \"{v}\", \"seq\": {seq}, \"op\": \"{op}\"}}\n"))
        .collect();
    for version in ["4.1.4", "4.2.1", "4.3.0"] {
        let python = thund_testkit::spark_venv_python(version);
        let dir = project(&[("cdc.py", &cdc), ("feed.sql", feed)]);
        std::fs::create_dir(dir.path().join("data")).unwrap();
        std::fs::write(dir.path().join("data/feed.json"), &rows).unwrap();
        let o = thund_with(python.to_str().unwrap(), dir.path(), &["run"]);
        assert!(o.status.success(), "pyspark {version}: {}", text(&o));
        // The summary says a view is one rather than that it wrote no rows.
        let summary = text(&o);
        let line = summary.lines().find(|l| l.starts_with("spark_catalog.default.changes ")).unwrap_or_default();
        assert!(line.contains("COMPLETED") && line.contains(" view "), "{summary}");
        let o = thund_with(python.to_str().unwrap(), dir.path(), &["query", "SELECT * FROM latest", "--format", "csv"]);
        assert_eq!(String::from_utf8_lossy(&o.stdout), "id,v,seq\n1,b,2\n", "pyspark {version}: {}", text(&o));
        let sql = "SELECT id, v, __START_AT, __END_AT FROM history ORDER BY id, __START_AT";
        let o = thund_with(python.to_str().unwrap(), dir.path(), &["query", sql, "--format", "csv"]);
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "id,v,__START_AT,__END_AT\n1,a,1,2\n1,b,2,\n2,c,1,3\n",
            "pyspark {version}: {}",
            text(&o)
        );
    }
}

/// A definition file written for Databricks runs unchanged: `import dlt` and its decorators,
/// the `spark` global, expectations above or below the dataset's decorator (`dlt.expect*` and
/// `dp.expect*`), `dlt.read("LIVE.x")`, names in any case. In an SDP project `table` keeps
/// spark-pipelines' meaning (a streaming table); in a Databricks project, over a batch read, it
/// is the materialized view Databricks makes of it.
#[test]
fn a_databricks_python_file_runs_unchanged() {
    let file = "import dlt\nfrom pyspark import pipelines as dp\nfrom pyspark.sql.functions import col\n\n\
                @dlt.table(name=\"RIDES_RAW\")\ndef raw():\n    return spark.range(6).withColumn(\"km\", col(\"id\") - 1)\n\n\
                @dlt.expect_or_drop(\"positive\", \"km > 0\")\n@dlt.table\n@dlt.expect(\"even\", \"km % 2 = 0\")\n\
                def rides():\n    return dlt.read(\"LIVE.rides_raw\")\n\n\
                @dp.materialized_view\n@dp.expect_all_or_fail({\"small\": \"km < 100\"})\n\
                def totals():\n    return spark.read.table(\"Rides\").selectExpr(\"sum(km) AS km\")\n";
    let dir = project(&[("rides.py", file)]);
    let o = thund(dir.path(), &["graph"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("default.rides (streaming table)"), "{}", text(&o));
    // A streaming table's flow must read a stream.
    let o = thund(dir.path(), &["run"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("transformations/rides.py:5:1: flow `spark_catalog.default.rides_raw`"), "{}", text(&o));

    // The same file in a Databricks project: `@dlt.table` over a batch read is a materialized view.
    let settings = serde_json::json!({
        "name": "rides", "storage": "store2", "target": "shop",
        "libraries": [{"file": {"path": "/Workspace/Users/ana@example.com/rides/transformations/rides.py"}}]
    });
    std::fs::write(dir.path().join("settings.json"), settings.to_string()).unwrap();
    let o = thund(dir.path(), &["graph", "-p", "settings.json"]);
    assert!(o.status.success(), "{}", text(&o));
    for kind in ["shop.rides_raw (materialized view)", "shop.rides (materialized view)"] {
        assert!(text(&o).contains(kind), "{kind}: {}", text(&o));
    }
    let o = thund(dir.path(), &["run", "-p", "settings.json"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    for (dataset, expectation, passed) in
        [("rides ", "positive", "4/6"), ("rides ", "even", "3/6"), ("totals ", "small", "1/1")]
    {
        assert!(
            out.lines().any(|l| l.contains(dataset) && l.contains(expectation) && l.contains(passed)),
            "no {dataset}{expectation} {passed} in the run's expectations: {out}"
        );
    }
    let o = thund(dir.path(), &["query", "-p", "settings.json", "SELECT km FROM rides ORDER BY km", "--format", "csv"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "km\n1\n2\n3\n4\n", "{}", text(&o));
    let o = thund(dir.path(), &["query", "-p", "settings.json", "SELECT * FROM totals", "--format", "csv"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "km\n10\n", "{}", text(&o));
    // An expectation whose condition fails the update fails the run.
    let failing = file.replace("km < 100", "km < 3");
    std::fs::write(dir.path().join("transformations/rides.py"), failing).unwrap();
    let o = thund(dir.path(), &["run", "-p", "settings.json"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("expectation `small`"), "{}", text(&o));
}

/// Databricks' bronze-view pattern: a streaming `@dlt.view` with expectations over Auto Loader,
/// read by a `@dlt.table`; the view's checks apply to each batch the table takes in.
#[test]
fn a_streaming_dlt_views_expectations_are_checked_batch_by_batch() {
    let file = "import dlt\n\n\
                @dlt.view\n@dlt.expect_or_drop(\"has_id\", \"id IS NOT NULL\")\n@dlt.expect(\"cheap\", \"price < 10\")\n\
                def orders_raw():\n    return (spark.readStream.format(\"cloudFiles\").option(\"cloudFiles.format\", \"json\")\n\
                        .option(\"cloudFiles.inferColumnTypes\", \"true\").load(\"transformations/landing\"))\n\n\
                @dlt.table\ndef orders():\n    return dlt.read_stream(\"orders_raw\").select(\"id\", \"price\")\n";
    let dir = project(&[
        ("orders.py", file),
        ("landing/a.json", "{\"id\": 1, \"price\": 5}\n{\"id\": null, \"price\": 7}\n{\"id\": 3, \"price\": 12}\n"),
    ]);
    let settings = serde_json::json!({
        "name": "orders", "storage": "store", "target": "shop",
        "libraries": [{"file": {"path": "transformations/orders.py"}}]
    });
    std::fs::write(dir.path().join("settings.json"), settings.to_string()).unwrap();
    let o = thund(dir.path(), &["run", "-p", "settings.json"]);
    assert!(o.status.success(), "{}", text(&o));
    let has = |out: &str, expectation: &str, passed: &str| {
        out.lines().any(|l| l.contains("orders_raw") && l.contains(expectation) && l.contains(passed))
    };
    let out = text(&o);
    assert!(has(&out, "has_id", "2/3") && has(&out, "cheap", "2/3"), "{out}");
    std::fs::write(dir.path().join("transformations/landing/b.json"), "{\"id\": 4, \"price\": 1}\n").unwrap();
    let o = thund(dir.path(), &["run", "-p", "settings.json"]);
    let out = text(&o);
    assert!(o.status.success() && has(&out, "has_id", "1/1") && has(&out, "cheap", "1/1"), "{out}");
    let o = thund(
        dir.path(),
        &["query", "-p", "settings.json", "SELECT id, price FROM orders ORDER BY id", "--format", "csv"],
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout), "id,price\n1,5\n3,12\n4,1\n", "{}", text(&o));
}

/// A `schema=` given as a `StructType` is the table's schema, as its DDL would be: nested and
/// non-null fields included.
#[test]
fn a_structtype_schema_is_the_tables_schema() {
    let dir = project(&[(
        "a.py",
        &format!(
            "{HEADER}from pyspark.sql.types import *\n\n\
             SCHEMA = StructType([StructField(\"id\", LongType(), False), StructField(\"tags\", ArrayType(StringType())),\n    \
             StructField(\"amount\", DecimalType(10, 2)), StructField(\"meta\", StructType([StructField(\"k\", StringType())]))])\n\n\n\
             @dp.table(schema=SCHEMA)\ndef events():\n    return spark.readStream.format(\"json\").schema(SCHEMA).load(\"data\")\n"
        ),
    )]);
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::write(
        dir.path().join("data/a.json"),
        "{\"id\": 1, \"tags\": [\"x\", \"y\"], \"amount\": 2.5, \"meta\": {\"k\": \"v\"}}\n{\"id\": 2}\n",
    )
    .unwrap();
    let o = thund(dir.path(), &["graph", "--format", "sdp"]);
    assert!(o.status.success(), "{}", text(&o));
    let graph: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        graph["outputs"][0]["table_details"]["schema"],
        "id BIGINT NOT NULL, tags ARRAY<STRING>, amount DECIMAL(10,2), meta STRUCT<`k`: STRING>",
        "{graph}"
    );
    let o = thund(dir.path(), &["run"]);
    assert!(o.status.success(), "{}", text(&o));
    let sql = "SELECT id, tags[1] AS second_tag, amount * 2 AS twice, meta.k AS k FROM events ORDER BY id";
    let o = thund(dir.path(), &["query", sql, "--format", "csv"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "id,second_tag,twice,k\n1,y,5.00,v\n2,,,\n");
}

fn csv_of(dir: &Path, sql: &str) -> String {
    let o = thund(dir, &["query", sql, "--format", "csv"]);
    assert!(o.status.success(), "{sql}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Python datasets take part in everything a run does with SQL ones: a dry run writes nothing,
/// a selection refreshes only what it names, a full refresh reprocesses the whole input once,
/// and the event log names their Python file and line.
#[test]
fn python_datasets_refresh_by_selection_fully_and_in_the_event_log() {
    let dir = project(&[(
        "a.py",
        &format!(
            "{HEADER}\n@dp.table\ndef raw():\n    return spark.readStream.format(\"json\").schema(\"id INT, v INT\").load(\"in\")\n\n\n\
             @dp.materialized_view\ndef total():\n    return spark.read.table(\"raw\").agg(F.count(\"*\").alias(\"n\"), F.sum(\"v\").alias(\"s\"))\n"
        ),
    )]);
    let batch = |name: &str, ids: std::ops::Range<i32>| {
        std::fs::create_dir_all(dir.path().join("in")).unwrap();
        let rows: String = ids.map(|i| format!("{{\"id\": {i}, \"v\": {}}}\n", i * 10)).collect();
        std::fs::write(dir.path().join("in").join(name), rows).unwrap();
    };
    batch("a.json", 1..4);
    let o = thund(dir.path(), &["dry-run"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!dir.path().join("store").exists(), "a dry run wrote {}", dir.path().join("store").display());

    let o = thund(dir.path(), &["run"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(csv_of(dir.path(), "SELECT n, s FROM total"), "n,s\n3,60\n");

    batch("b.json", 4..6);
    let o = thund(dir.path(), &["run", "--refresh", "total"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(csv_of(dir.path(), "SELECT count(*) AS n FROM raw"), "n\n3\n", "raw was not selected");
    let o = thund(dir.path(), &["run", "--refresh", "raw+"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(csv_of(dir.path(), "SELECT n, s FROM total"), "n,s\n5,150\n");

    let o = thund(dir.path(), &["run", "--full-refresh", "raw"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(csv_of(dir.path(), "SELECT count(*) AS n, count(DISTINCT id) AS ids FROM raw"), "n,ids\n5,5\n");

    let o = thund(dir.path(), &["events", "--dataset", "total", "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    let events = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(!events.is_empty() && events.contains("transformations/a.py:12"), "{events}");
}

/// A grouping column keeps its qualifier after the aggregation, as on Spark: `groupBy("r.k")`
/// is read as `r.k` by a filter, a sort, a limit and a select after it (the rows are Spark
/// 4.1.4's for the same DataFrames).
#[test]
fn a_grouping_column_keeps_its_qualifier_after_the_aggregation() {
    let dir = project(&[(
        "q.py",
        &format!(
            "{HEADER}\n@dp.materialized_view\ndef rides():\n    \
             return spark.sql(\"SELECT * FROM VALUES (1, 10), (1, 20), (2, 5), (3, 7) AS t(k, km)\")\n\n\
             @dp.materialized_view\ndef zones():\n    return spark.sql(\"SELECT * FROM VALUES (1, 'a'), (2, 'b') AS t(k, name)\")\n\n\
             @dp.materialized_view\ndef joined():\n    r = spark.read.table(\"rides\").alias(\"r\")\n    \
             z = spark.read.table(\"zones\").alias(\"z\")\n    \
             return (r.join(z, F.col(\"r.k\") == F.col(\"z.k\")).groupBy(\"r.k\").agg(F.sum(\"r.km\").alias(\"km\"))\n        \
             .where(F.col(\"r.k\") > 1).orderBy(\"r.k\").select(\"r.k\", \"km\"))\n\n\
             @dp.materialized_view\ndef counted():\n    r = spark.read.table(\"rides\").alias(\"r\")\n    \
             return (r.groupBy(\"r.k\").agg(F.count(\"*\").alias(\"n\")).orderBy(F.col(\"r.k\").desc()).limit(2)\n        \
             .select(F.col(\"r.k\").alias(\"key\"), \"n\"))\n"
        ),
    )]);
    let o = thund(dir.path(), &["run"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = thund(dir.path(), &["query", "SELECT * FROM joined", "--format", "csv"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "k,km\n2,5\n", "{}", text(&o));
    let o = thund(dir.path(), &["query", "SELECT * FROM counted ORDER BY key DESC", "--format", "csv"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "key,n\n3,1\n2,1\n", "{}", text(&o));
}
