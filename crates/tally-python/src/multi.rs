//! Device sets: `tally.DeviceSet`, several GPUs of this process (or this process as one rank of
//! a set launched one process per GPU) running each primitive over sharded input, the parts
//! combined through NCCL (`tally::multi`). The input of a call is one host array, split evenly
//! over the ranks, or one array per device of this process in rank order, host or device memory
//! (each device array on its own device). Results come back on the host; every call waits.
//!
//! Histograms and reductions of shards resident on the devices keep their set's plans between
//! calls, as one device's calls keep theirs (`plans.rs`), where this process
//! holds every rank. Across processes they do not: a plan kept in one process and not in
//! another would have them run different collectives.

use crate::array::{parse_dtype, Held, Target};
use crate::dispatch;
use crate::error::{to_py, type_error, value_error};
use crate::plans::KeptPlans;
use crate::reduce::{parse_op, to_python};
use cudarc::driver::DeviceRepr;
use pyo3::prelude::*;
use pyo3::types::PyByteArray;
use std::sync::{Arc, Mutex, MutexGuard};
use tally::multi::{DetachedSetHistogramPlan, DetachedSetReducePlan, DeviceSet, Shards};
use tally::{
    CudaDevice, HistogramSpec, Input, Predicate, ReduceElement, ReduceOptions, Sample, ScanElement, ScanInto, ScanOp,
    ScanOptions, ScanValue, SelectElement, Strategy,
};

/// A device set, as `tally.DeviceSet` holds it. NCCL's communicators take one call at a time:
/// calls from several Python threads wait for each other here.
#[pyclass(name = "DeviceSet", module = "tally._native", frozen)]
pub struct PyDeviceSet {
    /// The set's plans kept between calls, detached from the set beside them: taken only while
    /// `set` is held (so in that order); declared first, so that the plans go before the set's
    /// communicators.
    plans: Mutex<KeptPlans<SetPlanKey>>,
    set: Mutex<DeviceSet>,
}

/// Set plans kept at most: past that the cache starts over.
const MAX_SET_PLANS: usize = 16;

/// What identifies a kept set plan: the primitive with its element type and options, and the
/// lengths of this process's shards.
type SetPlanKey = (String, Vec<usize>);

impl<T: DeviceRepr> HeldShards<T> {
    /// The key of a kept set plan for these shards (`what`: the primitive, its types and
    /// options), where a set plan may be kept: every shard resident on its device, and every
    /// rank in this process.
    fn plan_key(&self, set: &DeviceSet, what: String) -> Option<SetPlanKey> {
        let resident = !self.split && self.held.iter().all(|h| matches!(h, Held::Device(_)));
        let one_process = set.ranks().len() == set.world_size();
        (resident && one_process).then(|| (what, self.held.iter().map(Held::len).collect()))
    }
}

/// The arrays held for one call: host memory by address, device arrays wrapped without a copy
/// on their device's stream.
struct HeldShards<T> {
    split: bool,
    held: Vec<Held<T>>,
}

impl<T: DeviceRepr> HeldShards<T> {
    fn shards(&self) -> Shards<'_, T> {
        if self.split {
            match self.held[0].input() {
                Input::Host(s) => Shards::Split(s),
                Input::Device(v) => Shards::Local(vec![Input::Device(v)]),
            }
        } else {
            Shards::Local(self.held.iter().map(Held::input).collect())
        }
    }
}

impl PyDeviceSet {
    fn holding(set: DeviceSet) -> Self {
        PyDeviceSet { plans: Mutex::new(KeptPlans::new(MAX_SET_PLANS)), set: Mutex::new(set) }
    }

