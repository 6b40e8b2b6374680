//! Compiles the control-plane protocol (`proto/control.proto`) with a vendored `protoc`, so a
//! fresh machine needs no system protobuf compiler.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    // SAFETY: build scripts are single-threaded; nothing else reads the environment concurrently.
    unsafe { std::env::set_var("PROTOC", protoc) };
    println!("cargo:rerun-if-changed=proto/control.proto");
    tonic_prost_build::configure().compile_protos(&["proto/control.proto"], &["proto"])?;
    Ok(())
}
