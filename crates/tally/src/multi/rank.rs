//! One process per GPU: the rank, world size and local device from the launcher's environment
//! (torchrun or OpenMPI), and the NCCL unique id passed from rank 0 to the others through an
//! environment variable or a file.

use crate::error::{Error, Result};
use std::path::Path;
use std::time::{Duration, Instant};

/// Where this process sits among the ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RankEnv {
    /// This process's rank, 0..world.
    pub rank: usize,
    /// How many ranks.
    pub world: usize,
    /// The CUDA device of this process (its rank on this host).
    pub local_rank: usize,
}

/// The environment variable that holds the unique id itself (256 hex digits).
pub const ID_VAR: &str = "TALLY_NCCL_ID";
/// The environment variable naming a file through which rank 0 passes the unique id.
pub const ID_FILE_VAR: &str = "TALLY_NCCL_ID_FILE";
/// The environment variable of how many seconds a rank waits for the id file (default 120).
pub const TIMEOUT_VAR: &str = "TALLY_NCCL_TIMEOUT";

impl RankEnv {
    /// Reads `RANK`, `WORLD_SIZE` and `LOCAL_RANK` (torchrun), else `OMPI_COMM_WORLD_RANK`,
    /// `OMPI_COMM_WORLD_SIZE` and `OMPI_COMM_WORLD_LOCAL_RANK` (OpenMPI), through `var`.
    /// Without a local rank the device is the rank.
    pub fn parse(var: impl Fn(&str) -> Option<String>) -> Result<RankEnv> {
        let number = |name: &str| -> Result<Option<usize>> {
            match var(name).filter(|v| !v.trim().is_empty()) {
                None => Ok(None),
                Some(v) => v
                    .trim()
                    .parse::<usize>()
                    .map(Some)
                    .map_err(|_| Error::invalid(format!("{name}={v} is not a non-negative integer"))),
            }
        };
        let schemes = [
            ("RANK", "WORLD_SIZE", "LOCAL_RANK"),
            ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
        ];
        for (rank_var, world_var, local_var) in schemes {
            let (Some(rank), Some(world)) = (number(rank_var)?, number(world_var)?) else { continue };
            if world == 0 || rank >= world {
                return Err(Error::invalid(format!("{rank_var}={rank} is not a rank of {world_var}={world}")));
            }
            let local_rank = number(local_var)?.unwrap_or(rank);
            return Ok(RankEnv { rank, world, local_rank });
        }
        Err(Error::invalid(
            "no rank in the environment: set RANK and WORLD_SIZE (and LOCAL_RANK), as torchrun does, or run under mpirun",
        ))
    }

    /// [`RankEnv::parse`] of this process's environment.
    pub fn from_env() -> Result<RankEnv> {
        RankEnv::parse(|name| std::env::var(name).ok())
    }
}

