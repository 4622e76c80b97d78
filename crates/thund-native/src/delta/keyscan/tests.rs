use super::wanted::Ids;
use super::*;
use arrow::array::{AsArray, Int32Array, Int64Array, StringArray};

#[test]
fn keys_are_found_by_value_whatever_their_width_and_null_is_a_key_like_any_other() {
    // One integer column: looked up as a number, NULL included.
    let wanted =
        Wanted::new(&[Arc::new(Int32Array::from(vec![Some(7), None, Some(7), Some(-3)])) as ArrayRef]).unwrap();
    let scanned: ArrayRef = Arc::new(Int64Array::from(vec![Some(-3), Some(8), None, Some(7)]));
    assert_eq!(wanted.ids_of(&[scanned]).unwrap(), [Some(3), None, Some(1), Some(0)]);
    // No NULL wanted: a NULL row is no key.
    let wanted = Wanted::new(&[Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef]).unwrap();
    let scanned: ArrayRef = Arc::new(Int64Array::from(vec![None, Some(2)]));
    assert_eq!(wanted.ids_of(&[scanned]).unwrap(), [None, Some(1)]);
    // Several columns: encoded rows, compared as IS NOT DISTINCT FROM.
    let keys: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec![Some("a"), Some("a"), None])),
        Arc::new(Int32Array::from(vec![Some(1), None, Some(1)])),
    ];
    let wanted = Wanted::new(&keys).unwrap();
    let scanned: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec![None, Some("a"), Some("a"), Some("b")])),
        Arc::new(Int32Array::from(vec![Some(1), Some(1), None, Some(1)])),
    ];
    assert_eq!(wanted.ids_of(&scanned).unwrap(), [Some(2), Some(0), Some(1), None]);
}

#[test]
fn integer_keys_are_found_in_every_row_that_holds_one_and_the_filter_lets_few_others_through() {
    // Scattered values (splitmix64), a tenth of them wanted, a NULL every 97 rows, and a
    // length that ends mid-way through the filter's 64-row chunks.
    let mut state = 7u64;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as i64 >> (z % 40)
    };
    let values: Vec<Option<i64>> = (0..20_011).map(|i| (i % 97 != 5).then(&mut next)).collect();
    let wanted: Vec<i64> = values.iter().flatten().step_by(10).copied().collect();
    let ids = Wanted::new(&[Arc::new(Int64Array::from(wanted.clone())) as ArrayRef]).unwrap();
    let mut got = Vec::new();
    ids.find(&[Arc::new(Int64Array::from(values.clone())) as ArrayRef], |row, id| got.push((row, id))).unwrap();
    let first = |v: i64| wanted.iter().position(|w| *w == v).unwrap() as u32;
    let expected: Vec<(usize, u32)> = values
        .iter()
        .enumerate()
        .filter_map(|(row, v)| v.filter(|v| wanted.contains(v)).map(|v| (row, first(v))))
        .collect();
    assert!(expected.len() >= wanted.len());
    assert_eq!(got, expected);

    let Ids::Integer(filter) = &ids.ids else { panic!("an integer key is looked up as a number") };
    let others: Vec<i64> = (0..100_000).map(|_| next()).filter(|v| !filter.ids.contains_key(v)).collect();
    let through = others.iter().filter(|v| filter.may_hold(**v)).count();
    assert!(through * 50 < others.len(), "{through} of {} unwanted keys passed the filter", others.len());
}

/// A file of `rows` rows (`id` = position, `name` = "n{id}") in row groups of `group` rows
/// and pages of 100 rows.
async fn file_of(dir: &std::path::Path, rows: i64, group: usize) -> (Arc<dyn ObjectStore>, Listed) {
    let ids = Int64Array::from_iter_values(0..rows);
    let names = StringArray::from_iter_values((0..rows).map(|i| format!("n{i}")));
    let batch =
        RecordBatch::try_from_iter([("id", Arc::new(ids) as ArrayRef), ("name", Arc::new(names) as _)]).unwrap();
    written(dir, &batch, group)
}

/// `batch` as a file in `dir`, in row groups of `group` rows and pages of 100 rows.
fn written(dir: &std::path::Path, batch: &RecordBatch, group: usize) -> (Arc<dyn ObjectStore>, Listed) {
    use datafusion::parquet::arrow::ArrowWriter;
    use datafusion::parquet::file::properties::WriterProperties;
    let properties = WriterProperties::builder()
        .set_max_row_group_row_count(Some(group))
        .set_data_page_row_count_limit(100)
        .set_write_batch_size(100)
        .build();
    let path = dir.join("f.parquet");
    let mut writer =
        ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), batch.schema(), Some(properties)).unwrap();
    writer.write(batch).unwrap();
    writer.close().unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(object_store::local::LocalFileSystem::new());
    let location = Path::from_filesystem_path(&path).unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    (store, Listed { path: "f.parquet".into(), location, size, vector: None, records: None })
}

