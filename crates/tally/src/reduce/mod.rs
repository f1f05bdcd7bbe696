//! Device-wide reductions: sum, min, max, minmax, argmin, argmax, mean and count over host or
//! device-resident input of every common numeric type, on the CUDA and CPU backends, with an
//! exact mode for float sums (the correctly rounded exact sum, as `math.fsum` gives) and custom
//! reductions (a C++ expression on the GPU, a closure on the CPU). docs/REDUCE.md has the rules.
//!
//! ```
//! use tally::{Backend, ReduceOp, ReduceOptions};
//! let backend = Backend::cpu();
//! let xs = [1.0f32, 1e30, -1e30, 2.0];
//! // The plain sum adds in f64, in an order fixed by the launch shape: the 1 may be lost next
//! // to 1e30. The exact sum is the correctly rounded sum of the elements.
//! let plain = backend.sum(&xs).unwrap();
//! assert!(plain == 2.0 || plain == 3.0);
//! let exact = backend.reduce(&xs, ReduceOp::Sum, ReduceOptions::exact()).unwrap();
//! assert_eq!(exact.value, 3.0);
//! assert_eq!(backend.argmax(&xs).unwrap(), 1);
//! ```

pub mod cpu;
pub mod cuda;
pub mod element;
pub mod exact;
pub(crate) mod partial;
pub mod policy;
pub mod reference;
pub mod stream;

pub use cuda::ReducePlan;
pub use element::{ElementType, ReduceElement};
pub use exact::ExactSum;

use crate::device::staging::{streams_host_input, SliceSource};
use crate::device::{Backend, DeviceInput, Input};
use crate::error::{Error, Result};
use serde::Serialize;

/// A comparison `x OP value` that [`ReduceOp::Count`] counts the elements passing. Integers are
/// compared exactly (not through f64); NaN passes only `Ne`, as IEEE says.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Compare {
    /// The comparison.
    pub op: CmpOp,
    /// The right-hand side.
    pub value: f64,
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CmpOp {
    /// `x < value`.
    Lt,
    /// `x <= value`.
    Le,
    /// `x > value`.
    Gt,
    /// `x >= value`.
    Ge,
    /// `x == value`.
    Eq,
    /// `x != value`.
    Ne,
}

impl CmpOp {
    /// Every comparison and its symbol, the two-character ones first (a prefix match of
    /// "<=" must not stop at "<").
    pub const SYMBOLS: [(&'static str, CmpOp); 6] = [
        ("<=", CmpOp::Le),
        (">=", CmpOp::Ge),
        ("==", CmpOp::Eq),
        ("!=", CmpOp::Ne),
        ("<", CmpOp::Lt),
        (">", CmpOp::Gt),
    ];

    /// The comparison written `symbol` (`<`, `<=`, `>`, `>=`, `==`, `!=`).
    pub fn from_symbol(symbol: &str) -> Option<CmpOp> {
        CmpOp::SYMBOLS.iter().find(|(s, _)| *s == symbol).map(|&(_, op)| op)
    }
}

impl Compare {
    /// `x OP value`.
    pub fn new(op: CmpOp, value: f64) -> Self {
        Compare { op, value }
    }
}

/// What to reduce to.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReduceOp {
    /// The sum: exact (i128) for integers; f64 accumulation for floats, or the exact sum with
    /// [`ReduceOptions::exact`].
    Sum,
    /// The smallest element.
    Min,
    /// The largest element.
    Max,
    /// The smallest and the largest, in one pass.
    MinMax,
    /// The index of the first smallest element.
    ArgMin,
    /// The index of the first largest element.
    ArgMax,
    /// The sum divided by the number of elements summed.
    Mean,
    /// How many elements pass a comparison.
    Count(Compare),
}

