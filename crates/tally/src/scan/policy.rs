//! The scan's policy on the GPU: block size, rows per tile and the tile-state layout, as pure
//! functions of the element types and the problem. The plan in `cuda.rs` is the mechanism.

use super::lookback::LookbackLayout;
use crate::error::{Error, Result};
use crate::histogram::Tuning;
use crate::reduce::ElementType;

crate::kernel_codes! {
    /// The scan kernels' operations (`TALLY_SCAN`).
    pub enum ScanKernelOp as "TALLY_SCAN" {
        /// Sum.
        Sum,
        /// Running minimum.
        Min,
        /// Running maximum.
        Max,
        /// A caller's C++ expression.
        Custom,
    }
}

/// Threads per block of the scan kernels unless tuned.
pub const BLOCK_THREADS: u32 = 128;

/// What the plan launches and reserves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanPolicy {
    /// Threads per block.
    pub block_threads: u32,
    /// 16-byte input loads per thread and tile (rows of the tile).
    pub vecs: u32,
    /// Blocks per multiprocessor the kernel is compiled for (`__launch_bounds__`).
    pub min_blocks: u32,
    /// Whether a tile's input is staged in shared memory (`TALLY_SCAN_STAGE`) rather than held
    /// in registers through the look-back.
    pub staged: bool,
    /// Predecessor windows a lane of the fast look-back reads a round (`TALLY_LOOKBACK_WINDOWS`).
    pub windows: u32,
    /// Scans by key: rows that need no tile prefix are written while warp 0 looks back
    /// (`TALLY_SPLIT_LOOKBACK`).
    pub split: bool,
    /// Tiles numbered by block index rather than by a counter in the tile states
    /// (`TALLY_TILES_BY_BLOCK`; see [`tiles_by_block`]).
    pub tiles_by_block: bool,
    /// The deterministic mode's look-back in order, else by fixed groups
    /// (`TALLY_LOOKBACK_ORDERED`; see [`ordered_lookback`]).
    pub ordered: bool,
    /// Elements per tile.
    pub tile: u64,
    /// The tiles (= blocks) of the launch and their look-back states.
    pub states: LookbackLayout,
}

impl ScanPolicy {
    /// What the kernel is specialised for: threads per block, rows per tile, blocks per
    /// multiprocessor, staged in shared memory.
    pub fn shape(&self) -> ScanShape {
        ScanShape {
            block_threads: self.block_threads,
            vecs: self.vecs,
            min_blocks: self.min_blocks,
            staged: self.staged,
            windows: self.windows,
            split: self.split,
            tiles_by_block: self.tiles_by_block,
            ordered: self.ordered,
        }
    }
}

/// The shape a scan kernel is compiled for (part of its specialisation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanShape {
    /// Threads per block.
    pub block_threads: u32,
    /// Rows per tile.
    pub vecs: u32,
    /// Blocks per multiprocessor (`__launch_bounds__`).
    pub min_blocks: u32,
    /// Input staged in shared memory.
    pub staged: bool,
    /// Predecessor windows of the fast look-back.
    pub windows: u32,
    /// Rows written during the look-back (scans by key).
    pub split: bool,
    /// Tiles numbered by block index.
    pub tiles_by_block: bool,
    /// The deterministic look-back in order.
    pub ordered: bool,
}

/// Rows per tile for inputs of `size` bytes in blocks of 256 threads: about 16 items per thread
/// (16-byte loads: 16 u8, 8 u16 twice, 4 f32 four times), 8 for 8-byte ones; at most 4 rows, so
/// that one warp scans the row-and-warp totals (4 rows x 8 warps). The tiles of select and the
/// run primitives.
pub fn vecs_for(size: usize) -> u32 {
    match size {
        1 => 1,
        2 => 2,
        _ => 4,
    }
}

/// Rows per scan tile for inputs of `size` bytes with the scans' 128 threads, as v11 had them: 32
/// items per thread (tiles of 4096 items; 16 for 8-byte inputs). Same-width scans take more
/// (`same_width_vecs`).
pub fn scan_vecs_for(size: usize) -> u32 {
    match size {
        1 => 2,
        2 => 4,
        _ => 8,
    }
}

