//! Predicates on one element `x`: what [`crate::Backend::select`], `partition` and `count_if`
//! keep. A short expression language (docs/SELECT.md has the grammar):
//!
//! ```
//! use tally::Predicate;
//! let p = Predicate::parse("x > 0 && !(x >= 1)").unwrap();
//! assert!(p.test(0.5f32).unwrap() && !p.test(f32::NAN).unwrap());
//! assert_eq!(p.canonical(), "(x > 0) && !(x >= 1)");
//! let err = Predicate::parse("x > > 1").unwrap_err().to_string();
//! assert!(err.contains("at byte 5 of \"x > > 1\": expected a number or x"), "{err}");
//! ```
//!
//! tally parses the text once; for each element type it binds the constants to the type
//! ([`Bound`]) and compiles the result both to a C++ expression of `x` (the `TALLY_PREDICATE`
//! define of `select.cu`, so equal predicates share one compiled kernel) and to a CPU evaluator
//! that tests blocks of elements at a time. Both follow one rule, bit for bit:
//!
//! - Floats compare in the element's own precision, the constant rounded to it first (numpy's
//!   rule for Python scalars, NEP 50: `f32 > 0.1` compares with `float32(0.1)`). NaN compares
//!   false under every operator except `!=` (IEEE).
//! - Integers compare with the constant's exact value, never a truncated or wrapped one:
//!   `x > 2.5` is `x >= 3`, `x == 2.5` is false, `x < 300` is true for u8, `x > -1` true for
//!   unsigned types. numpy gives the same answers, except that it compares 64-bit integers
//!   through f64 (inexact beyond 2^53) where tally stays exact.
//! - `isnan(x)` is false and `isfinite(x)` true for integers; a bare `x` means `x != 0`.

pub mod parse;

pub(crate) mod eval;

pub use parse::{Literal, Node};

use crate::error::{Error, Result};
use crate::reduce::{CmpOp, ElementType, ReduceElement};
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// A caller's per-element test, for the CPU.
type CpuTest<T> = Arc<dyn Fn(T) -> bool + Send + Sync>;

#[derive(Clone)]
enum Kind {
    Parsed(Node),
    /// A caller's C++ expression and its CPU twin (a `CpuTest<T>` for `elem`).
    Custom {
        cpp: String,
        cpu: Arc<dyn Any + Send + Sync>,
        elem: ElementType,
    },
}

/// A condition on one element, parsed from text ([`Predicate::parse`]) or given as C++ and a
/// closure ([`Predicate::custom_cpp`]).
#[derive(Clone)]
pub struct Predicate {
    text: String,
    kind: Kind,
}

impl Predicate {
    /// Parses `text`; an [`Error::InvalidArgument`] that gives the byte of the problem
    /// (counting from 1) otherwise.
    pub fn parse(text: &str) -> Result<Predicate> {
        let node = parse::parse(text)?;
        Ok(Predicate { text: text.to_string(), kind: Kind::Parsed(node) })
    }

    /// `x != 0` (NaN included): what `numpy.nonzero` keeps.
    pub fn nonzero() -> Predicate {
        Predicate { text: "x != 0".into(), kind: Kind::Parsed(Node::Cmp(CmpOp::Ne, Literal::Int(0))) }
    }