    fn set(&self) -> MutexGuard<'_, DeviceSet> {
        self.set.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The kept set plans (take them while holding `set()`).
    fn plans(&self) -> MutexGuard<'_, KeptPlans<SetPlanKey>> {
        self.plans.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Reads the Python layer's `(split, parts, dtype)`.
    fn args<'py>(&self, arg: &Bound<'py, PyAny>) -> PyResult<(bool, Vec<Bound<'py, PyAny>>, tally::ElementType)> {
        let (split, parts, dtype): (bool, Vec<Bound<'py, PyAny>>, String) =
            arg.extract().map_err(|_| type_error("expected (split, [(address, elements, on_host), ...], dtype)"))?;
        let devices = self.set().devices().len();
        if split && parts.len() != 1 {
            return Err(value_error("an even split takes one host array"));
        }
        if !split && parts.len() != devices {
            return Err(value_error(format!(
                "{} arrays for the {devices} devices of this process: one per device, in rank order",
                parts.len()
            )));
        }
        Ok((split, parts, parse_dtype(&dtype)?))
    }

    /// Holds the arrays of one call. A device array must be on its rank's device (the library
    /// checks the address); the devices that hold one are synchronised first, so that the
    /// caller's queued work on them (on any stream) is done before the set reads them.
    fn hold<T: DeviceRepr>(&self, split: bool, parts: &[Bound<'_, PyAny>]) -> PyResult<HeldShards<T>> {
        let devices: Vec<Arc<CudaDevice>> = self.set().devices().into_iter().cloned().collect();
        let mut held = Vec::with_capacity(parts.len());
        for (i, (p, dev)) in parts.iter().zip(&devices).enumerate() {
            let h = Held::<T>::new(p, &Target::Cuda(dev.clone()), &format!("shard {i}"))?;
            if split && matches!(h, Held::Device(_)) {
                return Err(value_error(
                    "an even split takes a host array; pass device arrays as a list, one per device",
                ));
            }
            if matches!(h, Held::Device(_)) {
                dev.cuda_context()
                    .synchronize()
                    .map_err(|e| to_py(tally::Error::Cuda { call: "cuCtxSynchronize".into(), source: e }))?;
            }
            held.push(h);
        }
        Ok(HeldShards { split, held })
    }
}

#[pymethods]
impl PyDeviceSet {
    /// The devices of these ordinals (every device of the host where `None`), in one process.
    #[new]
    #[pyo3(signature = (ordinals=None))]
    fn new(py: Python<'_>, ordinals: Option<Vec<usize>>) -> PyResult<Self> {
        let set = py.detach(|| match ordinals {
            None => DeviceSet::all(),
            Some(o) => DeviceSet::new(&o),
        });
        Ok(PyDeviceSet::holding(set.map_err(to_py)?))
    }

    /// This process as one rank of a set launched one process per GPU (`RANK`, `WORLD_SIZE`,
    /// `LOCAL_RANK`, and `TALLY_NCCL_ID` or `TALLY_NCCL_ID_FILE`).
    #[staticmethod]
    fn from_env(py: Python<'_>) -> PyResult<Self> {
        Ok(PyDeviceSet::holding(py.detach(DeviceSet::from_env).map_err(to_py)?))
    }

    /// The ordinals of this process's devices, in rank order.
    fn ordinals(&self) -> Vec<usize> {
        self.set().devices().iter().map(|d| d.cuda_context().ordinal()).collect()
    }

    /// The ranks of this process's devices.
    fn ranks(&self) -> Vec<usize> {
        self.set().ranks()
    }

    /// How many set plans are kept for the next calls, and how many calls found theirs kept
    /// (tests).
    fn kept_plans(&self) -> (usize, u64) {
        let _set = self.set();
        self.plans().counts()
    }

    /// How many ranks the whole set has.
    fn world_size(&self) -> usize {
        self.set().world_size()
    }

    /// Elements of this process's shards: the length of its `cumsum` (the whole input in one
    /// process; this process's part of an even split otherwise).
    fn local_len(&self, x: &Bound<'_, PyAny>) -> PyResult<usize> {
        let (split, parts, _) = self.args(x)?;
        let lens = parts
            .iter()
            .map(|p| p.extract::<(u64, usize, bool)>().map(|(_, n, _)| n))
            .collect::<PyResult<Vec<usize>>>()
            .map_err(|_| type_error("expected (address, elements, on_host) per shard"))?;
        Ok(local_len(&self.set(), split, &lens))
    }

    /// Counts the shards into `bins` even bins of [lo, hi) (the last bin closed, as numpy's)
    /// into `counts` (an int64 numpy array of `bins`); returns (below, above, nan). `keep`:
    /// whether a set plan may be kept for the next call (not for a range taken from the data,
    /// which each call would key anew).
    #[pyo3(signature = (x, bins, lo, hi, counts, keep=true))]
    #[allow(clippy::too_many_arguments)]
    fn histogram(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        bins: u32,
        lo: f64,
        hi: f64,
        counts: &Bound<'_, PyAny>,
        keep: bool,
    ) -> PyResult<(u64, u64, u64)> {
        let (split, parts, dtype) = self.args(x)?;
        let spec = HistogramSpec::even(bins, lo, hi);
        let mut out = HostOut::<i64>::new(counts, bins as usize)?;
        let h = dispatch!(dtype, "a histogram", T => {
            let held = self.hold::<T>(split, &parts)?;
            py.detach(|| {
                let set = self.set();
                let what = format!("histogram {dtype:?} {bins} {:x} {:x}", lo.to_bits(), hi.to_bits());
                match held.plan_key(&set, what).filter(|_| keep) {
                    Some(key) => kept_histogram(&set, &mut self.plans(), key, &held, &spec),
                    None => histogram_of(&set, &held, &spec),
                }
            })
            .map_err(to_py)
        }, [U8: u8, U16: u16, I32: i32, U32: u32, I64: i64, F32: f32, F64: f64, F16: tally::half::f16,
            BF16: tally::half::bf16])?;
        for (o, &c) in out.slice().iter_mut().zip(&h.counts[0]) {
            *o = i64::try_from(c).map_err(|_| value_error("a count above 2^63"))?;
        }
        Ok((h.below[0], h.above[0], h.nan[0]))
    }

    /// Reduces the shards by `op` (as `tally.reduce`'s functions name them).
    #[pyo3(signature = (x, op, exact=false, skip_nan=false, compare=None))]
    fn reduce(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        op: &str,
        exact: bool,
        skip_nan: bool,
        compare: Option<(String, f64)>,
    ) -> PyResult<Py<PyAny>> {
        let (split, parts, dtype) = self.args(x)?;
        let op = parse_op(op, compare)?;
        let options = ReduceOptions { exact, skip_nan };
        let r = dispatch!(dtype, "a reduction", T => {
            let held = self.hold::<T>(split, &parts)?;
            py.detach(|| {
                let set = self.set();
                match held.plan_key(&set, format!("reduce {dtype:?} {op:?} {exact} {skip_nan}")) {
                    Some(key) => kept_reduce(&set, &mut self.plans(), key, &held, op, options),
                    None => reduce_of(&set, &held, op, options),
                }
            })
            .map_err(to_py)
        })?;
        to_python(py, &r)
    }

    /// The running sum of the shards (numpy's `cumsum` types) into `out`, a numpy array as long
    /// as this process's shards together.
    fn cumsum(&self, py: Python<'_>, x: &Bound<'_, PyAny>, exclusive: bool, out: &Bound<'_, PyAny>) -> PyResult<()> {
        let (split, parts, dtype) = self.args(x)?;
        let options = if exclusive { ScanOptions::exclusive() } else { ScanOptions::inclusive() };
        dispatch!(dtype, "a scan", T => {
            let held = self.hold::<T>(split, &parts)?;
            type O = <T as ScanElement>::Wide;
            let lens: Vec<usize> = held.held.iter().map(Held::len).collect();
            let len = local_len(&self.set(), held.split, &lens);
            let mut out = HostOut::<O>::new(out, len)?;
            py.detach(|| scan_of::<T, O>(&self.set(), &held, out.slice(), options)).map_err(to_py)
        })
    }

    /// The elements of the shards that pass `predicate`, in order, as the bytes of a new array.
    fn select<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        predicate: &str,
    ) -> PyResult<Bound<'py, PyByteArray>> {
        let (split, parts, dtype) = self.args(x)?;
        let predicate = Predicate::parse(predicate).map_err(to_py)?;
        dispatch!(dtype, "a selection", T => {
            let held = self.hold::<T>(split, &parts)?;
            let kept = py.detach(|| self.set().select(held.shards(), &predicate)).map_err(to_py)?;
            Ok(PyByteArray::new(py, bytes_of(&kept)))
        })
    }
}