/// Rows per tile of same-width sums (f32 into f32, ...): they hold 96 items per thread in
/// registers through the look-back, three times v11's tiles (two times for 8-byte items, whose
/// running values take two registers each). Fewer, larger tiles leave fewer look-backs and
/// shorter chains of them; measured on the H200 at 2^28 f32, 128 x 24 rows: 0.614 ms fast,
/// 0.686 ms fixed, against 0.735 / 0.840 ms at 128 x 8 (docs/PERF.md, v13).
pub fn same_width_vecs(size: usize) -> u32 {
    scan_vecs_for(size) * if size == 8 { 2 } else { 3 }
}
/// Threads per multiprocessor of a same-width sum (at most 168 registers a thread).
const SAME_WIDTH_SUM_THREADS_PER_SM: u32 = 384;
/// Same-width sums of 4-byte items up to this many take `SMALL_SUM_ROWS` rows at
/// `SMALL_SUM_THREADS_PER_SM`: where a launch is a few tiles' lifetimes, a thread's serial
/// work (its loads and running sums) is what shortens, not the look-backs. On an H100, medians
/// of 100 launches by events (docs/PERF.md, v35): the f32 sum at 2^16 9.1 us against 10.4-11.3
/// at 24 rows, at 2^20 10.2-10.6 against 11.1-12.1; at 2^22 one mode faster and one slower,
/// at 2^24 3% slower. 8 rows at 8 blocks: 8.4 us at 2^16, no better at 2^20. The i32 and u32
/// sums take the same shape, not measured. Tuned rows (`scan_vecs`) keep the large sums'
/// blocks a multiprocessor, as the registers they were measured with allow.
pub const SMALL_SUM_MAX_ITEMS: u64 = 1 << 20;
/// Rows per tile of a small same-width 4-byte sum (8,192-item tiles of 128 threads).
const SMALL_SUM_ROWS: u32 = 16;
/// Threads per multiprocessor of a small same-width 4-byte sum.
const SMALL_SUM_THREADS_PER_SM: u32 = 512;
/// Widening sums of 4-byte items (i32 into i64, u32 into u64) up to this many take
/// `SMALL_WIDENING_ROWS` rows at `SMALL_WIDENING_THREADS_PER_SM`, for the reason above. On an
/// H100 (docs/PERF.md, v35, call 4; i32 into i64): 8.3 us at 2^16 and 9.4 at 2^18 against
/// 11.4-11.6 and 12.0-12.5 at 16 rows and 4 blocks, but 13.3 at 2^20 against 12.5 and 31.6 at
/// 2^22 against 26.4-26.5 (u32 into u64 not measured).
pub const SMALL_WIDENING_MAX_ITEMS: u64 = 1 << 18;
/// Rows per tile of a small widening 4-byte sum (2,048-item tiles of 128 threads, staged).
const SMALL_WIDENING_ROWS: u32 = 4;
/// Threads per multiprocessor of a small widening 4-byte sum.
const SMALL_WIDENING_THREADS_PER_SM: u32 = 1024;
/// f32 sums by 4-byte keys of up to this many items take `SMALL_KEYED_ROWS` rows in
/// [`KEYED_LARGE_SHAPE`]'s blocks. On an H100 (docs/PERF.md, v35, call 4; keys in runs of 8,
/// deterministic / fast): 9.1 / 8.4 us at 2^16, 11.0 / 10.3 at 2^20 and 30.0 / 28.8 at 2^22
/// against 12.0-12.2 / 11.3-11.5, 13.3 / 11.5-12.4 and 31.4-32.3 / 30.1-30.2 at 6 rows; at 2^28
/// 4 rows measured slower (v27).
pub const SMALL_KEYED_MAX_ITEMS: u64 = 1 << 22;
/// Rows per tile of a small f32 sum by 4-byte keys (8,192-item tiles of 512 threads).
const SMALL_KEYED_ROWS: u32 = 4;
/// Threads per multiprocessor of other same-width scans (custom ones; minima and maxima of 8-,
/// 2- and 1-byte items), which keep v11's tiles: at 128 x 24 a running f32 max measured 1.040 ms
/// against v11's 0.915 ms (docs/PERF.md, v13), in the fixed look-back.
const SAME_WIDTH_THREADS_PER_SM: u32 = 768;
/// Rows per tile of running minima and maxima of 4-byte items (8,192-item tiles of 128
/// threads), at `MINMAX_THREADS_PER_SM`. Since v38 they take the fast look-back (their bits
/// cannot depend on the order); on the H200, alternating in one call (docs/PERF.md, v38, call
/// 1), the f32 max at 2^28 0.708-0.711 ms at 16 rows and 4 blocks against 0.809 at v11's 8 rows
/// and 6 blocks and 0.715 at 24 and 3; at 2^24 61-62 us against 67-68 and 64-66. Without the
/// ordered look-back compiled in (`ordered_lookback`), 0.695-0.700 ms (call 2; CUB 0.675).
/// The 4-byte integers take the same shape, not measured.
const MINMAX_ROWS: u32 = 16;
/// Threads per multiprocessor of a running minimum or maximum of 4-byte items.
const MINMAX_THREADS_PER_SM: u32 = 512;
/// Widening scans (u8 to i32 into 64 bits) stage their tile in shared memory: their outputs take
/// twice the registers of their items, and held in registers they measured slower at every
/// shape (i32 into i64 at 2^28 on the H100: 1.99-2.35 ms at 8 to 24 rows, against 1.79 ms
/// staged; docs/PERF.md, v16). Staged tiles of 16 rows (32 KiB) at 4 blocks a multiprocessor
/// beat v13's 8 rows at 8 blocks (1.634 against 1.789 ms); 24 rows no longer fit the 48 KiB of
/// static shared memory. With their stores coalesced through a per-warp buffer (v20, H200):
/// staged 1.150-1.156 ms, held in registers 1.30-1.41 ms at 8 and 16 rows, 2 to 4 blocks.
const WIDENING_THREADS_PER_SM: u32 = 512;

