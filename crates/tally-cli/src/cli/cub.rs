//! CUB beside tally: build the project's own small harness (`cub_peer.cu`) with nvcc at run
//! time, where nvcc is installed, and run it on the same inputs. The executable is kept in the
//! kernel cache directory, keyed by the source, the architecture and nvcc's version, so only the
//! first run pays for the (slow) CUB compile.

use std::path::{Path, PathBuf};
use std::process::Command;
use tally::device::cache;

const SOURCE: &str = include_str!("cub_peer.cu");

/// nvcc on PATH, else the default CUDA install's.
pub(crate) fn find_nvcc() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("nvcc"))
        .find(|p| p.is_file());
    on_path.or_else(|| Some(PathBuf::from("/usr/local/cuda/bin/nvcc")).filter(|p| p.is_file()))
}

fn tail(bytes: &[u8], lines: usize) -> String {
    let s = String::from_utf8_lossy(bytes);
    let v: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    v[v.len().saturating_sub(lines)..].join(" | ")
}

/// The harness built for compute capability `cc`, from the cache or compiled now.
pub(crate) fn build(cc: (i32, i32)) -> Result<PathBuf, String> {
    let nvcc = find_nvcc().ok_or("nvcc was not found (PATH, /usr/local/cuda/bin): no CUB column")?;
    let arch = format!("sm_{}{}", cc.0, cc.1);
    let version = Command::new(&nvcc).arg("--version").output().map_err(|e| format!("{}: {e}", nvcc.display()))?;
    let key = format!("{}|{}|{}", SOURCE, arch, String::from_utf8_lossy(&version.stdout));
    let dir = cache::default_dir().unwrap_or_else(std::env::temp_dir).join("cub-peer");
    let exe = dir.join(format!("tally-cub-peer-{:016x}", cache::fnv1a(key.as_bytes())));
    if exe.is_file() {
        return Ok(exe);
    }
    let work = std::env::temp_dir().join(format!("tally-cub-peer-build-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let result = compile(&nvcc, &arch, &work).and_then(|built| {
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        // Copy beside the final name, then rename: a concurrent run never sees half a file.
        let partial = dir.join(format!("partial-{}", std::process::id()));
        std::fs::copy(&built, &partial).map_err(|e| format!("{}: {e}", partial.display()))?;
        std::fs::rename(&partial, &exe).map_err(|e| format!("{}: {e}", exe.display()))?;
        Ok(exe)
    });
    let _ = std::fs::remove_dir_all(&work);
    result
}

fn compile(nvcc: &Path, arch: &str, work: &Path) -> Result<PathBuf, String> {
    let src = work.join("cub_peer.cu");
    let out = work.join("tally-cub-peer");
    std::fs::write(&src, SOURCE).map_err(|e| format!("{}: {e}", src.display()))?;
    let o = Command::new(nvcc)
        .args(["-O3", "-std=c++17", &format!("-arch={arch}"), "-o"])
        .arg(&out)
        .arg(&src)
        .output()
        .map_err(|e| format!("{}: {e}", nvcc.display()))?;
    if !o.status.success() {
        return Err(format!("nvcc could not build the CUB harness for {arch}: {}", tail(&o.stderr, 3)));
    }
    Ok(out)
}

/// One measured case: (bins, hot threshold, median ms, FNV-1a of the counts).
pub(crate) type CubCase = (u32, u64, f64, u64);

/// Runs the harness on `cases` (bins, hot threshold).
pub(crate) fn run(
    exe: &Path,
    samples: usize,
    seed: u64,
    reps: usize,
    cases: &[(u32, u64)],
) -> Result<Vec<CubCase>, String> {
    let o = Command::new(exe)
        .arg(samples.to_string())
        .arg(seed.to_string())
        .arg(reps.to_string())
        .args(cases.iter().map(|(b, t)| format!("{b}:{t}")))
        .output()
        .map_err(|e| format!("{}: {e}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&o.stdout);
    if let Some(err) = stdout.lines().find(|l| l.starts_with("error")) {
        return Err(format!("the CUB harness failed: {err}"));
    }
    if !o.status.success() {
        return Err(format!("the CUB harness exited with {}: {}", o.status, tail(&o.stderr, 3)));
    }
    let parse = |l: &str| -> Option<CubCase> {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() != 5 || f[0] != "case" {
            return None;
        }
        Some((f[1].parse().ok()?, f[2].parse().ok()?, f[3].parse().ok()?, u64::from_str_radix(f[4], 16).ok()?))
    };
    let rows: Vec<CubCase> = stdout.lines().filter_map(parse).collect();
    if rows.len() != cases.len() {
        return Err(format!("the CUB harness reported {} of {} cases", rows.len(), cases.len()));
    }
    Ok(rows)
}
