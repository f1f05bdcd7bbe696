//! Pieces every integration test of the command-line tool shares: running the `tally` binary as
//! a user does, and a scratch directory per test process.
#![allow(dead_code)] // each test binary uses its own subset

use std::path::PathBuf;
use std::process::{Command, Output};

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