/// Rows per tile of widening scans: twice v11's (`scan_vecs_for`), staged (see
/// `WIDENING_THREADS_PER_SM`).
pub fn widening_vecs(size: usize) -> u32 {
    scan_vecs_for(size) * 2
}
/// Rows per tile of scans by key with values of `size` bytes: `vecs_for`'s 16 items a thread,
/// and for 8-byte values twice its rows (8 rows, 16 items): f64 by key at 2^28 on the H200 measured 2.50 ms at
/// 256 x 8 against 3.43 ms at 256 x 4 (docs/PERF.md, v21).
pub fn keyed_vecs(size: usize) -> u32 {
    vecs_for(size) * if size == 8 { 2 } else { 1 }
}
/// Threads per multiprocessor a scan by key into outputs of up to 4 bytes is compiled for: 3
/// blocks of 256 (at most 85 registers a thread; no spills in the specialisations checked,
/// docs/runs/v21/ptxas-scan.txt). The f32 sum by key (since v27 in [`KEYED_LARGE_SHAPE`])
/// took 58 registers here, so 4 blocks were resident: on the H200 at 2^28 it measured 1.13 ms
/// at 4 blocks against 1.30 ms at 3 (66 registers, before a struct chosen by reference left
/// local memory) and 1.29 ms at 2 (docs/PERF.md, v21). Also 4-byte values into 8-byte outputs
/// by 4-byte keys (i32 into i64, u32 into u64), which spill 36-52 bytes at 3 blocks (ptxas,
/// sm_90) and still measured faster there (below).
const KEYED_THREADS_PER_SM: u32 = 768;
/// Threads per multiprocessor of the other scans by key into 8-byte outputs (v10's shape): an
/// f64 sum by key takes 109 registers a thread at 256 x 8 rows (by 8-byte keys; by 4-byte keys
/// it runs [`KEYED_F64_SHAPE`] since v27); at 3 blocks (80) u8 into u64
/// spills 1.4 KB and u32 into u64 by 8-byte keys 176 bytes (ptxas, sm_90). 4-byte values into
/// 8-byte outputs by 4-byte keys run at 3 blocks ([`KEYED_THREADS_PER_SM`]): since v22's 128-bit
/// look-back slots they take 88 registers at 2, and on an H100 at 2^28 i32 into i64 by key
/// measured 1.95 ms at 3 blocks with two look-back windows against 2.20 at 2 with four
/// (docs/PERF.md, v22; not measured on an H200, nor for u32 into u64).
const KEYED_WIDE_THREADS_PER_SM: u32 = 512;

/// A scan by key's shape in blocks of 512 threads: threads, rows, blocks a multiprocessor and
/// the fast look-back's windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyedShape {
    /// Threads per block.
    pub threads: u32,
    /// Rows of 16 bytes per thread and tile.
    pub rows: u32,
    /// Blocks per multiprocessor the kernel is compiled for.
    pub blocks: u32,
    /// Predecessor windows of the fast look-back.
    pub windows: u32,
}

/// The f32 sum by 4-byte keys: 512 x 6 rows (24 items a thread, 12,288-item tiles, a third of
/// v21's look-backs) at 2 blocks (64 registers; ptxas, sm_90: 28 bytes of spill stores with one
/// look-back window, 104 with two), reading one window of predecessors a round. On an H100 at
/// 2^28, alternating in one call (docs/PERF.md, v27): the deterministic f32 sum by key
/// 1.240-1.254 ms against 1.338-1.340 at v21's 256 x 4 (4 blocks resident, two windows) and
/// 1.274-1.283 at 256 x 8 x 3; by keys in runs of 2^20, 1.355-1.368 against 1.526-1.536; 512 x 4
/// rows and 512 x 6 with two or four windows were slower. Other 4-byte scans by key keep 256 x 4:
/// at 512 x 6 x 2 their running values spill more (f32 min and max 164 bytes of stores, i32 and
/// u32 sums 48; none of them at 256 x 4; docs/runs/v27/ptxas-scan.txt), not measured.
pub const KEYED_LARGE_SHAPE: KeyedShape = KeyedShape { threads: 512, rows: 6, blocks: 2, windows: 1 };
/// The f64 sum by 4-byte keys: 512 x 4 rows (the same 4,096-item tiles as 256 x 8) at 2 blocks,
/// twice the threads of v21's 256 x 8 x 2 with the same look-back (two windows). 64 registers
/// and 64 bytes of spill stores (ptxas, sm_90; 109 registers and none at 256 x 8), and still
/// faster: on an H100 at 2^28 2.405-2.434 ms against 2.59-2.61 in three calls (docs/PERF.md,
/// v27; 512 x 8 x 1: 2.77; one window measured the same as two, 2.434 against 2.430). Not for
/// 8-byte integers (not measured; i64 spills 72 bytes there), nor for i32 into i64 by key
/// (2.06-2.19 ms at 512 x 4 against 1.95).
pub const KEYED_F64_SHAPE: KeyedShape = KeyedShape { threads: 512, rows: 4, blocks: 2, windows: 2 };

/// The shape of a scan by key in blocks of 512 threads, where one was measured faster than 256
/// (the f32 and f64 sums by 4-byte keys); `None` for the others.
pub fn keyed_shape_of_512(
    input: ElementType,
    output: ElementType,
    op: ScanKernelOp,
    key_bytes: u32,
) -> Option<KeyedShape> {
    if key_bytes != 4 || op != ScanKernelOp::Sum || input != output {
        return None;
    }
    match input {
        ElementType::F32 => Some(KEYED_LARGE_SHAPE),
        ElementType::F64 => Some(KEYED_F64_SHAPE),
        _ => None,
    }
}