    /// A caller's own predicate: `cpp` is a C++ expression of `x` (of the element type's C++
    /// spelling) for the GPU, compiled as written (and cached per distinct text); `cpu` the
    /// same test for the CPU. They must agree; tally cannot check that. The predicate is for
    /// elements of type `T` alone.
    pub fn custom_cpp<T: ReduceElement, F: Fn(T) -> bool + Send + Sync + 'static>(
        cpp: impl Into<String>,
        cpu: F,
    ) -> Result<Predicate> {
        let cpp = cpp.into();
        if cpp.trim().is_empty() || cpp.contains(['\n', '\r']) {
            return Err(Error::invalid("a custom predicate must be one non-empty line of C++"));
        }
        let test: CpuTest<T> = Arc::new(cpu);
        Ok(Predicate { text: cpp.clone(), kind: Kind::Custom { cpp, cpu: Arc::new(test), elem: T::TYPE } })
    }

    /// The text as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether this is a caller's C++ expression.
    pub fn is_custom(&self) -> bool {
        matches!(self.kind, Kind::Custom { .. })
    }

    /// The parsed expression (None for a custom predicate).
    pub fn node(&self) -> Option<&Node> {
        match &self.kind {
            Kind::Parsed(n) => Some(n),
            Kind::Custom { .. } => None,
        }
    }

    /// The expression written from its parse: one space around operators, parentheses where
    /// the structure needs them; a custom predicate's C++ as given.
    pub fn canonical(&self) -> String {
        match &self.kind {
            Kind::Parsed(n) => write_node(n),
            Kind::Custom { cpp, .. } => cpp.clone(),
        }
    }

    /// The predicate for elements of type `T`: constants bound to the type, constant parts
    /// folded. An error for a custom predicate made for another type.
    pub fn bind<T: ReduceElement>(&self) -> Result<Bound<T>> {
        match &self.kind {
            Kind::Parsed(n) => Ok(Bound { tree: bind_node(n), cpp: None }),
            Kind::Custom { cpp, cpu, elem } => {
                let test = cpu.downcast_ref::<CpuTest<T>>().ok_or_else(|| {
                    Error::invalid(format!("this custom predicate was made for {elem} elements, not {}", T::TYPE))
                })?;
                Ok(Bound { tree: Tree::Custom(test.clone()), cpp: Some(cpp.clone()) })
            }
        }
    }

    /// The C++ expression the kernels test for elements of `elem` ([`Bound::cpp`]).
    pub fn cpp_for(&self, elem: ElementType) -> Result<String> {
        macro_rules! by_type {
            ($($e:ident => $t:ty),*) => {
                match elem { $(ElementType::$e => self.bind::<$t>().map(|b| b.cpp()),)* }
            };
        }
        by_type!(U8 => u8, I8 => i8, U16 => u16, I16 => i16, U32 => u32, I32 => i32, U64 => u64, I64 => i64,
                 F32 => f32, F64 => f64, F16 => half::f16, BF16 => half::bf16)
    }

    /// Whether `x` passes (one element at a time; the backends test blocks).
    pub fn test<T: ReduceElement>(&self, x: T) -> Result<bool> {
        Ok(self.bind::<T>()?.test(x))
    }
}

impl fmt::Debug for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Predicate").field("text", &self.text).field("custom", &self.is_custom()).finish()
    }
}

impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

impl std::str::FromStr for Predicate {
    type Err = Error;
    fn from_str(s: &str) -> Result<Predicate> {
        Predicate::parse(s)
    }
}

/// A literal as written back.
fn write_literal(l: &Literal) -> String {
    match *l {
        Literal::Int(v) => v.to_string(),
        Literal::Float(f) if f.is_nan() => "nan".into(),
        Literal::Float(f) if f.is_infinite() => if f > 0.0 { "inf" } else { "-inf" }.into(),
        Literal::Float(f) => format!("{f:?}"),
    }
}

/// `n` written back: comparisons and sub-expressions inside `!`, `&&` and `||` in parentheses,
/// chains of one operator (`a && b && c`) without.
fn write_node(n: &Node) -> String {
    match n {
        Node::Bool(b) => b.to_string(),
        Node::Cmp(op, l) => format!("x {} {}", parse::cmp_symbol(*op), write_literal(l)),
        Node::IsNan => "isnan(x)".into(),
        Node::IsFinite => "isfinite(x)".into(),
        Node::Not(a) => format!("!{}", write_operand(a)),
        Node::And(a, b) => {
            let left = if matches!(**a, Node::And(..)) { write_node(a) } else { write_operand(a) };
            format!("{left} && {}", write_operand(b))
        }
        Node::Or(a, b) => {
            let left = if matches!(**a, Node::Or(..)) { write_node(a) } else { write_operand(a) };
            format!("{left} || {}", write_operand(b))
        }
    }
}

/// Whether `n` is written bare as an operand of an operator (else in parentheses).
fn bare_operand(n: &Node) -> bool {
    matches!(n, Node::Bool(_) | Node::IsNan | Node::IsFinite | Node::Not(_))
}

/// `n` as an operand of an operator.
fn write_operand(n: &Node) -> String {
    if bare_operand(n) {
        write_node(n)
    } else {
        format!("({})", write_node(n))
    }
}

