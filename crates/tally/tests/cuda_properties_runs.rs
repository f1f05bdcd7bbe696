//! Unique, run-length encoding and reduce-by-key on the GPU against the sequential reference
//! on random problems: 10,000 cases each by default (`TALLY_PROPERTY_CASES`), each from its own
//! seed, which a failure prints (`TALLY_PROPERTY_SEED` runs that case alone). A case draws the
//! types (keys of every type; values of every type, into themselves, their wide sum type or
//! u64 counts), the size (mostly small, a tail up to 2^22), misaligned starts (keys and values
//! apart), keys in runs mostly short with a tail of long ones from a small alphabet (so that
//! neighbouring runs may merge; NaN, -0.0 and the limits among them), the op, and values with
//! limits, NaN and infinities. Outputs are poisoned first. Integers, minima, maxima, counts
//! and keys exactly; float sums within the bound any two orders of additions satisfy, or the
//! same infinity or NaN. Without a GPU the tests skip (with TALLY_REQUIRE_GPU=1 that is a
//! failure).

mod common;
mod properties_common;
mod runs_common;
mod scan_common;

use properties_common::{element, elements, for_each_case, warm_up, Draw, WarmJob};
use runs_common::{far_sum, same};
use std::sync::Arc;
use tally::runs::reference;
use tally::{CudaDevice, DeviceBuffer, ReduceByKeyInto, RunKey, RunOp, RunsPlan, ScanValue};

fn ok<X>(r: tally::Result<X>, label: &str) -> X {
    r.unwrap_or_else(|e| panic!("{label}: {e}"))
}

/// `n` keys in runs: lengths mostly 1 to 4, one run in eight up to 5000; each run's key from
/// an alphabet of 1 to 6 keys (so that neighbouring runs may be equal and merge).
fn run_keys<K: RunKey>(d: &mut Draw, n: usize) -> Vec<K> {
    let alphabet: Vec<K> = (0..1 + d.below(6)).map(|_| element(d, false)).collect();
    let mut keys = Vec::with_capacity(n);
    while keys.len() < n {
        let len = if d.below(8) == 0 { 1 + d.below(5000) } else { 1 + d.below(4) } as usize;
        let key = d.pick(&alphabet);
        keys.extend(std::iter::repeat_n(key, len.min(n - keys.len())));
    }
    keys
}

/// A problem's keys on the device from a random start: (all keys, the start, the size).
struct Keys<K: RunKey> {
    all: Vec<K>,
    start: usize,
    buf: DeviceBuffer<K>,
}

impl<K: RunKey> Keys<K> {
    fn draw(dev: &Arc<CudaDevice>, d: &mut Draw) -> (Self, usize) {
        let n = d.mostly_small(13, 22);
        let start = d.below(4) as usize;
        let all: Vec<K> = run_keys(d, n + start);
        let buf = dev.stream().upload(&all, "property keys").expect("upload");
        (Keys { all, start, buf }, n)
    }
    fn host(&self) -> &[K] {
        &self.all[self.start..]
    }
}

/// Unique or run-length encoding of random keys of `K` into poisoned outputs.
fn runs_case<K: RunKey>(dev: &Arc<CudaDevice>, d: &mut Draw, encode: bool) -> Result<(), String> {
    let stream = dev.stream();
    let (keys, n) = Keys::<K>::draw(dev, d);
    let label = format!("{} n={n} start={} encode={encode}", K::TYPE, keys.start);
    let view = keys.buf.view();
    let view = view.slice(keys.start..).expect("in range");
    let (want_keys, want_lengths) = reference::run_length_encode(keys.host());
    let poison = K::from_bits64(0x5a5a_5a5a_5a5a_5a5a);
    let mut out = ok(stream.upload(&vec![poison; n], "poisoned keys"), &label);
    let mut counts = ok(stream.upload(&vec![u64::MAX; n], "poisoned lengths"), &label);
    let runs = if encode {
        let mut plan = ok(RunsPlan::<K>::encode(dev, n), &label);
        ok(plan.launch_encode(stream, &view, &mut out.view_mut(), &mut counts.view_mut()), &label);
        ok(plan.read(stream), &label) as usize
    } else {
        let mut plan = ok(RunsPlan::<K>::unique(dev, n), &label);
        ok(plan.launch_unique(stream, &view, &mut out.view_mut()), &label);
        ok(plan.read(stream), &label) as usize
    };
    assert_eq!(runs, want_keys.len(), "{label}: runs");
    let got = ok(stream.download(&out.view()), &label);
    assert!(same(&got[..runs], &want_keys), "{label}: keys");
    assert!(same(&got[runs..], &vec![poison; n - runs]), "{label}: keys written past the runs");
    let lengths = ok(stream.download(&counts.view()), &label);
    if encode {
        assert_eq!(&lengths[..runs], &want_lengths[..], "{label}: lengths");
    }
    let untouched = if encode { &lengths[runs..] } else { &lengths[..] };
    assert!(untouched.iter().all(|&c| c == u64::MAX), "{label}: lengths written where none belong");
    Ok(())
}

