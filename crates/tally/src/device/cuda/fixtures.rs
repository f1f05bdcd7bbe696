//! A recorded device description for the tests of policies (pure functions of it).

use super::DeviceInfo;

impl DeviceInfo {
    /// An H200's properties, for the tests of policies (pure functions of them).
    pub(crate) fn h200() -> DeviceInfo {
        DeviceInfo {
            name: "H200".into(),
            compute_capability: (9, 0),
            multiprocessors: 132,
            l2_bytes: 50 << 20,
            smem_per_block_optin: 227 << 10,
            smem_per_multiprocessor: 228 << 10,
            total_memory: 141 << 30,
            nvrtc_version: (13, 0),
            target: "sm_90".into(),
            cache_dir: None,
        }
    }
}
