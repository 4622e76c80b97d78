//! Generated protobuf and gRPC code for our Spark Connect subset (`proto/*.proto`), quarantined
//! here: the rest of the crate converts to and from these types in `convert.rs` only.
#![allow(missing_docs, clippy::all, clippy::pedantic)]

/// `package spark.connect`.
pub mod spark {
    pub mod connect {
        include!(concat!(env!("OUT_DIR"), "/spark.connect.rs"));
    }
}

/// `package google.rpc`: the status details a failed call carries.
pub mod google {
    pub mod rpc {
        include!(concat!(env!("OUT_DIR"), "/google.rpc.rs"));
    }
}

/// The compiled descriptor set of our subset, for the protocol drift test.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/spark_connect_fds.bin"));
