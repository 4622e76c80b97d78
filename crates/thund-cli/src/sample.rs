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
pub fn create(dir: &Path) -> anyhow::Result<()> {
    if dir.join("spark-pipeline.yml").exists() {
        bail!(crate::failure::Failure::usage(format!("{} already holds a pipeline", dir.display())));
    }
    let files = [
        ("spark-pipeline.yml", SPEC.to_string()),
        ("transformations/01_bronze.sql", BRONZE.to_string()),
        ("transformations/02_silver.sql", SILVER.to_string()),
        ("transformations/03_gold.sql", GOLD.to_string()),
        ("data/orders.csv", orders_csv()),
        ("data/customers.json", CUSTOMERS.to_string()),
    ];
    for (name, text) in files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