fn histogram_of<T: Sample>(
    set: &DeviceSet,
    held: &HeldShards<T>,
    spec: &HistogramSpec,
) -> tally::Result<tally::Histogram> {
    set.histogram(held.shards(), spec, Strategy::Auto)
}

/// A histogram by the set's plan kept for `key` (made, where none is kept, from these shards),
/// kept again after the call; a plan whose run fails is dropped.
fn kept_histogram<T: Sample>(
    set: &DeviceSet,
    plans: &mut KeptPlans<SetPlanKey>,
    key: SetPlanKey,
    held: &HeldShards<T>,
    spec: &HistogramSpec,
) -> tally::Result<tally::Histogram> {
    let mut plan = match plans.take::<DetachedSetHistogramPlan<T>>(&key) {
        Some(kept) => kept.attach(set)?,
        None => set.histogram_plan(held.shards(), spec, Strategy::Auto)?,
    };
    let h = plan.run(held.shards())?;
    plans.keep(key, plan.detach());
    Ok(h)
}

/// A reduction by the set's plan kept for `key`, as [`kept_histogram`].
fn kept_reduce<T: ReduceElement>(
    set: &DeviceSet,
    plans: &mut KeptPlans<SetPlanKey>,
    key: SetPlanKey,
    held: &HeldShards<T>,
    op: tally::ReduceOp,
    options: ReduceOptions,
) -> tally::Result<tally::Reduction> {
    let mut plan = match plans.take::<DetachedSetReducePlan<T>>(&key) {
        Some(kept) => kept.attach(set)?,
        None => set.reduce_plan(held.shards(), op, options)?,
    };
    let r = plan.run(held.shards())?;
    plans.keep(key, plan.detach());
    Ok(r)
}

