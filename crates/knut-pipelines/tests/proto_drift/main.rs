//! Protocol drift against the pyspark wheels: the tests are in `suite.rs`. They read the
//! protocol subset compiled by the `spark` feature; without it this target fails with the command
//! that runs it, instead of compiling to nothing and passing.

#[cfg(feature = "spark")]
mod suite;

#[cfg(not(feature = "spark"))]
#[test]
fn needs_the_spark_feature() {
    panic!("the protocol drift test needs the `spark` feature: cargo nextest run -p knut-pipelines --features spark");
}