impl ReduceOp {
    /// The op's name: "sum", "min", ...
    pub fn name(&self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
            ReduceOp::MinMax => "minmax",
            ReduceOp::ArgMin => "argmin",
            ReduceOp::ArgMax => "argmax",
            ReduceOp::Mean => "mean",
            ReduceOp::Count(_) => "count",
        }
    }

    /// The op named `name` (what [`ReduceOp::name`] gives); `count` takes `compare`, which
    /// no other op takes.
    ///
    /// ```
    /// use tally::{CmpOp, Compare, ReduceOp};
    /// assert_eq!(ReduceOp::from_name("argmax", None).unwrap(), ReduceOp::ArgMax);
    /// let gt = Compare::new(CmpOp::from_symbol(">").unwrap(), 0.5);
    /// assert_eq!(ReduceOp::from_name("count", Some(gt)).unwrap(), ReduceOp::Count(gt));
    /// assert!(ReduceOp::from_name("count", None).is_err());
    /// ```
    pub fn from_name(name: &str, compare: Option<Compare>) -> Result<ReduceOp> {
        let op = match name {
            "sum" => ReduceOp::Sum,
            "min" => ReduceOp::Min,
            "max" => ReduceOp::Max,
            "minmax" => ReduceOp::MinMax,
            "argmin" => ReduceOp::ArgMin,
            "argmax" => ReduceOp::ArgMax,
            "mean" => ReduceOp::Mean,
            "count" => match compare {
                Some(c) => return Ok(ReduceOp::Count(c)),
                None => return Err(Error::invalid("count needs a comparison (such as > 0)")),
            },
            _ => {
                return Err(Error::invalid(format!(
                    "unknown op '{name}' (expected sum, min, max, minmax, argmin, argmax, mean or count)"
                )))
            }
        };
        if compare.is_some() {
            return Err(Error::invalid(format!("a comparison goes with count, not {name}")));
        }
        Ok(op)
    }

    /// Whether an empty input has no value for this op (min, max and their kin).
    pub fn needs_elements(&self) -> bool {
        matches!(self, ReduceOp::Min | ReduceOp::Max | ReduceOp::MinMax | ReduceOp::ArgMin | ReduceOp::ArgMax)
    }
}

/// How to reduce.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReduceOptions {
    /// Skip NaNs, as numpy's `nansum`/`nanmin`/`nanargmin` do, and report how many were skipped.
    /// Default: NaN propagates (sum, min, max give NaN; argmin and argmax the first NaN's index).
    pub skip_nan: bool,
    /// Float sums and means: the exact sum of the inputs, correctly rounded to f64, bitwise the
    /// same on every backend, device and run. Integer sums are always exact.
    pub exact: bool,
}

impl ReduceOptions {
    /// The exact float sum.
    pub fn exact() -> Self {
        ReduceOptions { exact: true, skip_nan: false }
    }

    /// NaNs skipped.
    pub fn skip_nan() -> Self {
        ReduceOptions { skip_nan: true, exact: false }
    }

    /// These options with NaNs skipped or not.
    pub fn with_skip_nan(mut self, skip: bool) -> Self {
        self.skip_nan = skip;
        self
    }

    /// These options with the exact float sum or not.
    pub fn with_exact(mut self, exact: bool) -> Self {
        self.exact = exact;
        self
    }
}

/// The result of a reduction, for every op and type alike (what a CLI prints as JSON).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reduction {
    /// The op.
    pub op: ReduceOp,
    /// The element type.
    pub dtype: ElementType,
    /// Elements reduced (NaNs skipped included).
    pub n: u64,
    /// Sum, mean, min, max (for minmax: the min), or the count, as f64. NaN where NaN propagates.
    pub value: f64,
    /// The exact integer value, for integer sums, mins and maxes (for minmax: the min).
    pub exact: Option<i128>,
    /// Minmax: the max, as f64.
    pub max: Option<f64>,
    /// Minmax over integers: the exact max.
    pub max_exact: Option<i128>,
    /// Argmin, argmax: the index of the first extreme element (of the first NaN, where NaN
    /// propagates).
    pub index: Option<u64>,
    /// Count: the elements passing the comparison.
    pub count: Option<u64>,
    /// NaNs skipped (with `skip_nan`; 0 otherwise).
    pub nan_skipped: u64,
    /// Whether `value` is the correctly rounded exact sum (or a mean of it).
    pub exact_sum: bool,
    /// "cpu", "cuda" or "reference".
    pub backend: &'static str,
}

impl Reduction {
    pub(crate) fn new(op: ReduceOp, dtype: ElementType, n: u64, backend: &'static str) -> Self {
        Reduction {
            op,
            dtype,
            n,
            value: 0.0,
            exact: None,
            max: None,
            max_exact: None,
            index: None,
            count: None,
            nan_skipped: 0,
            exact_sum: false,
            backend,
        }
    }

