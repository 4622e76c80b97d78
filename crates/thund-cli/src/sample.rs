//! `thund init`: a small sample project with its own data, runnable at once.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context};

const SPEC: &str = "name: thund_demo
# Tables, checkpoints and the event log go here (relative to this file).
storage: .thund
libraries:
  - glob:
      include: transformations/**
";

const BRONZE: &str = "-- Bronze: raw files as they arrive.
CREATE MATERIALIZED VIEW orders_raw
COMMENT 'Orders as exported, one row per order'
AS SELECT * FROM read_files('data/orders.csv', format => 'csv', header => true);

CREATE MATERIALIZED VIEW customers AS
SELECT * FROM json.`data/customers.json`;
";

const SILVER: &str = "-- Silver: typed and cleaned; the temporary view is inlined into its readers.
CREATE TEMPORARY VIEW orders_clean AS
SELECT order_id,
       customer_id,
       CAST(amount AS DECIMAL(10, 2)) AS amount,
       CAST(order_date AS DATE) AS order_date
FROM orders_raw
WHERE amount IS NOT NULL;

CREATE MATERIALIZED VIEW orders_enriched AS
SELECT o.order_id, o.customer_id, o.amount, o.order_date, c.name, c.region
FROM orders_clean o
LEFT JOIN customers c ON o.customer_id = c.customer_id;
";

const GOLD: &str = "-- Gold: what the business reads.
CREATE MATERIALIZED VIEW revenue_by_region
COMMENT 'Revenue per region and month'
AS SELECT coalesce(region, 'unknown') AS region,
          year(order_date) AS year,
          month(order_date) AS month,
          count(*) AS orders,
          sum(amount) AS revenue
FROM orders_enriched
GROUP BY coalesce(region, 'unknown'), year(order_date), month(order_date);

CREATE VIEW top_customers AS
SELECT name, count(*) AS orders, sum(amount) AS total
FROM orders_enriched
WHERE name IS NOT NULL
GROUP BY name;
";

const TESTS: &str = r#"# Unit tests of the pipeline: `thund test` runs each on the embedded engine in scratch storage,
# with the rows below in place of what the dataset reads. Rows compare in any order, over the
# columns named; `schema` types an input's columns.
tests:
  - name: orders_raw reads the orders file
    dataset: orders_raw
    inputs:
      data/orders.csv:
        - {order_id: 1, customer_id: 2, amount: 12.5, order_date: "2026-01-05"}
        - {order_id: 2, customer_id: 3, amount: null, order_date: "2026-02-01"}
    expect:
      rows:
        - {order_id: 1, customer_id: 2, amount: 12.5, order_date: "2026-01-05"}
        - {order_id: 2, customer_id: 3, amount: null, order_date: "2026-02-01"}

  - name: customers reads the customers file
    dataset: customers
    inputs:
      data/customers.json:
        - {customer_id: 1, name: Astrid, region: North}
        - {customer_id: 6, name: Frida, region: null}
    expect:
      rows:
        - {customer_id: 1, name: Astrid, region: North}
        - {customer_id: 6, name: Frida, region: null}

  - name: orders_clean drops orders without an amount and types the rest
    dataset: orders_clean
    inputs:
      orders_raw:
        - {order_id: 1, customer_id: 1, amount: 10.504, order_date: "2026-01-05"}
        - {order_id: 2, customer_id: 2, amount: null, order_date: "2026-01-06"}
    expect:
      rows:
        - {order_id: 1, customer_id: 1, amount: 10.50, order_date: "2026-01-05"}

  - name: orders_enriched adds each order's customer, and nothing for an unknown one
    dataset: orders_enriched
    inputs:
      orders_raw:
        - {order_id: 1, customer_id: 1, amount: 10.5, order_date: "2026-01-05"}
        - {order_id: 2, customer_id: 7, amount: 20.0, order_date: "2026-01-06"}
      customers:
        - {customer_id: 1, name: Astrid, region: North}
    expect:
      rows:
        - {order_id: 1, name: Astrid, region: North, amount: 10.5}
        - {order_id: 2, name: null, region: null, amount: 20.0}

  - name: revenue_by_region sums each region's orders per month
    dataset: revenue_by_region
    inputs:
      orders_enriched:
        schema: "order_date DATE, amount DECIMAL(10, 2)"
        rows:
          - {order_id: 1, customer_id: 1, amount: 10.0, order_date: "2026-01-05", name: Astrid, region: North}
          - {order_id: 2, customer_id: 4, amount: 30.0, order_date: "2026-01-20", name: Dag, region: North}
          - {order_id: 3, customer_id: 6, amount: 5.0, order_date: "2026-02-03", name: Frida, region: null}
    expect:
      rows:
        - {region: North, year: 2026, month: 1, orders: 2, revenue: 40.0}
        - {region: unknown, year: 2026, month: 2, orders: 1, revenue: 5.0}

  - name: top_customers counts and totals each named customer
    dataset: top_customers
    inputs:
      orders_enriched:
        schema: "amount DECIMAL(10, 2)"
        rows:
          - {order_id: 1, amount: 10.0, name: Astrid}
          - {order_id: 2, amount: 2.5, name: Astrid}
          - {order_id: 3, amount: 7.0, name: null}
    expect:
      rows:
        - {name: Astrid, orders: 2, total: 12.5}
"#;

/// Deterministic sample data: 60 orders over 6 customers (one unknown), two with no amount.
fn orders_csv() -> String {
    let mut s = String::from("order_id,customer_id,amount,order_date\n");
    for i in 1..=60u32 {
        let customer = i % 7 + 1; // customer 7 is not in customers.json
        let amount = if i % 29 == 0 { String::new() } else { format!("{}.{:02}", 10 + (i * 37) % 190, (i * 13) % 100) };
        let _ = writeln!(s, "{i},{customer},{amount},2026-{:02}-{:02}", i % 3 + 1, i % 28 + 1);
    }
    s
}

const CUSTOMERS: &str = r#"{"customer_id": 1, "name": "Astrid", "region": "North"}
{"customer_id": 2, "name": "Bjorn", "region": "West"}
{"customer_id": 3, "name": "Camilla", "region": "West"}
{"customer_id": 4, "name": "Dag", "region": "North"}
{"customer_id": 5, "name": "Eirik", "region": "East"}
{"customer_id": 6, "name": "Frida", "region": null}
"#;

/// Writes the sample project into `dir`, which must not hold a pipeline already.
pub(crate) fn create(dir: &Path) -> anyhow::Result<()> {
    if let Some(spec) = knut_thund::spec::SPEC_FILE_NAMES.iter().map(|n| dir.join(n)).find(|p| p.exists()) {
        bail!(crate::failure::Failure::usage(format!(
            "{} already holds a pipeline ({})",
            dir.display(),
            spec.file_name().unwrap_or_default().to_string_lossy()
        )));
    }
    let files = [
        ("spark-pipeline.yml", SPEC.to_string()),
        ("transformations/01_bronze.sql", BRONZE.to_string()),
        ("transformations/02_silver.sql", SILVER.to_string()),
        ("transformations/03_gold.sql", GOLD.to_string()),
        ("data/orders.csv", orders_csv()),
        ("data/customers.json", CUSTOMERS.to_string()),
        ("tests/sample.yml", TESTS.to_string()),
    ];
    // A file of the user's is never replaced: all of them are named before anything is written.
    let existing: Vec<&str> = files.iter().map(|(name, _)| *name).filter(|n| dir.join(n).exists()).collect();
    if !existing.is_empty() {
        bail!(crate::failure::Failure::usage(format!(
            "{} already has {}; run `thund init` in a new folder",
            dir.display(),
            existing.join(", ")
        )));
    }
    for (name, text) in files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        // `create_new`: a file that appeared since the check above is refused, not replaced.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .with_context(|| format!("writing {}", path.display()))?;
        std::io::Write::write_all(&mut file, text.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
