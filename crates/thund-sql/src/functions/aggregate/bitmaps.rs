//! Spark's bitmap aggregates: `bitmap_construct_agg`, `bitmap_or_agg` and `bitmap_and_agg`.
//!
//! A bitmap is Spark's fixed 4,096 bytes (32,768 bits; bit `p` is bit `p % 8` of byte `p / 8`).
//! `bitmap_construct_agg(p)` sets the bit of each position (a position outside the bitmap
//! fails, in either mode, as Spark's `INVALID_BITMAP_POSITION`); `bitmap_or_agg(b)` ORs the
//! bitmaps given, each read up to its length; `bitmap_and_agg(b)` ANDs them, a shorter one
//! counting as zeros past its end. NULLs are skipped, and a group without values is the empty
//! bitmap (all ones for AND), never NULL: each was read off Spark 4.1.4. The scalar companions
//! (`bitmap_bit_position`, `bitmap_bucket_number`, `bitmap_count`) are `datafusion-spark`'s.

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray};
use arrow::datatypes::{DataType, Field, FieldRef, Int64Type};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

/// Spark's bitmap size in bytes.
const BYTES: usize = 4096;

pub(crate) fn register(ctx: &SessionContext) {
    for kind in [Kind::Construct, Kind::Or, Kind::And] {
        ctx.register_udaf(AggregateUDF::from(BitmapAggregate {
            kind,
            signature: Signature::any(1, Volatility::Immutable),
        }));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Construct,
    Or,
    And,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct BitmapAggregate {
    kind: Kind,
    signature: Signature,
}

impl AggregateUDFImpl for BitmapAggregate {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Construct => "bitmap_construct_agg",
            Kind::Or => "bitmap_or_agg",
            Kind::And => "bitmap_and_agg",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let t = &args[0];
        let fits = match self.kind {
            Kind::Construct => t.is_integer() || t == &DataType::Null,
            Kind::Or | Kind::And => crate::functions::binary::is_bytes(t) || t == &DataType::Null,
        };
        if !fits {
            return plan_err!(
                "{} of {} runs on the Spark backend (it takes {} here)",
                self.name(),
                crate::types::spark_type_name(t),
                if self.kind == Kind::Construct { "integer positions" } else { "BINARY bitmaps" }
            );
        }
        Ok(DataType::Binary)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(format_state_name(args.name, "bitmap"), DataType::Binary, false))])
    }

    fn accumulator(&self, _: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let fill = if self.kind == Kind::And { 0xFF } else { 0 };
        Ok(Box::new(Bitmap { kind: self.kind, bits: vec![fill; BYTES] }))
    }
}

#[derive(Debug)]
struct Bitmap {
    kind: Kind,
    bits: Vec<u8>,
}

impl Bitmap {
    /// ORs or ANDs each bitmap of `values` into this one.
    fn combine(&mut self, values: &ArrayRef, and: bool) -> Result<()> {
        let bytes = arrow::compute::cast(values, &DataType::Binary)?;
        for b in bytes.as_binary::<i32>().iter().flatten() {
            if and {
                let (head, tail) = self.bits.split_at_mut(b.len().min(BYTES));
                head.iter_mut().zip(b).for_each(|(x, y)| *x &= y);
                tail.fill(0);
            } else {
                self.bits.iter_mut().zip(b).for_each(|(x, y)| *x |= y);
            }
        }
        Ok(())
    }
}

impl Accumulator for Bitmap {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        match self.kind {
            Kind::Construct => {
                let positions = arrow::compute::cast(&values[0], &DataType::Int64)?;
                for p in positions.as_primitive::<Int64Type>().iter().flatten() {
                    if !(0..(BYTES as i64 * 8)).contains(&p) {
                        return exec_err!(
                            "[INVALID_BITMAP_POSITION] the 0-indexed bitmap position {p} is out of bounds: the bitmap \
                             has 32768 bits (4096 bytes)"
                        );
                    }
                    self.bits[(p / 8) as usize] |= 1 << (p % 8);
                }
                Ok(())
            }
            Kind::Or => self.combine(&values[0], false),
            Kind::And => self.combine(&values[0], true),
        }
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.combine(&states[0], self.kind == Kind::And)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Binary(Some(self.bits.clone()))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Binary(Some(self.bits.clone())))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.bits.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{BinaryArray, Int64Array};

    fn run(kind: Kind, values: ArrayRef) -> Vec<u8> {
        let fill = if kind == Kind::And { 0xFF } else { 0 };
        let mut b = Bitmap { kind, bits: vec![fill; BYTES] };
        b.update_batch(&[values]).unwrap();
        match b.evaluate().unwrap() {
            ScalarValue::Binary(Some(v)) => v,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bitmaps_are_built_and_combined_as_sparks() {
        // Each answer as Spark 4.1.4 gives it (the first bytes of the 4,096).
        let positions: ArrayRef = Arc::new(Int64Array::from(vec![Some(0), Some(9), None]));
        assert_eq!(&run(Kind::Construct, positions)[..3], [0x01, 0x02, 0x00]);
        let or: ArrayRef = Arc::new(BinaryArray::from(vec![Some(&[0x01u8, 0x02, 0xFF, 0x0A][..]), Some(&[0x10][..])]));
        assert_eq!(&run(Kind::Or, or)[..3], [0x11, 0x02, 0xFF]);
        let and: ArrayRef = Arc::new(BinaryArray::from(vec![Some(&[0xFFu8][..]), None, Some(&[0xF0][..])]));
        let bits = run(Kind::And, and);
        assert_eq!((bits[0], bits[1], bits.len()), (0xF0, 0, BYTES));
        let outside: ArrayRef = Arc::new(Int64Array::from(vec![40000]));
        let mut b = Bitmap { kind: Kind::Construct, bits: vec![0; BYTES] };
        assert!(b.update_batch(&[outside]).unwrap_err().to_string().contains("INVALID_BITMAP_POSITION"));
    }
}