    /// The same result, ignoring which backend produced it. For min, max and minmax, -0.0 and
    /// +0.0 are the same value: which of the two an extremum of both zeros is may differ
    /// between backends (the GPU's f32 kernels take the hardware's min and max).
    pub fn same_result(&self, other: &Reduction) -> bool {
        let zeros = matches!(self.op, ReduceOp::Min | ReduceOp::Max | ReduceOp::MinMax);
        let f = |a: f64, b: f64| {
            a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()) || (zeros && a == 0.0 && b == 0.0)
        };
        let g = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => f(a, b),
            (a, b) => a.is_none() && b.is_none(),
        };
        // Debug, so that a count against NaN equals itself.
        format!("{:?}", self.op) == format!("{:?}", other.op)
            && self.dtype == other.dtype
            && self.n == other.n
            && f(self.value, other.value)
            && self.exact == other.exact
            && g(self.max, other.max)
            && self.max_exact == other.max_exact
            && self.index == other.index
            && self.count == other.count
            && self.nan_skipped == other.nan_skipped
            && self.exact_sum == other.exact_sum
    }
}

/// The error an op without a value for an empty input returns.
pub(crate) fn empty_error(op: &ReduceOp) -> Error {
    Error::EmptyInput(format!("{} of an empty input has no value (the input is empty)", op.name()))
}

/// The error of argmin/argmax over NaNs alone with `skip_nan`.
pub(crate) fn all_nan_error(op: &ReduceOp) -> Error {
    Error::EmptyInput(format!("{} skipping NaNs: every element is NaN", op.name()))
}

/// Rejects options that mean nothing for `op` and `T`.
pub(crate) fn validate<T: ReduceElement>(op: &ReduceOp, options: &ReduceOptions) -> Result<()> {
    if options.exact && !matches!(op, ReduceOp::Sum | ReduceOp::Mean) {
        return Err(Error::invalid(format!("exact applies to sum and mean, not {}", op.name())));
    }
    let _ = T::TYPE;
    Ok(())
}

/// A caller's reduction: `a OP b` with an identity, as a C++ expression for the GPU and as a
/// closure for the CPU. The operation must be associative and commutative (elements are
/// combined in an order that depends on the launch shape, not left to right), and `identity`
/// must be its neutral element; anything else gives results that depend on the backend.
pub struct CustomOp<T, F> {
    /// A C++ expression of `a` and `b` (of the element type), e.g. `max(abs(a), abs(b))`.
    pub cuda_expr: String,
    /// The identity as C++, e.g. `0`.
    pub cuda_identity: String,
    /// The identity, for the CPU.
    pub identity: T,
    /// The operation, for the CPU.
    pub cpu: F,
}

impl<T, F: Fn(T, T) -> T + Sync> CustomOp<T, F> {
    /// A custom reduction: `cuda_expr` and `cuda_identity` for the GPU, `identity` and `cpu` for
    /// the CPU; they must agree.
    pub fn new(cuda_expr: impl Into<String>, cuda_identity: impl Into<String>, identity: T, cpu: F) -> Self {
        CustomOp { cuda_expr: cuda_expr.into(), cuda_identity: cuda_identity.into(), identity, cpu }
    }
}