/// The unique id as 256 hex digits.
pub fn id_to_hex(id: &[u8; 128]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// The unique id from its 256 hex digits.
pub fn id_from_hex(text: &str) -> Result<[u8; 128]> {
    let text = text.trim();
    let bad = || Error::invalid(format!("an NCCL unique id is 256 hex digits, not '{}'", short(text)));
    if text.len() != 256 || !text.is_ascii() {
        return Err(bad());
    }
    let mut id = [0u8; 128];
    for (i, b) in id.iter_mut().enumerate() {
        *b = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(id)
}

fn short(text: &str) -> String {
    text.chars().take(40).collect()
}

/// Rank 0 writes `id` to `path` atomically (a temporary file in the same directory, then a
/// rename), so that a reader never sees half an id.
pub fn write_id_file(path: &Path, id: &[u8; 128]) -> Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let io = |what: &str, e: std::io::Error| Error::invalid(format!("{what} {}: {e}", path.display()));
    std::fs::write(&tmp, id_to_hex(id)).map_err(|e| io("cannot write the NCCL id file next to", e))?;
    std::fs::rename(&tmp, path).map_err(|e| io("cannot move the NCCL id file into place at", e))
}

/// Waits up to `timeout` for rank 0's id file at `path`.
pub fn wait_id_file(path: &Path, timeout: Duration) -> Result<[u8; 128]> {
    let start = Instant::now();
    loop {
        match std::fs::read_to_string(path) {
            Ok(text) => return id_from_hex(&text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::invalid(format!("cannot read the NCCL id file {}: {e}", path.display()))),
        }
        if start.elapsed() >= timeout {
            return Err(Error::invalid(format!(
                "waited {:.0} s for rank 0 to write the NCCL id file {} ({TIMEOUT_VAR} sets the wait): is rank 0 running, with the same {ID_FILE_VAR}?",
                timeout.as_secs_f64(),
                path.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The unique id this rank joins with: from [`ID_VAR`] where set; else through the file that
/// [`ID_FILE_VAR`] names (rank 0 makes the id with `make` and writes it, the others wait for it).
pub(crate) fn exchange_id(
    env: &RankEnv,
    var: impl Fn(&str) -> Option<String>,
    make: impl FnOnce() -> Result<[u8; 128]>,
) -> Result<[u8; 128]> {
    if let Some(hex) = var(ID_VAR).filter(|v| !v.is_empty()) {
        return id_from_hex(&hex);
    }
    let Some(path) = var(ID_FILE_VAR).filter(|v| !v.is_empty()) else {
        return Err(Error::invalid(format!(
            "set {ID_FILE_VAR} to a path every rank can read (rank 0 writes the NCCL unique id there), or {ID_VAR} to the id"
        )));
    };
    let path = Path::new(&path);
    if env.rank == 0 {
        let id = make()?;
        write_id_file(path, &id)?;
        return Ok(id);
    }
    let secs = var(TIMEOUT_VAR).and_then(|v| v.trim().parse::<f64>().ok()).filter(|s| *s >= 0.0).unwrap_or(120.0);
    wait_id_file(path, Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn ranks_from_torchrun_and_openmpi_variables() {
        let e = RankEnv::parse(env(&[("RANK", "3"), ("WORLD_SIZE", "4"), ("LOCAL_RANK", "1")])).unwrap();
        assert_eq!(e, RankEnv { rank: 3, world: 4, local_rank: 1 });
        let e = RankEnv::parse(env(&[("OMPI_COMM_WORLD_RANK", "1"), ("OMPI_COMM_WORLD_SIZE", "2")])).unwrap();
        assert_eq!(e, RankEnv { rank: 1, world: 2, local_rank: 1 });
        assert!(RankEnv::parse(env(&[("RANK", "2"), ("WORLD_SIZE", "2")])).is_err());
        assert!(RankEnv::parse(env(&[("RANK", "x"), ("WORLD_SIZE", "2")])).is_err());
        assert!(RankEnv::parse(env(&[])).is_err());
    }

    #[test]
    fn ids_round_trip_through_hex_and_files() {
        let id: [u8; 128] = std::array::from_fn(|i| (i * 37 + 5) as u8);
        assert_eq!(id_from_hex(&id_to_hex(&id)).unwrap(), id);
        assert!(id_from_hex("abc").is_err());
        assert!(id_from_hex(&"zz".repeat(128)).is_err());
        let dir = std::env::temp_dir().join(format!("tally-id-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("id");
        let _ = std::fs::remove_file(&path);
        let late = wait_id_file(&path, Duration::from_millis(50));
        assert!(matches!(late, Err(Error::InvalidArgument(m)) if m.contains("waited")));
        let path_s = path.display().to_string();
        let rank0 = RankEnv { rank: 0, world: 2, local_rank: 0 };
        let rank1 = RankEnv { rank: 1, world: 2, local_rank: 1 };
        let vars = env(&[(ID_FILE_VAR, &path_s), (TIMEOUT_VAR, "5")]);
        let reader = std::thread::spawn({
            let vars = env(&[(ID_FILE_VAR, &path_s), (TIMEOUT_VAR, "5")]);
            move || exchange_id(&rank1, vars, || panic!("only rank 0 makes the id"))
        });
        let made = exchange_id(&rank0, vars, || Ok(id)).unwrap();
        assert_eq!(made, id);
        assert_eq!(reader.join().unwrap().unwrap(), id);
        let direct = exchange_id(&rank1, env(&[(ID_VAR, &id_to_hex(&id))]), || unreachable!()).unwrap();
        assert_eq!(direct, id);
        assert!(exchange_id(&rank1, env(&[]), || unreachable!()).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