/// Bytes of a tile's look-back slot (the kernel traits' `Word` in `scan.cu`): an output of up
/// to 4 bytes shares 64 bits with its status (and a scan by key's segment flag); a wider one
/// takes 128.
fn slot_bytes(out_size: usize) -> u64 {
    if out_size <= 4 {
        8
    } else {
        16
    }
}

/// Predecessor windows (of 32 tiles) a lane of the fast look-back reads a round. Plain scans
/// read four ([`LOOKBACK_WINDOWS`]). Scans by key in blocks of 512 read their shape's
/// ([`keyed_shape_of_512`]): the f32 sum by 4-byte keys one (with two it spills 104 bytes at 64
/// registers and measured slower on an H100, docs/PERF.md, v27), the f64 sum two. The other scans by key into outputs of up to
/// 4 bytes read two, as the f32 sum by key did in 256 x 4 tiles to fit 64 registers and 4 blocks
/// (on the H200 at 2^28 1.11 ms against 1.26 ms with four windows at 3 blocks, v21; not measured
/// for the others). So do scans by key of 8-byte values: at 256 x 8, where their 8 rows fit 128
/// registers with two (v21, before the 128-bit slots: 113-128, ptxas, sm_90; since them f64 takes 126
/// with four, no spill, and measured 2.5% faster on an H100, v22, but u64 by u64 key spills 44
/// bytes with four), and of 4-byte values into 8-byte outputs, which run 3 blocks of 256 by
/// 4-byte keys (v22, on an H100: i32 into i64 1.95 ms against 2.20 at 2 blocks with four).
/// Narrower values into 8-byte outputs keep four at 2 blocks.
pub fn lookback_windows(input: ElementType, output: ElementType, op: ScanKernelOp, key_bytes: u32) -> u32 {
    let keyed = key_bytes != 0;
    if let Some(shape) = keyed_shape_of_512(input, output, op, key_bytes) {
        shape.windows
    } else if keyed && (output.size() <= 4 || input.size() >= 4) {
        2
    } else {
        LOOKBACK_WINDOWS
    }
}

/// The look-back windows of `lookback.cuh` (`LOOKBACK_WINDOWS`).
pub const LOOKBACK_WINDOWS: u32 = 4;

/// Whether a scan by key writes the rows that need no tile prefix while warp 0 looks back: for
/// outputs of up to 4 bytes. On the H200 at 2^28 the f32 sum by key took 1.089 against 1.108 ms
/// that way; i32 into i64 and f64 by key measured 1% and 6% slower (2.015 / 3.37 against 1.989 /
/// 3.16 ms; docs/PERF.md, v21), so they wait for the prefix as the plain scans do.
pub fn split_lookback(output: ElementType, keyed: bool) -> bool {
    keyed && output.size() <= 4
}

/// Whether a scan's tiles are numbered by block index (as CUB's are), so that a block issues its
/// loads at once, rather than after a round trip to the tile states' counter: for widening
/// scans. The counter guarantees that a tile waits only for tiles already running; block indices
/// do as long as blocks start in the order of their indices, which every NVIDIA GPU does and
/// CUB's single-pass scans rely on. On an H100 with the same binary, alternating (docs/PERF.md,
/// v27): i32 into i64 at 2^28 1.152-1.156 ms against 1.201, at 2^24 0.087 against 0.094-0.098;
/// the f32 sums and the f32 sum by key moved by less than 2% either way, select and the run
/// primitives (which keep the counter) from 3% slower (select 1%) to 1.5% faster (rle). Every
/// widening scan takes it (u8 to i32 into 64 bits, 16-bit floats into f32), measured for i32
/// into i64 only.
pub fn tiles_by_block(input: ElementType, output: ElementType, keyed: bool) -> bool {
    !keyed && output.size() > input.size()
}

/// Whether the order in which `op` combines values into `output` can change a result's bits:
/// float sums and custom operations (assumed). Integer sums wrap exactly and a minimum or
/// maximum picks one of its inputs (NaN: the last) whatever the order. What the deterministic
/// mode defaults to (`ScanOptions::deterministic`), and where its look-back is compiled in.
pub fn order_changes_bits(op: ScanKernelOp, output: ElementType) -> bool {
    match op {
        ScanKernelOp::Sum => output.is_float(),
        ScanKernelOp::Custom => true,
        ScanKernelOp::Min | ScanKernelOp::Max => false,
    }
}