impl Backend {
    /// Reduces `input` (host slice, [`crate::Buffer`] or device memory) by `op`.
    pub fn reduce<'a, T: ReduceElement>(
        &self,
        input: impl Into<Input<'a, T>>,
        op: ReduceOp,
        options: ReduceOptions,
    ) -> Result<Reduction> {
        validate::<T>(&op, &options)?;
        match (self, input.into()) {
            (Backend::Cpu, Input::Host(s)) => cpu::reduce(s, op, options),
            (Backend::Cpu, Input::Device(_)) => Err(Error::WrongBackend { buffer: "cuda", backend: "cpu" }),
            (Backend::Cuda(dev), Input::Host(s))
                if streams_host_input(dev.info().total_memory, std::mem::size_of_val(s), dev.tuning()) =>
            {
                self.reduce_stream(&mut SliceSource::new(s), op, options)
            }
            (Backend::Cuda(dev), input) => {
                let data = DeviceInput::new(dev.stream(), input, "reduction input")?;
                let view = data.view();
                ReducePlan::<T>::new(dev, op, options, view.len())?.run(&view)
            }
        }
    }

    /// Reduces `input` by a caller's associative, commutative operation (see [`CustomOp`]).
    pub fn reduce_custom<'a, T: ReduceElement, F: Fn(T, T) -> T + Sync>(
        &self,
        input: impl Into<Input<'a, T>>,
        op: &CustomOp<T, F>,
    ) -> Result<T> {
        let input = input.into();
        if input.is_empty() {
            return Ok(op.identity);
        }
        match (self, input) {
            (Backend::Cpu, Input::Host(s)) => Ok(cpu::custom(s, op.identity, &op.cpu)),
            (Backend::Cpu, Input::Device(_)) => Err(Error::WrongBackend { buffer: "cuda", backend: "cpu" }),
            (Backend::Cuda(dev), input) => {
                let data = DeviceInput::new(dev.stream(), input, "reduction input")?;
                let view = data.view();
                let mut plan = ReducePlan::<T>::custom(dev, view.len(), &op.cuda_expr, &op.cuda_identity)?;
                plan.launch(dev.stream(), &view)?;
                plan.read_custom(dev.stream())
            }
        }
    }

    /// The sum: exact (i128) for integers, f64 accumulation for floats (see
    /// [`Backend::sum_exact`]). NaN propagates.
    pub fn sum<'a, T: ReduceElement>(&self, input: impl Into<Input<'a, T>>) -> Result<T::Sum> {
        Ok(T::sum_of(&self.reduce(input, ReduceOp::Sum, ReduceOptions::default())?))
    }

    /// The exact sum, correctly rounded to f64 (`math.fsum`), the same bits everywhere.
    pub fn sum_exact<'a, T: ReduceElement>(&self, input: impl Into<Input<'a, T>>) -> Result<f64> {
        Ok(self.reduce(input, ReduceOp::Sum, ReduceOptions::exact())?.value)
    }

    /// The smallest element (NaN if there is one); an error for an empty input.
    pub fn min<'a, T: ReduceElement>(&self, input: impl Into<Input<'a, T>>) -> Result<T> {
        let r = self.reduce(input, ReduceOp::Min, ReduceOptions::default())?;
        Ok(T::from_value(r.value, r.exact))
    }

    /// The largest element (NaN if there is one); an error for an empty input.
    pub fn max<'a, T: ReduceElement>(&self, input: impl Into<Input<'a, T>>) -> Result<T> {
        let r = self.reduce(input, ReduceOp::Max, ReduceOptions::default())?;
        Ok(T::from_value(r.value, r.exact))
    }

    /// The smallest and the largest element, in one pass.
    pub fn minmax<'a, T: ReduceElement>(&self, input: impl Into<Input<'a, T>>) -> Result<(T, T)> {
        let r = self.reduce(input, ReduceOp::MinMax, ReduceOptions::default())?;
        Ok((T::from_value(r.value, r.exact), T::from_value(r.max.unwrap_or(f64::NAN), r.max_exact)))
    }

    /// The index of the first smallest element (of the first NaN, if any).
    pub fn argmin<'a, T: ReduceElement>(&self, input: impl Into<Input<'a, T>>) -> Result<u64> {
        let r = self.reduce(input, ReduceOp::ArgMin, ReduceOptions::default())?;
        Ok(r.index.expect("argmin has an index"))
    }

    /// The index of the first largest element (of the first NaN, if any).
    pub fn argmax<'a, T: ReduceElement>(&self, input: impl Into<Input<'a, T>>) -> Result<u64> {
        let r = self.reduce(input, ReduceOp::ArgMax, ReduceOptions::default())?;
        Ok(r.index.expect("argmax has an index"))
    }

    /// The mean (NaN for an empty input, as numpy).
    pub fn mean<'a, T: ReduceElement>(&self, input: impl Into<Input<'a, T>>) -> Result<f64> {
        Ok(self.reduce(input, ReduceOp::Mean, ReduceOptions::default())?.value)
    }

    /// How many elements pass `x OP value`.
    pub fn count<'a, T: ReduceElement>(&self, input: impl Into<Input<'a, T>>, cmp: Compare) -> Result<u64> {
        let r = self.reduce(input, ReduceOp::Count(cmp), ReduceOptions::default())?;
        Ok(r.count.expect("count has a count"))
    }
}