/// How deeply the parser nests (its `MAX_DEPTH` count) reading [`write_node`]'s text of `n`:
/// the parser refuses trees deeper than that limit by this measure, so that it accepts the
/// canonical text of everything it accepts.
pub(crate) fn canonical_depth(n: &Node) -> usize {
    let operand = |a: &Node| canonical_depth(a) + !bare_operand(a) as usize;
    match n {
        Node::Bool(_) | Node::Cmp(..) | Node::IsNan | Node::IsFinite => 1,
        Node::Not(a) => 1 + operand(a),
        Node::And(a, b) | Node::Or(a, b) => {
            let same_chain = matches!((n, &**a), (Node::And(..), Node::And(..)) | (Node::Or(..), Node::Or(..)));
            let left = if same_chain { canonical_depth(a) } else { operand(a) };
            left.max(operand(b))
        }
    }
}

/// A predicate bound to an element type.
#[derive(Clone)]
pub(crate) enum Tree<T> {
    Const(bool),
    IsNan,
    IsFinite,
    /// `x OP c`, `c` of the element type.
    Cmp(CmpOp, T),
    Not(Box<Tree<T>>),
    And(Box<Tree<T>>, Box<Tree<T>>),
    Or(Box<Tree<T>>, Box<Tree<T>>),
    Custom(CpuTest<T>),
}

/// A predicate for elements of `T`: what the backends run.
#[derive(Clone)]
pub struct Bound<T> {
    pub(crate) tree: Tree<T>,
    /// A custom predicate's C++; None: written from the tree.
    cpp: Option<String>,
}

impl<T: ReduceElement> Bound<T> {
    /// The C++ expression of `x` that the kernels test (`TALLY_PREDICATE`): canonical, so
    /// that predicates equal on this type (`x>0` and `x > 0.0` for f32) give the same text,
    /// and with every constant spelled exactly (floats by their bits).
    pub fn cpp(&self) -> String {
        self.cpp.clone().unwrap_or_else(|| cpp_of(&self.tree))
    }

    /// Whether `x` passes.
    #[inline]
    pub fn test(&self, x: T) -> bool {
        self.tree.test(x)
    }

    /// Whether the predicate is constant (`Some(keep)`) for every element of the type.
    pub fn constant(&self) -> Option<bool> {
        match self.tree {
            Tree::Const(b) => Some(b),
            _ => None,
        }
    }
}

impl<T: ReduceElement> Tree<T> {
    #[inline]
    pub(crate) fn test(&self, x: T) -> bool {
        match self {
            Tree::Const(b) => *b,
            Tree::IsNan => x.is_nan(),
            Tree::IsFinite => x.to_f64().is_finite(),
            Tree::Cmp(op, c) => compare(*op, x, *c),
            Tree::Not(a) => !a.test(x),
            Tree::And(a, b) => a.test(x) && b.test(x),
            Tree::Or(a, b) => a.test(x) || b.test(x),
            Tree::Custom(f) => f(x),
        }
    }
}

/// `x OP c` in the element type (IEEE for floats: NaN passes `!=` alone).
#[inline(always)]
pub(crate) fn compare<T: PartialOrd>(op: CmpOp, x: T, c: T) -> bool {
    match op {
        CmpOp::Lt => x < c,
        CmpOp::Le => x <= c,
        CmpOp::Gt => x > c,
        CmpOp::Ge => x >= c,
        CmpOp::Eq => x == c,
        CmpOp::Ne => x != c,
    }
}

fn not<T>(a: Tree<T>) -> Tree<T> {
    match a {
        Tree::Const(b) => Tree::Const(!b),
        Tree::Not(inner) => *inner,
        a => Tree::Not(Box::new(a)),
    }
}

fn and<T>(a: Tree<T>, b: Tree<T>) -> Tree<T> {
    match (a, b) {
        (Tree::Const(false), _) | (_, Tree::Const(false)) => Tree::Const(false),
        (Tree::Const(true), x) | (x, Tree::Const(true)) => x,
        (a, b) => Tree::And(Box::new(a), Box::new(b)),
    }
}

fn or<T>(a: Tree<T>, b: Tree<T>) -> Tree<T> {
    match (a, b) {
        (Tree::Const(true), _) | (_, Tree::Const(true)) => Tree::Const(true),
        (Tree::Const(false), x) | (x, Tree::Const(false)) => x,
        (a, b) => Tree::Or(Box::new(a), Box::new(b)),
    }
}

