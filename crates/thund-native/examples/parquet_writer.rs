//! How fast the Parquet writer encodes a table's rows under different writer settings.
//!
//!     cargo build --release --workspace --examples
//!     target/release/examples/parquet_writer FILE.parquet [REPS]
//!
//! Loads the file's rows into memory in 8,192-row batches (as a query hands them to the Delta
//! writer), then encodes them into memory once per setting, `REPS` times (default 5), on one
//! thread, and prints the fastest time and the encoded size. No I/O and no other work runs, so
//! the numbers are the encoder's alone and comparable from one setting to the next.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::time::Instant;

use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::Compression;
use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesBuilder};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: parquet_writer FILE.parquet [REPS]");
        std::process::exit(2);
    };
    let reps: usize = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(5);
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let reader = ParquetRecordBatchReaderBuilder::try_new(file).unwrap().with_batch_size(8192).build().unwrap();
    let batches: Vec<_> = reader.map(|b| b.unwrap()).collect();
    let schema = batches[0].schema();
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    println!("{rows} rows, {} columns, {} batches", schema.fields().len(), batches.len());

    // delta-rs's defaults, then one change at a time; Þund writes with `thund` (write.rs).
    let base = || WriterProperties::builder().set_compression(Compression::SNAPPY);
    let variants: Vec<(&str, WriterPropertiesBuilder)> = vec![
        ("delta-rs default", base()),
        ("thund (dictionary page 128 KiB)", base().set_dictionary_page_size_limit(128 * 1024)),
        ("dictionary page 256 KiB", base().set_dictionary_page_size_limit(256 * 1024)),
        ("dictionary page 32 KiB", base().set_dictionary_page_size_limit(32 * 1024)),
        ("no dictionary", base().set_dictionary_enabled(false)),
        ("chunk statistics only", base().set_statistics_enabled(EnabledStatistics::Chunk)),
        ("write batch 8192", base().set_write_batch_size(8192)),
        ("lz4_raw", base().set_compression(Compression::LZ4_RAW)),
        ("uncompressed", base().set_compression(Compression::UNCOMPRESSED)),
    ];
    for (name, props) in variants {
        let props = props.build();
        let mut best = f64::MAX;
        let mut size = 0;
        for _ in 0..reps {
            let started = Instant::now();
            let mut out = Vec::with_capacity(256 << 20);
            let mut w = ArrowWriter::try_new(&mut out, schema.clone(), Some(props.clone())).unwrap();
            for b in &batches {
                w.write(b).unwrap();
            }
            w.close().unwrap();
            best = best.min(started.elapsed().as_secs_f64());
            size = out.len();
        }
        println!("{name:<32} {:>8.0} ms {:>8.1} MiB", best * 1000.0, size as f64 / (1 << 20) as f64);
    }
}