fn reduce_of<T: ReduceElement>(
    set: &DeviceSet,
    held: &HeldShards<T>,
    op: tally::ReduceOp,
    options: ReduceOptions,
) -> tally::Result<tally::Reduction> {
    set.reduce(held.shards(), op, options)
}

/// Elements of this process's shards of these lengths (see `PyDeviceSet::local_len`).
fn local_len(set: &DeviceSet, split: bool, lens: &[usize]) -> usize {
    if split {
        let p = tally::multi::shard::split_points(lens[0], set.world_size());
        set.ranks().iter().map(|&r| p[r + 1] - p[r]).sum()
    } else {
        lens.iter().sum()
    }
}

fn scan_of<T: ScanInto<O>, O: ScanValue>(
    set: &DeviceSet,
    held: &HeldShards<T>,
    out: &mut [O],
    options: ScanOptions,
) -> tally::Result<()> {
    set.scan_to_host(held.shards(), out, ScanOp::Sum, options)
}

/// Plain numeric elements as their bytes.
fn bytes_of<T: SelectElement>(values: &[T]) -> &[u8] {
    // SAFETY: the selectable types are plain numbers (no padding, every byte initialised); the
    // bytes borrow `values` for as long as it lives.
    unsafe { std::slice::from_raw_parts(values.as_ptr() as *const u8, std::mem::size_of_val(values)) }
}

/// A numpy output the Python layer allocated for one call: `len` elements of `O` at `address`,
/// written in place.
struct HostOut<O> {
    address: u64,
    len: usize,
    _elements: std::marker::PhantomData<fn(O)>,
}

impl<O> HostOut<O> {
    /// Reads `(address, elements, on_host)` for `len` elements.
    fn new(obj: &Bound<'_, PyAny>, len: usize) -> PyResult<Self> {
        let (address, n, on_host): (u64, usize, bool) =
            obj.extract().map_err(|_| type_error("the output: expected (address, elements, on_host)"))?;
        if !on_host {
            return Err(value_error("a device set writes its results to the host"));
        }
        if n != len {
            return Err(value_error(format!("the output holds {n} elements, {len} are needed")));
        }
        if len > 0 && (address == 0 || !address.is_multiple_of(std::mem::align_of::<O>() as u64)) {
            return Err(value_error(format!("the output's address {address:#x} is not aligned")));
        }
        Ok(HostOut { address, len, _elements: std::marker::PhantomData })
    }

    /// The elements.
    fn slice(&mut self) -> &mut [O] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: the Python layer allocated this C-contiguous numpy array of `O` for this call
        // alone and holds it until the call returns; `new` checked its address and length, and
        // this borrow of `self` is the only reference to it while it lives.
        unsafe { std::slice::from_raw_parts_mut(self.address as *mut O, self.len) }
    }
}
