//! Pieces every integration test binary shares: finding the GPU (or saying why a GPU test
//! skips), and running the `tally` binary as a user does.
#![allow(dead_code)] // each test binary uses its own subset

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Arc;
use tally::device::CudaDevice;
use tally::Backend;

/// The CUDA device, or None with a line on stderr; with TALLY_REQUIRE_GPU=1 no GPU is a failure,
/// so that a GPU host cannot pass these tests by skipping them.
pub fn gpu() -> Option<Arc<CudaDevice>> {
    match Backend::cuda() {
        Ok(Backend::Cuda(d)) => Some(d),
        Ok(Backend::Cpu) => unreachable!(),
        Err(e) => {
            if std::env::var("TALLY_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("TALLY_REQUIRE_GPU=1 but no GPU: {e}");
            }
            eprintln!("skipping GPU test: {e}");
            None
        }
    }
}

/// The binary cargo built; where the test binary was copied to another machine without it,
/// `$TALLY_BIN` or the bundle's `.gpu/bin/tally`.
pub fn tally_bin() -> PathBuf {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_tally"));
    if built.exists() {
        return built;
    }
    std::env::var_os("TALLY_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(".gpu/bin/tally"))
}

pub fn tally(args: &[&str]) -> Output {
    Command::new(tally_bin()).args(args).output().expect("run tally")
}

/// A path `name` in a directory of this test process's own, `tag` telling binaries apart.
pub fn tmp_in(tag: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tally-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