fn bind_node<T: ReduceElement>(n: &Node) -> Tree<T> {
    let float = T::TYPE.is_float();
    match n {
        Node::Bool(b) => Tree::Const(*b),
        Node::IsNan if float => Tree::IsNan,
        Node::IsNan => Tree::Const(false),
        Node::IsFinite if float => Tree::IsFinite,
        Node::IsFinite => Tree::Const(true),
        Node::Cmp(op, lit) if float => bind_float_cmp(*op, *lit),
        Node::Cmp(op, lit) => bind_int_cmp(*op, *lit, T::TYPE.int_range()),
        Node::Not(a) => not(bind_node(a)),
        Node::And(a, b) => and(bind_node(a), bind_node(b)),
        Node::Or(a, b) => or(bind_node(a), bind_node(b)),
    }
}

/// Floats: the constant rounded to the element type (through f64, as numpy converts a Python
/// scalar); a NaN constant makes the comparison constant.
fn bind_float_cmp<T: ReduceElement>(op: CmpOp, lit: Literal) -> Tree<T> {
    let c = match lit {
        Literal::Int(v) => v as f64,
        Literal::Float(f) => f,
    };
    if c.is_nan() {
        return Tree::Const(op == CmpOp::Ne);
    }
    Tree::Cmp(op, T::from_value(c, None))
}

/// Integers: the comparison with the constant's exact value, as one with an integer in the
/// type's range `[lo, hi]`, or a constant where every element answers the same.
fn bind_int_cmp<T: ReduceElement>(op: CmpOp, lit: Literal, (lo, hi): (i128, i128)) -> Tree<T> {
    use CmpOp::*;
    let (op, v) = match lit {
        Literal::Int(v) => (op, v),
        Literal::Float(f) if f.is_nan() => return Tree::Const(op == Ne),
        // Beyond every 64-bit integer: like an infinity.
        Literal::Float(f) if f.is_infinite() || f.abs() >= 1e30 => {
            return Tree::Const(match op {
                Lt | Le => f > 0.0,
                Gt | Ge => f < 0.0,
                Eq => false,
                Ne => true,
            })
        }
        Literal::Float(f) => {
            let fl = f.floor();
            let v = fl as i128;
            if fl == f {
                (op, v)
            } else {
                // Strictly between v and v + 1: x < f is x <= v, x > f is x > v.
                match op {
                    Lt | Le => (Le, v),
                    Gt | Ge => (Gt, v),
                    Eq => return Tree::Const(false),
                    Ne => return Tree::Const(true),
                }
            }
        }
    };
    let always = |b: bool| Tree::Const(b);
    match op {
        Lt if v <= lo => always(false),
        Lt if v > hi => always(true),
        Le if v < lo => always(false),
        Le if v >= hi => always(true),
        Gt if v >= hi => always(false),
        Gt if v < lo => always(true),
        Ge if v > hi => always(false),
        Ge if v <= lo => always(true),
        Eq if v < lo || v > hi => always(false),
        Ne if v < lo || v > hi => always(true),
        _ => Tree::Cmp(op, T::from_value(v as f64, Some(v))),
    }
}

/// A constant of the element type as C++: floats by their bits, integers with a suffix wide
/// enough for any value of the type (the element converts to it exactly).
fn cpp_constant<T: ReduceElement>(c: T) -> String {
    match T::TYPE {
        // 16-bit floats are compared as their exact f32 value (the kernels' `x` is that f32).
        ElementType::F32 | ElementType::F16 | ElementType::BF16 => {
            format!("__int_as_float({:#010x})", (c.to_f64() as f32).to_bits())
        }
        ElementType::F64 => format!("__longlong_as_double({:#018x}ll)", c.to_f64().to_bits()),
        ElementType::U64 => format!("{}ull", c.to_i128()),
        _ => match c.to_i128() {
            v if v == i64::MIN as i128 => "(-9223372036854775807ll - 1)".into(),
            v if v < 0 => format!("({v}ll)"),
            v => format!("{v}ll"),
        },
    }
}

/// The tree as one parenthesised C++ expression of `x`.
fn cpp_of<T: ReduceElement>(t: &Tree<T>) -> String {
    match t {
        Tree::Const(b) => b.to_string(),
        Tree::IsNan => "isnan(x)".into(),
        Tree::IsFinite => "isfinite(x)".into(),
        Tree::Cmp(op, c) => format!("(x {} {})", parse::cmp_symbol(*op), cpp_constant(*c)),
        Tree::Not(a) => format!("!{}", cpp_of(a)),
        Tree::And(a, b) => format!("({} && {})", cpp_of(a), cpp_of(b)),
        Tree::Or(a, b) => format!("({} || {})", cpp_of(a), cpp_of(b)),
        Tree::Custom(_) => unreachable!("a custom predicate carries its own C++"),
    }
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
