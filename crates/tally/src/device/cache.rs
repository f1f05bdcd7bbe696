//! The on-disk kernel cache. An entry is keyed by everything that could change the machine code
//! (source and headers, options, architecture, NVRTC version, tally version) and stores that key
//! in full beside a checksum of the image: a corrupt, truncated or stale entry is recompiled,
//! never trusted.

use super::nvrtc::Image;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"TALLYK01";

/// FNV-1a, 64 bits: stable across runs and toolchains (std's hasher promises neither).
pub fn fnv1a(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The platform's cache directory: `$XDG_CACHE_HOME/tally`, else `~/.cache/tally`; None if
/// neither is set. (The CLI also honours `TALLY_CACHE_DIR`.)
pub fn default_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("tally"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("tally"))
}

/// Compiled kernel images on disk, one file per key; a cache without a directory stores nothing.
#[derive(Clone, Debug)]
pub struct KernelCache {
    dir: Option<PathBuf>,
}

impl KernelCache {
    /// A cache in `dir` (created on the first store); None: a cache that never hits.
    pub fn new(dir: Option<PathBuf>) -> Self {
        KernelCache { dir }
    }

    /// The directory entries are kept in, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    fn path(&self, key: &str) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(format!("{:016x}.bin", fnv1a(key.as_bytes()))))
    }

    /// The cached image for `key`, if an intact entry for exactly this key exists.
    pub fn load(&self, key: &str) -> Option<Image> {
        let data = std::fs::read(self.path(key)?).ok()?;
        decode(&data, key)
    }

    /// Best effort: a cache that cannot be written only costs a compile next time.
    pub fn store(&self, key: &str, image: &Image) {
        let Some(path) = self.path(key) else { return };
        let Some(dir) = path.parent() else { return };
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
        let tmp = dir.join(format!(".{}.{}.tmp", std::process::id(), fnv1a(key.as_bytes())));
        if std::fs::write(&tmp, encode(key, image)).is_ok() {
            let _ = std::fs::rename(&tmp, &path);
        } else {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

fn encode(key: &str, image: &Image) -> Vec<u8> {
    let mut out = Vec::with_capacity(image.bytes.len() + key.len() + 64);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(key.len() as u64).to_le_bytes());
    out.extend_from_slice(key.as_bytes());
    out.push(image.cubin as u8);
    out.extend_from_slice(&(image.bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(&image.bytes);
    out.extend_from_slice(&fnv1a(&image.bytes).to_le_bytes());
    out
}

fn decode(data: &[u8], key: &str) -> Option<Image> {
    let mut rest = data.strip_prefix(MAGIC.as_slice())?;
    let mut take = |n: usize| -> Option<&[u8]> {
        if rest.len() < n {
            return None;
        }
        let (a, b) = rest.split_at(n);
        rest = b;
        Some(a)
    };
    let key_len = u64::from_le_bytes(take(8)?.try_into().ok()?) as usize;
    if take(key_len)? != key.as_bytes() {
        return None; // another key that hashed alike: stale for us
    }
    let cubin = take(1)?[0] == 1;
    let len = u64::from_le_bytes(take(8)?.try_into().ok()?) as usize;
    let bytes = take(len)?.to_vec();
    let sum = u64::from_le_bytes(take(8)?.try_into().ok()?);
    if sum != fnv1a(&bytes) || !rest.is_empty() {
        return None;
    }
    Some(Image { bytes, cubin })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tally-cache-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn round_trip_and_rejects_damage() {
        let dir = tmpdir("rt");
        let cache = KernelCache::new(Some(dir.clone()));
        let img = Image { bytes: vec![1, 2, 3, 4, 5], cubin: true };
        assert_eq!(cache.load("k1"), None);
        cache.store("k1", &img);
        assert_eq!(cache.load("k1"), Some(img.clone()));
        // A different key never reads this entry.
        assert_eq!(cache.load("k2"), None);
        // Flip one byte of the image: the checksum catches it.
        let path = cache.path("k1").unwrap();
        let mut raw = std::fs::read(&path).unwrap();
        let n = raw.len();
        raw[n - 10] ^= 0xff;
        std::fs::write(&path, &raw).unwrap();
        assert_eq!(cache.load("k1"), None);
        // Truncation too.
        std::fs::write(&path, &raw[..n / 2]).unwrap();
        assert_eq!(cache.load("k1"), None);
        // Garbage.
        std::fs::write(&path, b"not a cache entry").unwrap();
        assert_eq!(cache.load("k1"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
