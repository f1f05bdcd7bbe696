//! Every selection as a plain sequential loop, the yardstick the tests hold both backends to.
//! Predicates are evaluated here from the parsed expression itself, comparing by value as
//! docs/SELECT.md states the rule, apart from the binding and the evaluators the backends use.

use super::SelectFlag;
use crate::predicate::{Literal, Node, Predicate};
use crate::reduce::{CmpOp, Compare, ReduceElement};
use std::cmp::Ordering;

/// Whether `x` passes `p` (a custom predicate: its CPU closure).
pub fn passes<T: ReduceElement>(p: &Predicate, x: T) -> bool {
    match p.node() {
        Some(n) => eval(n, x),
        None => p.test(x).expect("a custom predicate of this element type"),
    }
}

fn eval<T: ReduceElement>(n: &Node, x: T) -> bool {
    match n {
        Node::Bool(b) => *b,
        Node::IsNan => x.is_nan(),
        Node::IsFinite => x.to_f64().is_finite(),
        Node::Not(a) => !eval(a, x),
        Node::And(a, b) => eval(a, x) && eval(b, x),
        Node::Or(a, b) => eval(a, x) || eval(b, x),
        Node::Cmp(op, lit) => {
            let ord = match (T::TYPE.is_float(), *lit) {
                (true, lit) => {
                    // The constant in the element's precision (through f64, as numpy does).
                    let c = match lit {
                        Literal::Int(v) => v as f64,
                        Literal::Float(f) => f,
                    };
                    let c = T::from_value(c, None).to_f64();
                    x.to_f64().partial_cmp(&c)
                }
                (false, Literal::Int(v)) => Some(x.to_i128().cmp(&v)),
                // Integers against a float: the reductions' exact comparison.
                (false, Literal::Float(f)) => {
                    let less = crate::reduce::reference::passes(x, Compare::new(CmpOp::Lt, f));
                    let equal = crate::reduce::reference::passes(x, Compare::new(CmpOp::Eq, f));
                    if f.is_nan() {
                        None
                    } else if less {
                        Some(Ordering::Less)
                    } else if equal {
                        Some(Ordering::Equal)
                    } else {
                        Some(Ordering::Greater)
                    }
                }
            };
            holds(*op, ord)
        }
    }
}

/// Whether `x OP c` holds when `x` and `c` are in order `order` (None: unordered, a NaN on
/// either side, where only `!=` holds).
pub(crate) fn holds(op: CmpOp, order: Option<Ordering>) -> bool {
    match order {
        None => op == CmpOp::Ne,
        Some(o) => match op {
            CmpOp::Lt => o == Ordering::Less,
            CmpOp::Le => o != Ordering::Greater,
            CmpOp::Gt => o == Ordering::Greater,
            CmpOp::Ge => o != Ordering::Less,
            CmpOp::Eq => o == Ordering::Equal,
            CmpOp::Ne => o != Ordering::Equal,
        },
    }
}

/// The passing elements, in order.
pub fn select<T: ReduceElement>(xs: &[T], p: &Predicate) -> Vec<T> {
    let mut out = Vec::new();
    for &x in xs {
        if passes(p, x) {
            out.push(x);
        }
    }
    out
}

/// The indices of the passing elements, ascending.
pub fn select_indices<T: ReduceElement>(xs: &[T], p: &Predicate) -> Vec<u64> {
    let mut out = Vec::new();
    for (i, &x) in xs.iter().enumerate() {
        if passes(p, x) {
            out.push(i as u64);
        }
    }
    out
}

/// The elements whose flag is set, in order.
pub fn select_flagged<T: Copy, F: SelectFlag>(xs: &[T], flags: &[F]) -> Vec<T> {
    let mut out = Vec::new();
    for i in 0..xs.len() {
        if flags[i].keeps() {
            out.push(xs[i]);
        }
    }
    out
}

/// The passing elements in order, then the others in order; and how many passed.
pub fn partition<T: ReduceElement>(xs: &[T], p: &Predicate) -> (Vec<T>, u64) {
    let kept = select(xs, p);
    let count = kept.len() as u64;
    let mut out = kept;
    for &x in xs {
        if !passes(p, x) {
            out.push(x);
        }
    }
    (out, count)
}

/// How many elements pass.
pub fn count_if<T: ReduceElement>(xs: &[T], p: &Predicate) -> u64 {
    let mut n = 0;
    for &x in xs {
        n += passes(p, x) as u64;
    }
    n
}