#[tokio::test]
async fn a_file_read_in_parts_gives_each_position_once_whatever_its_row_groups() {
    assert_eq!(split(10, 4), [0..4, 4..8, 8..10]);
    assert_eq!(split(0, 4), vec![Range { start: 0, end: 0 }]);
    let dir = tempfile::tempdir().unwrap();
    // One row group, and row groups that parts begin and end inside of.
    for group in [10_000, 3_000, 777] {
        let (store, file) = file_of(dir.path(), 10_000, group).await;
        let opened = Opened::of(store, &file).await.unwrap();
        assert_eq!(opened.rows(), 10_000);
        let picked: RoaringTreemap = (0..10_000u64).filter(|p| p % 7 == 3 || *p == 9_999).collect();
        for size in [10_000, 5_000, 1_234, 100] {
            let (mut every, mut chosen) = (Vec::new(), Vec::new());
            for part in split(opened.rows(), size) {
                let whole = [part.clone()];
                for (pick, out) in [(Pick::Ranges(&whole), &mut every), (Pick::Positions(&picked), &mut chosen)] {
                    let batches: Vec<RecordBatch> =
                        opened.stream(&part, pick, &[0, 1]).unwrap().try_collect().await.unwrap();
                    for b in batches {
                        let ids = b.column(0).as_primitive::<arrow::datatypes::Int64Type>();
                        let names = b.column(1).as_string::<i32>();
                        for (id, name) in ids.values().iter().zip(names.iter()) {
                            assert_eq!(name, Some(format!("n{id}").as_str()));
                            out.push(*id as u64);
                        }
                    }
                }
            }
            assert_eq!(every, (0..10_000).collect::<Vec<u64>>(), "row groups of {group}, parts of {size}");
            assert_eq!(chosen, picked.iter().collect::<Vec<u64>>(), "row groups of {group}, parts of {size}");
        }
    }
}

#[tokio::test]
async fn a_scan_reads_only_the_pages_whose_bounds_may_hold_a_wanted_key_and_finds_every_one() {
    let dir = tempfile::tempdir().unwrap();
    for group in [10_000, 777] {
        let (store, file) = file_of(dir.path(), 10_000, group).await;
        let opened = Opened::of(Arc::clone(&store), &file).await.unwrap();
        let keys: ArrayRef = Arc::new(Int64Array::from(vec![4_321, 150, 9_999, 151, 20_000]));
        let wanted = Arc::new(Wanted::new(&[keys]).unwrap());
        // Pages of 100 rows (fewer where a row group ends): three hold a wanted key.
        let pages = opened.pages_holding("id", &wanted).unwrap();
        let rows: u64 = pages.iter().map(|r| r.end - r.start).sum();
        assert!(pages.iter().all(|r| r.start <= 150 && 151 < r.end || r.contains(&4_321) || r.contains(&9_999)));
        assert!((3..=300).contains(&rows), "row groups of {group}: {pages:?}");
        let columns = Arc::new(vec!["id".to_string(), "name".to_string()]);
        let found = scan_file(store, file, wanted, columns, 1, None).await.unwrap();
        assert_eq!(found.positions, [150, 151, 4_321, 9_999], "row groups of {group}");
        assert_eq!(found.keys, [Some(1), Some(3), Some(0), Some(2)]);
        let names = found.extra[0].as_string::<i32>();
        assert_eq!(names.iter().flatten().collect::<Vec<_>>(), ["n150", "n151", "n4321", "n9999"]);
    }
    // NULL wanted: bounds do not cover it, so every page is read.
    let (store, file) = file_of(dir.path(), 1_000, 1_000).await;
    let opened = Opened::of(store, &file).await.unwrap();
    let keys: ArrayRef = Arc::new(Int64Array::from(vec![Some(5), None]));
    assert!(opened.pages_holding("id", &Wanted::new(&[keys]).unwrap()).is_none());
}

#[tokio::test]
async fn unsigned_keys_above_the_signed_range_are_found_through_their_pages_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let ids = arrow::array::UInt32Array::from_iter_values((0..1_000u32).map(|i| 3_000_000_000 + i));
    let batch = RecordBatch::try_from_iter([("id", Arc::new(ids) as ArrayRef)]).unwrap();
    let (store, file) = written(dir.path(), &batch, 1_000);
    let keys: ArrayRef = Arc::new(arrow::array::UInt32Array::from(vec![3_000_000_250u32, 3_000_000_999]));
    let wanted = Arc::new(Wanted::new(&[keys]).unwrap());
    let opened = Opened::of(Arc::clone(&store), &file).await.unwrap();
    let pages = opened.pages_holding("id", &wanted).unwrap();
    assert!(pages.iter().map(|r| r.end - r.start).sum::<u64>() <= 200, "{pages:?}");
    let found = scan_file(store, file, wanted, Arc::new(vec!["id".to_string()]), 1, None).await.unwrap();
    assert_eq!(found.positions, [250, 999]);
}