/// Reduce-by-key of random keys of `K` and values of `V` by a random op into `O`, outputs
/// poisoned, keys and values from different starts.
fn reduce_case<K: RunKey, V: ReduceByKeyInto<O>, O: ScanValue>(
    dev: &Arc<CudaDevice>,
    d: &mut Draw,
    op: RunOp,
) -> Result<(), String> {
    let stream = dev.stream();
    let (keys, n) = Keys::<K>::draw(dev, d);
    let value_start = d.below(4) as usize;
    // Float sums of values near the limits may overflow in one order and not in another.
    let tame = (op == RunOp::Sum && V::TYPE.is_float()) || d.below(2) == 0;
    let all_values: Vec<V> = elements(d, n + value_start, tame);
    let values = &all_values[value_start..];
    let label = format!(
        "{} keys, {} values into {} n={n} key start={} value start={value_start} {op:?} tame={tame}",
        K::TYPE,
        V::TYPE,
        O::TYPE,
        keys.start
    );
    let kv = keys.buf.view();
    let kv = kv.slice(keys.start..).expect("in range");
    let vbuf = ok(stream.upload(&all_values, "property values"), &label);
    let vv = vbuf.view();
    let vv = vv.slice(value_start..).expect("in range");
    let key_poison = K::from_bits64(0x5a5a_5a5a_5a5a_5a5a);
    let poison = O::from_bits64(0xa5a5_a5a5_a5a5_a5a5);
    let mut out_keys = ok(stream.upload(&vec![key_poison; n], "poisoned keys"), &label);
    let mut out_values = ok(stream.upload(&vec![poison; n], "poisoned values"), &label);
    let mut plan = ok(RunsPlan::<K, V, O>::reduce_by_key(dev, op, n), &label);
    ok(plan.launch_reduce(stream, &kv, &vv, &mut out_keys.view_mut(), &mut out_values.view_mut()), &label);
    let want = reference::reduce_by_key::<K, V, O>(keys.host(), values, op);
    let runs = match (plan.read(stream), want) {
        (Err(g), Err(w)) if g.to_string() == w.to_string() => return Ok(()),
        (Ok(runs), Ok(want)) => (runs as usize, want),
        (g, w) => return Err(format!("{label}: gpu {g:?}, reference {:?}", w.map(|w| w.0.len()))),
    };
    let (runs, (want_keys, want_values)) = runs;
    assert_eq!(runs, want_keys.len(), "{label}: runs");
    let got_keys = ok(stream.download(&out_keys.view()), &label);
    let got = ok(stream.download(&out_values.view()), &label);
    assert!(same(&got_keys[..runs], &want_keys), "{label}: keys");
    if op == RunOp::Sum && O::TYPE.is_float() {
        let (_, lengths) = reference::run_length_encode(keys.host());
        let bad = far_sum(values, &lengths, &got[..runs], &want_values);
        assert!(bad.is_none(), "{label}: sum of run {bad:?}");
    } else {
        assert!(same(&got[..runs], &want_values), "{label}: values");
    }
    assert!(same(&got_keys[runs..], &vec![key_poison; n - runs]), "{label}: keys written past the runs");
    assert!(same(&got[runs..], &vec![poison; n - runs]), "{label}: values written past the runs");
    Ok(())
}

/// `$f::<K>($args)` for key type number `$i` (0 to 9).
macro_rules! by_key_type {
    ($i:expr, $f:ident, $($args:expr),*) => {
        match $i {
            0 => $f::<u8>($($args),*),
            1 => $f::<i8>($($args),*),
            2 => $f::<u16>($($args),*),
            3 => $f::<i16>($($args),*),
            4 => $f::<u32>($($args),*),
            5 => $f::<i32>($($args),*),
            6 => $f::<u64>($($args),*),
            7 => $f::<i64>($($args),*),
            8 => $f::<f32>($($args),*),
            _ => $f::<f64>($($args),*),
        }
    };
}

