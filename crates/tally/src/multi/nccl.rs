//! NCCL underneath a device set: finding the library, one communicator per device, and the few
//! collectives the sharded primitives combine with (sum and max all-reduce, all-gather,
//! broadcast), each queued on the device's default stream so that it runs after the device's
//! part of the work.
//!
//! NCCL is loaded at run time (cudarc's `dynamic-loading`). cudarc panics where a library it
//! needs is missing, so [`nccl_present`] asks first and every entry point of `multi` calls it.

use crate::device::{CudaDevice, DevPtr};
use crate::error::{Error, Result};
use cudarc::nccl::{result, sys};
use std::ffi::c_void;
use std::sync::Arc;

/// The name of the library, as the errors say it.
pub const NCCL_LIBRARY: &str = "libnccl.so.2";

/// Whether NCCL can be loaded, or a clear error naming the library and where it usually is.
pub fn nccl_present() -> Result<()> {
    // SAFETY: only tries to dlopen the NCCL library.
    if unsafe { sys::is_culib_present() } {
        return Ok(());
    }
    Err(Error::CudaUnavailable(format!(
        "{NCCL_LIBRARY} (NCCL, which combines the results of several GPUs) was not found: add the \
         directory that holds it to LD_LIBRARY_PATH (PyTorch installs it under \
         site-packages/nvidia/nccl/lib)"
    )))
}

/// Maps a failed NCCL call to [`Error::Nccl`], naming the call.
pub(crate) fn nccl_error(call: &str) -> impl FnOnce(result::NcclError) -> Error + '_ {
    move |e| Error::Nccl { call: call.to_string(), message: format!("{:?}", e.0) }
}

/// The NCCL version as (major, minor, patch).
pub fn nccl_version() -> Result<(u32, u32, u32)> {
    nccl_present()?;
    let v = result::get_nccl_version().map_err(nccl_error("ncclGetVersion"))? as u32;
    // Since NCCL 2.9 the code is major * 10000 + minor * 100 + patch.
    Ok((v / 10000, v / 100 % 100, v % 100))
}

/// A new unique id (rank 0 of a multi-process set makes it and hands it to the others).
pub(crate) fn new_unique_id() -> Result<[u8; 128]> {
    nccl_present()?;
    let id = result::get_uniqueid().map_err(nccl_error("ncclGetUniqueId"))?;
    Ok(id.internal.map(|c| c as u8))
}

/// One device's NCCL communicator: its rank in the set and the device whose default stream its
/// collectives are queued on.
pub(crate) struct Communicator {
    comm: sys::ncclComm_t,
    pub(crate) dev: Arc<CudaDevice>,
    pub(crate) rank: usize,
}

// SAFETY: an NCCL communicator may be used from any thread, one at a time (NCCL's rule: not
// from two threads at once). A `Communicator` is owned by one `DeviceSet`, whose calls take it
// by shared reference on the calling thread only, so moving the set to another thread moves
// its sole user with it; `DeviceSet` stays `!Sync`, so two threads never call it at once.
unsafe impl Send for Communicator {}

impl Drop for Communicator {
    fn drop(&mut self) {
        // SAFETY: the communicator was made by NCCL and is destroyed once, here; an error on
        // the way out has nothing left to report to.
        let _ = unsafe { result::comm_destroy(self.comm) };
    }
}

impl std::fmt::Debug for Communicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Communicator").field("rank", &self.rank).field("device", &self.dev.info().name).finish()
    }
}

/// Communicators for every device of one process, ranks 0.. in the order given (one call:
/// `ncclCommInitAll`).
pub(crate) fn init_all(devs: &[Arc<CudaDevice>]) -> Result<Vec<Communicator>> {
    nccl_present()?;
    let ordinals: Vec<i32> = devs.iter().map(|d| d.cuda_context().ordinal() as i32).collect();
    let mut comms = vec![std::ptr::null_mut(); devs.len()];
    // SAFETY: `comms` has room for one communicator per ordinal, and both outlive the call.
    unsafe { result::comm_init_all(comms.as_mut_ptr(), devs.len() as i32, ordinals.as_ptr()) }
        .map_err(nccl_error("ncclCommInitAll"))?;
    Ok(comms
        .into_iter()
        .zip(devs)
        .enumerate()
        .map(|(rank, (comm, dev))| Communicator { comm, dev: dev.clone(), rank })
        .collect())
}