/// Whether a deterministic scan looks back in order (`lookback.cuh`'s ordered look-back: the
/// fast one's rounds of reads, merged as a left fold from the nearest inclusive prefix) rather
/// than by fixed groups of 32 tiles and super-groups (up to three rounds of reads a tile, one
/// after another): plain scans whose order changes the bits ([`order_changes_bits`]). On the
/// H200 at 2^28, alternating in one call (docs/PERF.md, v38, call 2): the deterministic f32 sum
/// 0.631-0.643 ms in order against 0.684 by groups and 0.621-0.627 in the fast
/// (non-deterministic) look-back; at 2^24 53-54 us against 54.5-55.5. Scans by key keep the
/// groups: in order the f32 sum by keys in runs of 8 measured 0.981-0.983 ms against
/// 0.962-0.967 (f64 1.935-1.938 against 2.020-2.027, by keys in runs of 2^20 1.060-1.062 against
/// 1.082-1.090; not adopted on one mixed call). Minima and maxima never run the deterministic
/// mode and compile without the ordered look-back: with it compiled in (unused) the f32 max at
/// 2^28 measured 0.780-0.782 ms against 0.695-0.700. Nor do integer sums (asked to be
/// deterministic, they take the fixed groups): its history would take their shared memory for
/// nothing.
pub fn ordered_lookback(op: ScanKernelOp, output: ElementType, keyed: bool) -> bool {
    !keyed && order_changes_bits(op, output)
}

