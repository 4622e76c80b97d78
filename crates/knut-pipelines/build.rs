//! Compiles our Spark Connect protocol subset (`proto/`) with protox, a pure-Rust protobuf
//! compiler, so no system `protoc` is needed. Only with the `spark` feature.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    #[cfg(feature = "spark")]
    {
        let fds = protox::compile(["spark_connect.proto", "google_rpc.proto"], ["proto"])?;
        // The descriptor set is kept too: the protocol drift test compares it with each target
        // pyspark wheel.
        let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
        std::fs::write(out.join("spark_connect_fds.bin"), prost::Message::encode_to_vec(&fds))?;
        // The server side serves the loopback endpoint Python definition files load against.
        tonic_prost_build::configure().build_server(true).compile_fds(fds)?;
    }
    Ok(())
}