/// `$f::<K, V, W>($args)` for (keys, values, wide sum) pair number `$i` (0 to [`PAIRS`] - 1):
/// keys of every type with values of their own type, and with values of another type (every
/// value type once), so that the kernels compiled stay few.
macro_rules! by_pair {
    ($i:expr, $f:ident, $($args:expr),*) => {
        match $i {
            0 => $f::<u8, u8, u64>($($args),*),
            1 => $f::<i8, i8, i64>($($args),*),
            2 => $f::<u16, u16, u64>($($args),*),
            3 => $f::<i16, i16, i64>($($args),*),
            4 => $f::<u32, u32, u64>($($args),*),
            5 => $f::<i32, i32, i64>($($args),*),
            6 => $f::<u64, u64, u64>($($args),*),
            7 => $f::<i64, i64, i64>($($args),*),
            8 => $f::<f32, f32, f32>($($args),*),
            9 => $f::<f64, f64, f64>($($args),*),
            10 => $f::<u8, f32, f32>($($args),*),
            11 => $f::<i8, u16, u64>($($args),*),
            12 => $f::<u16, i64, i64>($($args),*),
            13 => $f::<i16, f64, f64>($($args),*),
            14 => $f::<u32, i8, i64>($($args),*),
            15 => $f::<i32, u64, u64>($($args),*),
            16 => $f::<u64, i16, i64>($($args),*),
            17 => $f::<i64, u8, u64>($($args),*),
            18 => $f::<f32, i32, i64>($($args),*),
            _ => $f::<f64, u32, u64>($($args),*),
        }
    };
}
const PAIRS: u64 = 20;

/// Loads unique and run-length encoding over keys of `K`.
fn warm_keys<K: RunKey>(dev: &Arc<CudaDevice>) -> tally::Result<()> {
    RunsPlan::<K>::unique(dev, 1)?;
    RunsPlan::<K>::encode(dev, 1).map(|_| ())
}

/// Loads every reduce-by-key a pair's cases can ask for.
fn warm_pair<K: RunKey, V, W: ScanValue>(dev: &Arc<CudaDevice>) -> tally::Result<()>
where
    V: ReduceByKeyInto<V> + ReduceByKeyInto<W> + ReduceByKeyInto<u64>,
{
    for op in [RunOp::Sum, RunOp::Min, RunOp::Max] {
        RunsPlan::<K, V, V>::reduce_by_key(dev, op, 1)?;
    }
    RunsPlan::<K, V, W>::reduce_by_key(dev, RunOp::Sum, 1)?;
    RunsPlan::<K, V, u64>::reduce_by_key(dev, RunOp::Count, 1).map(|_| ())
}

/// Unique (`encode` false) or run-length encoding over random keys of every type.
fn keys_property(name: &str, salt: u64, encode: bool) {
    let Some(dev) = common::gpu() else { return };
    let dev = &dev;
    warm_up((0..10u64).map(|i| Box::new(move || by_key_type!(i, warm_keys, dev)) as WarmJob).collect());
    for_each_case(name, salt, |d| by_key_type!(d.below(10), runs_case, dev, d, encode));
}

#[test]
fn cuda_unique_equals_the_reference_on_random_problems() {
    keys_property("unique", 0x0a1c, false);
}

#[test]
fn cuda_run_length_encoding_equals_the_reference_on_random_problems() {
    keys_property("run-length encode", 0xe1c0, true);
}

/// One case of a (keys, values) pair: one op, the sum into the value type or the wide type `W`.
fn reduce_pair<K: RunKey, V, W: ScanValue>(dev: &Arc<CudaDevice>, d: &mut Draw) -> Result<(), String>
where
    V: ReduceByKeyInto<V> + ReduceByKeyInto<W> + ReduceByKeyInto<u64>,
{
    match d.below(5) {
        0 => reduce_case::<K, V, V>(dev, d, RunOp::Sum),
        1 => reduce_case::<K, V, W>(dev, d, RunOp::Sum),
        2 => reduce_case::<K, V, V>(dev, d, RunOp::Min),
        3 => reduce_case::<K, V, V>(dev, d, RunOp::Max),
        _ => reduce_case::<K, V, u64>(dev, d, RunOp::Count),
    }
}

#[test]
fn cuda_reduce_by_key_equals_the_reference_on_random_problems() {
    let Some(dev) = common::gpu() else { return };
    let dev = &dev;
    warm_up((0..PAIRS).map(|i| Box::new(move || by_pair!(i, warm_pair, dev)) as WarmJob).collect());
    for_each_case("reduce-by-key", 0x4bc, |d| by_pair!(d.below(PAIRS), reduce_pair, dev, d));
}