/// The policy for `n` elements of `input` scanned by `op` into `output`: by keys of `key_bytes`
/// bytes (4 or 8), or a plain scan (0).
pub fn policy(
    input: ElementType,
    output: ElementType,
    op: ScanKernelOp,
    key_bytes: u32,
    n: u64,
    tuning: &Tuning,
) -> Result<ScanPolicy> {
    let keyed = key_bytes != 0;
    // Scans by key keep v10's 256 threads and 16 items per thread (at 128 x 8 they measured 10%
    // slower, docs/PERF.md, v11), but the f32 and f64 sums by 4-byte keys, which run blocks of
    // 512 (`keyed_shape_of_512`). Tuning the threads alone keeps that shape's rows (for the f32
    // sum, its small rows up to `SMALL_KEYED_MAX_ITEMS`) and its 1,024 threads a multiprocessor
    // (256 threads: 4 blocks).
    let large_keyed = keyed_shape_of_512(input, output, op, key_bytes);
    let block_threads = tuning.scan_block_threads.unwrap_or(match large_keyed {
        Some(shape) => shape.threads,
        None if keyed => 256,
        None => BLOCK_THREADS,
    });
    if ![64, 128, 256, 512].contains(&block_threads) {
        return Err(Error::invalid(format!("scan blocks of {block_threads} threads: use 64, 128, 256 or 512")));
    }
    let widening = output.size() > input.size() && !keyed;
    let large_sum = op == ScanKernelOp::Sum && !keyed && !widening;
    let minmax = matches!(op, ScanKernelOp::Min | ScanKernelOp::Max) && !keyed && !widening && input.size() == 4;
    // Small problems take fewer rows (less serial work a thread), where measured; tuned rows
    // keep the large problems' blocks.
    let untuned = tuning.scan_vecs.is_none();
    let small_sum = large_sum && input.size() == 4 && n <= SMALL_SUM_MAX_ITEMS && untuned;
    let small_widening =
        widening && op == ScanKernelOp::Sum && input.size() == 4 && n <= SMALL_WIDENING_MAX_ITEMS && untuned;
    let small_keyed = large_keyed == Some(KEYED_LARGE_SHAPE) && n <= SMALL_KEYED_MAX_ITEMS && untuned;
    let default_vecs = match large_keyed {
        Some(_) if small_keyed => SMALL_KEYED_ROWS,
        Some(shape) => shape.rows,
        None if keyed => keyed_vecs(input.size()),
        None if small_sum => SMALL_SUM_ROWS,
        None if large_sum => same_width_vecs(input.size()),
        None if small_widening => SMALL_WIDENING_ROWS,
        None if widening => widening_vecs(input.size()),
        None if minmax => MINMAX_ROWS,
        None => scan_vecs_for(input.size()),
    };
    let vecs = tuning.scan_vecs.unwrap_or(default_vecs);
    // Warp 0 scans the rows' and warps' totals, at most 4 a lane (PER_LANE in scan.cu).
    if vecs == 0 || vecs * (block_threads / 32) > 128 {
        return Err(Error::invalid(format!(
            "{vecs} rows per scan tile with {block_threads} threads: rows times warps must be 1 to 128"
        )));
    }
    let tile = block_threads as u64 * (16 / input.size()) as u64 * vecs as u64;
    let states = LookbackLayout::new(n.div_ceil(tile), slot_bytes(output.size()));
    let threads_per_sm = match large_keyed {
        Some(shape) => shape.threads * shape.blocks,
        None if keyed && output.size() > 4 && !(input.size() == 4 && key_bytes == 4) => KEYED_WIDE_THREADS_PER_SM,
        None if keyed => KEYED_THREADS_PER_SM,
        None if small_widening => SMALL_WIDENING_THREADS_PER_SM,
        None if widening => WIDENING_THREADS_PER_SM,
        None if small_sum => SMALL_SUM_THREADS_PER_SM,
        None if large_sum => SAME_WIDTH_SUM_THREADS_PER_SM,
        None if minmax => MINMAX_THREADS_PER_SM,
        None => SAME_WIDTH_THREADS_PER_SM,
    };
    let min_blocks = tuning.scan_min_blocks.unwrap_or((threads_per_sm / block_threads).max(1));
    if !(1..=32).contains(&min_blocks) {
        return Err(Error::invalid(format!("{min_blocks} scan blocks per multiprocessor: use 1 to 32")));
    }
    // Scans by key read their keys beside the tile; only plain scans stage it.
    let staged = !keyed && tuning.scan_staged.unwrap_or(widening);
    let windows = tuning.scan_windows.unwrap_or(lookback_windows(input, output, op, key_bytes));
    if !(1..=8).contains(&windows) {
        return Err(Error::invalid(format!("{windows} look-back windows: use 1 to 8")));
    }
    let split = keyed && tuning.scan_split.unwrap_or(split_lookback(output, keyed));
    let tiles_by_block = tiles_by_block(input, output, keyed);
    let ordered = tuning.scan_ordered.unwrap_or(ordered_lookback(op, output, keyed));
    Ok(ScanPolicy { block_threads, vecs, min_blocks, staged, windows, split, tiles_by_block, ordered, tile, states })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_sums_and_custom_scans_look_back_in_order_the_others_by_groups() {
        let t = Tuning::default();
        let ordered = |input, output, op, key_bytes| policy(input, output, op, key_bytes, 1 << 28, &t).unwrap().ordered;
        let (f32_type, i32_type) = (ElementType::F32, ElementType::I32);
        assert!(ordered(f32_type, f32_type, ScanKernelOp::Sum, 0));
        assert!(ordered(ElementType::F64, ElementType::F64, ScanKernelOp::Custom, 0));
        assert!(!ordered(i32_type, ElementType::I64, ScanKernelOp::Sum, 0), "integer sums: no history to carry");
        assert!(!ordered(f32_type, f32_type, ScanKernelOp::Sum, 4), "scans by key: fixed groups");
        assert!(!ordered(f32_type, f32_type, ScanKernelOp::Max, 0), "min/max never run the deterministic mode");
        assert!(!ordered(i32_type, i32_type, ScanKernelOp::Min, 0));
        let tuned = Tuning { scan_ordered: Some(true), ..Tuning::default() };
        assert!(policy(f32_type, f32_type, ScanKernelOp::Sum, 4, 1000, &tuned).unwrap().ordered);
        // Running maxima of 4-byte items: 16 rows at 4 blocks of 128; of 8-byte ones v11's tiles.
        let max = policy(f32_type, f32_type, ScanKernelOp::Max, 0, 1 << 28, &t).unwrap();
        assert_eq!((max.tile, max.min_blocks), (8192, 4));
        let max64 = policy(ElementType::F64, ElementType::F64, ScanKernelOp::Max, 0, 1 << 28, &t).unwrap();
        assert_eq!((max64.tile, max64.min_blocks), (2048, 6));
    }

    #[test]
    fn tiles_are_96_items_per_thread_in_registers_or_staged_and_states_are_small() {
        let t = Tuning::default();
        let p = policy(ElementType::F32, ElementType::F32, ScanKernelOp::Sum, 0, 1 << 28, &t).unwrap();
        // 128 threads x 24 rows of 4 f32: 12,288 items a tile.
        assert_eq!((p.tile, p.states.tiles, p.states.groups, p.states.supers), (12288, 21846, 683, 22));
        assert_eq!((p.min_blocks, p.staged), (3, false));
        assert!(p.states.state_bytes < (1 << 20));
        // Up to 2^20 items: 16 rows (8,192-item tiles) at 4 blocks; 8-byte sums keep their shape.
        for n in [0, 1, 1 << 20] {
            let small = policy(ElementType::F32, ElementType::F32, ScanKernelOp::Sum, 0, n, &t).unwrap();
            assert_eq!((small.tile, small.min_blocks), (8192, 4), "{n}");
        }
        let past = policy(ElementType::U32, ElementType::U32, ScanKernelOp::Sum, 0, (1 << 20) + 1, &t).unwrap();
        assert_eq!((past.tile, past.min_blocks), (12288, 3));
        // Widening 4-byte sums up to 2^18: 4 rows (2,048 items) at 8 blocks; f32 sums by 4-byte keys
        // up to 2^22: 512 x 4 rows at 2 blocks.
        for (input, output, key_bytes, switch, small_tile, large_tile, small_blocks, large_blocks) in [
            (ElementType::I32, ElementType::I64, 0, SMALL_WIDENING_MAX_ITEMS, 2048, 8192, 8, 4),
            (ElementType::U32, ElementType::U64, 0, SMALL_WIDENING_MAX_ITEMS, 2048, 8192, 8, 4),
            (ElementType::F32, ElementType::F32, 4, SMALL_KEYED_MAX_ITEMS, 8192, 12288, 2, 2),
        ] {
            let small = policy(input, output, ScanKernelOp::Sum, key_bytes, switch, &t).unwrap();
            let large = policy(input, output, ScanKernelOp::Sum, key_bytes, switch + 1, &t).unwrap();
            assert_eq!((small.tile, small.min_blocks), (small_tile, small_blocks), "{input:?}");
            assert_eq!((large.tile, large.min_blocks), (large_tile, large_blocks), "{input:?}");
        }
        let u16_wide = policy(ElementType::U16, ElementType::U64, ScanKernelOp::Sum, 0, 1000, &t).unwrap();
        assert_eq!(u16_wide.tile, 8192, "narrower widening sums keep their shape");
        let f64_small = policy(ElementType::F64, ElementType::F64, ScanKernelOp::Sum, 0, 1000, &t).unwrap();
        let f64_large = policy(ElementType::F64, ElementType::F64, ScanKernelOp::Sum, 0, 1 << 28, &t).unwrap();
        assert_eq!(f64_small.shape(), f64_large.shape());
        let w = policy(ElementType::I32, ElementType::I64, ScanKernelOp::Sum, 0, (1 << 31) + 5, &t).unwrap();
        // Widening: 8192-item tiles, staged in shared memory, 4 blocks a multiprocessor.
        assert_eq!((w.tile, w.min_blocks, w.staged), (8192, 4, true));
        // Only widening scans number their tiles by block index.
        assert!(w.tiles_by_block && w.shape().tiles_by_block && !p.tiles_by_block);
        assert_eq!(w.states.tiles, (1u64 << 31).div_ceil(8192) + 1);
        assert!(w.states.state_bytes < 12 << 20);
        let keyed = policy(ElementType::F64, ElementType::F64, ScanKernelOp::Sum, 4, 1 << 20, &t).unwrap();
        // 4 rows of 2 f64 at 512 threads: 4096-item tiles. 16-byte slots (the value, then its
        // status and segment flag): 256 tiles, 8 groups, 1 super-group.
        assert_eq!((keyed.block_threads, keyed.vecs, keyed.tile), (512, 4, 4096));
        assert_eq!(keyed.states.state_bytes, 256 + 16 * 256 + 256 + 256);
        let narrow = policy(ElementType::F32, ElementType::F32, ScanKernelOp::Sum, 4, (1 << 22) + 1, &t).unwrap();
        // 4-byte values by 4-byte keys into 4-byte outputs: 512 x 6 rows at 2 blocks, one window.
        let s = narrow.shape();
        assert_eq!((s.block_threads, s.vecs, s.min_blocks, s.windows, s.split), (512, 6, 2, 1, true));
        assert_eq!(narrow.tile, 12288);
        // Only the f32 sum by 4-byte keys: by 8-byte keys, max, custom, and i32 sums into i32 keep
        // 256 x 4.
        for (input, output, op, key_bytes) in [
            (ElementType::F32, ElementType::F32, ScanKernelOp::Sum, 8),
            (ElementType::F32, ElementType::F32, ScanKernelOp::Max, 4),
            (ElementType::F32, ElementType::F32, ScanKernelOp::Custom, 4),
            (ElementType::I32, ElementType::I32, ScanKernelOp::Sum, 4),
        ] {
            let other = policy(input, output, op, key_bytes, 1 << 20, &t).unwrap();
            assert_eq!((other.block_threads, other.vecs, other.windows), (256, 4, 2), "{input:?} {op:?}");
        }
        assert_eq!(narrow.states.state_bytes as u64, 256 + 8 * narrow.states.tiles.next_multiple_of(32) + 256 + 256);
        assert!(!keyed.staged && !keyed.tiles_by_block);
        let keyed_widening = policy(ElementType::I32, ElementType::I64, ScanKernelOp::Sum, 4, 1 << 20, &t).unwrap();
        assert!(!keyed_widening.tiles_by_block);
        assert_eq!(policy(ElementType::U8, ElementType::U64, ScanKernelOp::Sum, 0, 1, &t).unwrap().tile, 8192);
        assert_eq!(policy(ElementType::U8, ElementType::U8, ScanKernelOp::Sum, 0, 1, &t).unwrap().tile, 12288);
        assert_eq!(policy(ElementType::F64, ElementType::F64, ScanKernelOp::Sum, 0, 1, &t).unwrap().tile, 4096);
        assert_eq!(policy(ElementType::U16, ElementType::U64, ScanKernelOp::Sum, 0, 0, &t).unwrap().states.tiles, 0);
    }

    #[test]
    fn tuning_changes_the_tile_within_limits() {
        let tuned = Tuning { scan_block_threads: Some(128), scan_vecs: Some(8), ..Tuning::default() };
        for n in [1 << 20, 1 << 28] {
            // Tuned rows take the large sums' 3 blocks at any size.
            let p = policy(ElementType::F32, ElementType::F32, ScanKernelOp::Sum, 0, n, &tuned).unwrap();
            assert_eq!((p.block_threads, p.vecs, p.tile, p.min_blocks), (128, 8, 4096, 3), "{n}");
        }
        let largest = Tuning { scan_vecs: Some(32), ..Tuning::default() };
        assert!(policy(ElementType::F32, ElementType::F32, ScanKernelOp::Sum, 0, 1, &largest).is_ok());
        let too_many = Tuning { scan_vecs: Some(33), ..Tuning::default() };
        assert!(policy(ElementType::F32, ElementType::F32, ScanKernelOp::Sum, 0, 1, &too_many).is_err());
        let odd = Tuning { scan_block_threads: Some(96), ..Tuning::default() };
        assert!(policy(ElementType::F32, ElementType::F32, ScanKernelOp::Sum, 0, 1, &odd).is_err());
        let d = policy(ElementType::F32, ElementType::F32, ScanKernelOp::Sum, 0, 1 << 28, &Tuning::default()).unwrap();
        assert_eq!((d.block_threads, d.vecs, d.min_blocks), (128, 24, 3));
        let small = policy(ElementType::F32, ElementType::F32, ScanKernelOp::Sum, 0, 1, &Tuning::default()).unwrap();
        assert_eq!((small.block_threads, small.vecs, small.min_blocks), (128, 16, 4));
        let keyed =
            policy(ElementType::F32, ElementType::F32, ScanKernelOp::Sum, 4, 1 << 28, &Tuning::default()).unwrap();
        assert_eq!((keyed.block_threads, keyed.vecs, keyed.min_blocks), (512, 6, 2));
        let wide_keyed =
            policy(ElementType::I32, ElementType::I64, ScanKernelOp::Sum, 4, 1, &Tuning::default()).unwrap();
        assert_eq!((wide_keyed.block_threads, wide_keyed.vecs, wide_keyed.min_blocks), (256, 4, 3));
        let f64_keyed =
            policy(ElementType::F64, ElementType::F64, ScanKernelOp::Sum, 4, 1, &Tuning::default()).unwrap();
        assert_eq!((f64_keyed.block_threads, f64_keyed.vecs, f64_keyed.min_blocks), (512, 4, 2));
        // 8-byte integers by key and f64 by 8-byte keys keep 256 x 8 x 2.
        let i64_keyed =
            policy(ElementType::I64, ElementType::I64, ScanKernelOp::Sum, 4, 1, &Tuning::default()).unwrap();
        let f64_by_wide_keys =
            policy(ElementType::F64, ElementType::F64, ScanKernelOp::Sum, 8, 1, &Tuning::default()).unwrap();
        for p in [&i64_keyed, &f64_by_wide_keys] {
            assert_eq!((p.block_threads, p.vecs, p.min_blocks), (256, 8, 2));
        }
        let u8_keyed = policy(ElementType::U8, ElementType::U64, ScanKernelOp::Sum, 4, 1, &Tuning::default()).unwrap();
        assert_eq!((u8_keyed.block_threads, u8_keyed.min_blocks), (256, 2));
        // 4-byte values into 8-byte outputs run 3 blocks by 4-byte keys only (by 8-byte keys u32
        // into u64 spills 176 bytes at 3).
        let by_wide_keys =
            policy(ElementType::U32, ElementType::U64, ScanKernelOp::Sum, 8, 1, &Tuning::default()).unwrap();
        assert_eq!((by_wide_keys.min_blocks, by_wide_keys.windows), (2, 2));
        let u32_keyed =
            policy(ElementType::U32, ElementType::U64, ScanKernelOp::Max, 4, 1, &Tuning::default()).unwrap();
        assert_eq!(u32_keyed.min_blocks, 3);
        // The look-back's shape: one window for the f32 sum by 4-byte keys, two for the other
        // scans by key (the f64 sum in blocks of 512 too) but narrow values into 8-byte outputs,
        // four for plain scans; the split look-back for scans by key into outputs of up to 4 bytes.
        let look = |p: &ScanPolicy| (p.windows, p.split);
        assert_eq!(
            (look(&keyed), look(&wide_keyed), look(&f64_keyed), look(&u8_keyed)),
            ((1, true), (2, false), (2, false), (4, false))
        );
        assert_eq!(look(&d), (4, false));
        let tuned = Tuning { scan_windows: Some(3), scan_split: Some(true), ..Tuning::default() };
        let t = policy(ElementType::F64, ElementType::F64, ScanKernelOp::Sum, 4, 1, &tuned).unwrap();
        assert_eq!(look(&t), (3, true));
        // Plain scans never split, whatever the tuning.
        assert_eq!(
            look(&policy(ElementType::F32, ElementType::F32, ScanKernelOp::Sum, 0, 1, &tuned).unwrap()),
            (3, false)
        );
        let none = Tuning { scan_windows: Some(0), ..Tuning::default() };
        assert!(policy(ElementType::F32, ElementType::F32, ScanKernelOp::Sum, 0, 1, &none).is_err());
        let max = policy(ElementType::F32, ElementType::F32, ScanKernelOp::Max, 0, 1, &Tuning::default()).unwrap();
        assert_eq!((max.block_threads, max.vecs, max.min_blocks, max.staged), (128, 16, 4, false));
        let custom =
            policy(ElementType::F32, ElementType::F32, ScanKernelOp::Custom, 0, 1, &Tuning::default()).unwrap();
        assert_eq!((custom.block_threads, custom.vecs, custom.min_blocks, custom.staged), (128, 8, 6, false));
        let shaped = Tuning { scan_min_blocks: Some(3), scan_staged: Some(false), ..Tuning::default() };
        let w = policy(ElementType::I32, ElementType::I64, ScanKernelOp::Sum, 0, 1, &shaped).unwrap();
        assert_eq!((w.min_blocks, w.staged), (3, false));
        let staged = Tuning { scan_staged: Some(true), ..Tuning::default() };
        assert!(policy(ElementType::F32, ElementType::F32, ScanKernelOp::Sum, 0, 1, &staged).unwrap().staged);
        assert!(!policy(ElementType::F32, ElementType::F32, ScanKernelOp::Sum, 4, 1, &staged).unwrap().staged);
        for bad in [0, 33] {
            let t = Tuning { scan_min_blocks: Some(bad), ..Tuning::default() };
            assert!(policy(ElementType::F32, ElementType::F32, ScanKernelOp::Sum, 0, 1, &t).is_err());
        }
    }
}
