//! `tally info`: what tally would run on, and how fast this machine reads memory.

use super::BackendArg;
use serde_json::json;
use tally::Backend;

#[derive(clap::Args, Debug)]
pub struct InfoArgs {
    #[command(flatten)]
    pub backend: BackendArg,
    /// Bytes read by the bandwidth measurement, in MiB.
    #[arg(long, default_value_t = 1024)]
    pub bandwidth_mib: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: InfoArgs) -> anyhow::Result<()> {
    if a.bandwidth_mib == 0 || a.bandwidth_mib > 1 << 20 {
        anyhow::bail!("--bandwidth-mib must be from 1 to 1048576, not {}", a.bandwidth_mib);
    }
    let backend = a.backend.open()?;
    // The CPU measurement reads at most 1 GiB; what is printed is what was read.
    let bytes = match backend {
        Backend::Cpu => (a.bandwidth_mib << 20).min(1 << 30),
        Backend::Cuda(_) => a.bandwidth_mib << 20,
    };
    let value = match &backend {
        Backend::Cuda(dev) => {
            let gbs = dev.read_bandwidth(bytes, 20)?;
            let switch = tally::histogram::SwitchOver::for_device(dev.info());
            json!({ "backend": "cuda", "device": dev.info(), "read_bandwidth_gbs": gbs, "read_bandwidth_mib": bytes >> 20,
                    "histogram_switch_over": switch })
        }
        Backend::Cpu => {
            let gbs = tally::device::cpu::read_bandwidth(bytes, 5);
            let nvrtc = if tally::device::nvrtc::available() {
                tally::device::nvrtc::version().ok().map(|(a, b)| format!("{a}.{b}"))
            } else {
                None
            };
            json!({ "backend": "cpu", "cpu": tally::device::cpu::info(), "nvrtc_version": nvrtc,
                    "cache_dir": tally::device::cache::default_dir(), "read_bandwidth_gbs": gbs,
                    "read_bandwidth_mib": bytes >> 20 })
        }
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    println!("backend            {}", backend.name());
    match &backend {
        Backend::Cuda(dev) => {
            let i = dev.info();
            println!(
                "device             {} (compute capability {}.{})",
                i.name, i.compute_capability.0, i.compute_capability.1
            );
            println!("multiprocessors    {}", i.multiprocessors);
            println!("L2 cache           {} MiB", i.l2_bytes >> 20);
            println!(
                "shared memory      {} KiB per block (opt-in), {} KiB per multiprocessor",
                i.smem_per_block_optin >> 10,
                i.smem_per_multiprocessor >> 10
            );
            println!("device memory      {} GiB", i.total_memory >> 30);
            println!("NVRTC              {}.{} (target {})", i.nvrtc_version.0, i.nvrtc_version.1, i.target);
            println!("kernel cache       {}", i.cache_dir.as_deref().unwrap_or("(none: no cache directory)"));
            let s = tally::histogram::SwitchOver::for_device(i);
            let bins = |v: Option<usize>| v.map_or("-".to_string(), |b| b.to_string());
            println!(
                "auto histogram     block-shared up to {} bins, block-shared-16 up to {}, then partition in chunks of {} \
                 bins up to {} (global-l2 where one bin holds a quarter of a probe and one pass of {} bins holds them all, \
                 and past the partition, in passes)",
                s.block_shared, s.block_shared16, s.partition_chunk, s.partition, s.global_l2_pass
            );
            println!(
                "partition scratch  at most {} MiB (the workspace limit, and an eighth of free memory); larger inputs in slices",
                dev.stream().workspace_limit() >> 20
            );
            println!(
                "one-pass limits    cluster-shared-16 {} bins, cluster-shared {} (16-block clusters)",
                bins(s.cluster_shared16),
                bins(s.cluster_shared)
            );
        }
        Backend::Cpu => {
            println!("threads            {}", tally::device::cpu::info().threads);
            println!("NVRTC              {}", value["nvrtc_version"].as_str().unwrap_or("not found"));
        }
    }
    println!(
        "read bandwidth     {:.1} GB/s ({} MiB read-only pass, median)",
        value["read_bandwidth_gbs"].as_f64().unwrap_or(0.0),
        bytes >> 20
    );
    Ok(())
}