/// This process's communicator as `rank` of `world`, joined through `id`.
pub(crate) fn init_rank(dev: &Arc<CudaDevice>, rank: usize, world: usize, id: [u8; 128]) -> Result<Communicator> {
    nccl_present()?;
    let id = sys::ncclUniqueId { internal: id.map(|b| b as std::ffi::c_char) };
    let mut comm = std::mem::MaybeUninit::uninit();
    dev.cuda_context().bind_to_thread().map_err(crate::error::driver("cuCtxSetCurrent"))?;
    // SAFETY: `comm` is written by NCCL before it is read; every rank passes the same id.
    unsafe { result::comm_init_rank(comm.as_mut_ptr(), world as i32, id, rank as i32) }
        .map_err(nccl_error("ncclCommInitRank"))?;
    // SAFETY: written by the successful call above.
    let comm = unsafe { comm.assume_init() };
    Ok(Communicator { comm, dev: dev.clone(), rank })
}

/// The element types the combines move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Word {
    /// Bytes (gathers of any type).
    U8,
    /// 32-bit counters.
    U32,
    /// 64-bit counters, result words.
    U64,
    /// Doubles (float sums, maxima).
    F64,
}

impl Word {
    fn nccl(self) -> sys::ncclDataType_t {
        match self {
            Word::U8 => sys::ncclDataType_t::ncclUint8,
            Word::U32 => sys::ncclDataType_t::ncclUint32,
            Word::U64 => sys::ncclDataType_t::ncclUint64,
            Word::F64 => sys::ncclDataType_t::ncclFloat64,
        }
    }
}

/// How an all-reduce combines.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Combine {
    /// Add (wrapping for integers).
    Sum,
}

/// One collective of one communicator: device addresses (each valid on that communicator's
/// device while the caller holds the views they came from) and a count of `Word`s.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Collective {
    /// `count` words of `send` combined over the ranks into `recv` (may equal `send`).
    AllReduce { send: DevPtr<u8>, recv: DevPtr<u8>, count: usize, word: Word, op: Combine },
    /// `count` words of each rank laid out in rank order in `recv` (`world * count` words).
    AllGather { send: DevPtr<u8>, recv: DevPtr<u8>, count: usize, word: Word },
    /// `count` words of rank `root`'s `send` into every rank's `recv`.
    Broadcast { send: DevPtr<u8>, recv: DevPtr<u8>, count: usize, word: Word, root: usize },
}

/// Queues collectives of this process's communicators as one NCCL group (a process that drives
/// several devices must queue their parts together, or the first would wait for the others
/// forever). Each is `(i, collective)`: the collective of `comms[i]`.
pub(crate) fn group(comms: &[Communicator], ops: &[(usize, Collective)], what: &str) -> Result<()> {
    result::group_start().map_err(nccl_error("ncclGroupStart"))?;
    let mut first_error = None;
    for (i, op) in ops {
        let c = &comms[*i];
        let stream = c.dev.stream().cuda_stream().cu_stream() as sys::cudaStream_t;
        // SAFETY: every address is on `c`'s device and stays valid until the caller synchronises
        // the device's stream (the caller holds the buffers); the counts are the callers' buffer
        // lengths in words of the type named, as each collective's contract requires.
        let r = unsafe {
            match *op {
                Collective::AllReduce { send, recv, count, word, op } => {
                    let op = match op {
                        Combine::Sum => sys::ncclRedOp_t::ncclSum,
                    };
                    result::all_reduce(raw(send), raw(recv), count, word.nccl(), op, c.comm, stream)
                }
                Collective::AllGather { send, recv, count, word } => {
                    result::all_gather(raw(send), raw(recv), count, word.nccl(), c.comm, stream)
                }
                Collective::Broadcast { send, recv, count, word, root } => {
                    result::broadcast(raw(send), raw(recv), count, word.nccl(), root as i32, c.comm, stream)
                }
            }
        };
        if let Err(e) = r {
            first_error.get_or_insert(nccl_error(what)(e));
        }
    }
    let end = result::group_end().map_err(nccl_error("ncclGroupEnd"));
    match first_error {
        Some(e) => Err(e),
        None => end.map(|_| ()),
    }
}

fn raw(p: DevPtr<u8>) -> *mut c_void {
    p.address() as *mut c_void
}
