//! The live client against a real Spark Connect server: the tests are in `suite.rs`. They need
//! the `spark` feature (the client itself); without it this target fails with the command that
//! runs it, instead of compiling to nothing and passing.

#[cfg(feature = "spark")]
mod suite;

#[cfg(not(feature = "spark"))]
#[test]
fn needs_the_spark_feature() {
    panic!("the live client's tests need the `spark` feature: cargo nextest run -p knut-pipelines --features spark");
}
