//! Storage: the layout under a pipeline's `storage` root (`storage`), Delta tables — opening
//! them, shaping a query's rows to fit one, and the commits a flow makes (`table`) — and the
//! Parquet writers behind those commits (`write`). Every provider of a Delta table a query reads
//! is `filtered`: delta-rs's scan claims filters it does not apply. Below DataFusion: a table's
//! data files read directly, by key or by row position (`keyscan`), the deletion vectors that
//! mark rows of them deleted (`deletion`), and what a table gained and lost between two versions
//! (`changes`).

pub(crate) mod changes;
pub(crate) mod deletion;
pub(crate) mod filtered;
pub(crate) mod keyscan;
pub(crate) mod storage;
pub(crate) mod table;
pub(crate) mod write;

use arrow::datatypes::{DataType, TimeUnit};

use thund_sql::spark_timestamp;

/// The type a column is stored as in Delta: timestamps become µs UTC (Spark's session zone is
/// UTC here), view and large variants their plain forms, unsigned integers the next signed width.
/// `None` when the type is already storable.
pub(crate) fn delta_storable(dt: &DataType) -> Option<DataType> {
    Some(match dt {
        DataType::Timestamp(TimeUnit::Microsecond, Some(tz)) if tz.as_ref() == "UTC" => return None,
        DataType::Timestamp(..) => spark_timestamp(),
        DataType::Utf8View | DataType::LargeUtf8 => DataType::Utf8,
        DataType::BinaryView | DataType::LargeBinary => DataType::Binary,
        DataType::UInt8 => DataType::Int16,
        DataType::UInt16 => DataType::Int32,
        DataType::UInt32 => DataType::Int64,
        DataType::UInt64 => DataType::Decimal128(20, 0),
        DataType::Float16 => DataType::Float32,
        DataType::Date64 => DataType::Date32,
        DataType::Null => DataType::Utf8,
        _ => return None,
    })
}

/// Characters Delta does not allow in column names (without column mapping).
pub(crate) const INVALID_COLUMN_CHARS: &[char] = &[' ', ',', ';', '{', '}', '(', ')', '\n', '\t', '='];
