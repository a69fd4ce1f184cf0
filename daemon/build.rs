//! Generates the gRPC server of daemon/proto/cuzk/v1/proving.proto (tonic, prost) with protoc
//! from protoc-bin-vendored, and writes the descriptor sets of that file and of Curio's copy
//! (tests/fixtures/curio) for the contract test (tests/proto_contract.rs).

use std::path::PathBuf;
use std::process::Command;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    // SAFETY: build scripts are single-threaded; tonic-prost-build reads PROTOC.
    unsafe { std::env::set_var("PROTOC", &protoc) };
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);

    tonic_prost_build::configure()
        .build_client(false)
        .file_descriptor_set_path(out_dir.join("ours.descriptor.bin"))
        .compile_protos(&["proto/cuzk/v1/proving.proto"], &["proto"])?;

    let status = Command::new(&protoc)
        .arg("--proto_path=tests/fixtures/curio")
        .arg(format!("--descriptor_set_out={}", out_dir.join("curio.descriptor.bin").display()))
        .arg("tests/fixtures/curio/proving.proto")
        .status()?;
    if !status.success() {
        return Err(format!("protoc failed on Curio's proving.proto: {status}").into());
    }
    println!("cargo:rerun-if-changed=proto/cuzk/v1/proving.proto");
    println!("cargo:rerun-if-changed=tests/fixtures/curio/proving.proto");
    Ok(())
}
