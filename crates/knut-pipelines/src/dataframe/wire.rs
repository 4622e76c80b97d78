//! What of a serialized relation this crate's protocol subset does not declare, named in
//! pyspark's words: read from the wire format, since decoding drops unknown fields.

/// pyspark's names of the relation kinds this subset does not declare, by `Relation` field.
const UNDECLARED: &[(u64, &str)] = &[
    (11, "createDataFrame"),
    (12, "sample"),
    (17, "repartition / coalesce"),
    (20, "show"),
    (22, "tail"),
    (24, "hint"),
    (25, "unpivot / melt"),
    (26, "to(schema)"),
    (27, "repartition by expressions"),
    (28, "mapInPandas / mapInArrow"),
    (29, "observe"),
    (30, "from_json / from_csv on a DataFrame"),
    (31, "applyInPandas"),
    (32, "cogroup().applyInPandas"),
    (33, "withWatermark"),
    (34, "applyInPandasWithState"),
    (36, "a cached local relation"),
    (37, "a cached remote relation"),
    (38, "a Python UDTF"),
    (39, "an as-of join"),
    (40, "a Python data source"),
    (41, "a relation with subqueries"),
    (42, "transpose"),
    (43, "a table-valued function"),
    (44, "a lateral join"),
    (45, "a chunked local relation"),
    (92, "replace"),
    (100, "summary"),
    (101, "crosstab"),
    (102, "describe"),
    (103, "cov"),
    (104, "corr"),
    (105, "approxQuantile"),
    (106, "freqItems"),
    (107, "sampleBy"),
];

/// The first relation kind in `bytes` (a serialized `Relation`) that this subset does not
/// declare, found by walking the wire format through the inputs of the kinds it does.
pub(super) fn unknown_operation(bytes: &[u8]) -> Option<&'static str> {
    // Which fields of each declared kind hold input relations.
    const INPUTS: &[(u64, &[u64])] = &[
        (3, &[1]),
        (4, &[1]),
        (5, &[1, 2]),
        (6, &[1, 2]),
        (7, &[1]),
        (8, &[1]),
        (9, &[1]),
        (13, &[1]),
        (14, &[1]),
        (16, &[1]),
        (18, &[1]),
        (19, &[1]),
        (21, &[1]),
        (23, &[1]),
        (90, &[1]),
        (91, &[1]),
    ];
    for (field, payload) in length_delimited_fields(bytes) {
        if let Some((_, name)) = UNDECLARED.iter().find(|(f, _)| *f == field) {
            return Some(name);
        }
        if let Some((_, inputs)) = INPUTS.iter().find(|(f, _)| *f == field) {
            for (f, child) in length_delimited_fields(payload) {
                if inputs.contains(&f) {
                    if let Some(name) = unknown_operation(child) {
                        return Some(name);
                    }
                }
            }
        }
    }
    None
}

/// The length-delimited fields of a protobuf message, as (field number, payload); other wire
/// types are skipped. A malformed message ends the list.
fn length_delimited_fields(mut bytes: &[u8]) -> Vec<(u64, &[u8])> {
    fn varint(bytes: &mut &[u8]) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = bytes.split_first()?;
            *bytes = rest;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let Some(key) = varint(&mut bytes) else { break };
        match key & 7 {
            0 => {
                if varint(&mut bytes).is_none() {
                    break;
                }
            }
            1 if bytes.len() >= 8 => bytes = &bytes[8..],
            5 if bytes.len() >= 4 => bytes = &bytes[4..],
            2 => {
                let Some(len) = varint(&mut bytes).and_then(|l| usize::try_from(l).ok()) else { break };
                if len > bytes.len() {
                    break;
                }
                out.push((key >> 3, &bytes[..len]));
                bytes = &bytes[len..];
            }
            _ => break,
        }
    }
    out
}
