//! The CPU evaluator: a bound predicate tested over a block of elements at a time, one node
//! over the whole block before the next (each comparison a tight loop the compiler vectorises),
//! into a mask of 0s and 1s.

use super::{Bound, Tree};
use crate::reduce::{CmpOp, ReduceElement};

/// Elements per block: the masks of a few nodes stay in the L1.
pub(crate) const BLOCK: usize = 1024;

/// Masks for the inner nodes of a tree, reused from block to block.
#[derive(Default)]
pub(crate) struct Scratch {
    spare: Vec<Vec<u8>>,
}

impl<T: ReduceElement> Bound<T> {
    /// `mask[i] = 1` where `xs[i]` passes, else 0 (`mask` as long as `xs`).
    pub(crate) fn eval_block(&self, xs: &[T], mask: &mut [u8], scratch: &mut Scratch) {
        debug_assert_eq!(xs.len(), mask.len());
        eval(&self.tree, xs, mask, scratch);
    }
}

fn cmp_into<T: PartialOrd + Copy>(op: CmpOp, c: T, xs: &[T], out: &mut [u8]) {
    // One loop per operator, so that each is a plain compare-and-store.
    macro_rules! each {
        ($op:tt) => {
            for (o, &x) in out.iter_mut().zip(xs) {
                *o = (x $op c) as u8;
            }
        };
    }
    match op {
        CmpOp::Lt => each!(<),
        CmpOp::Le => each!(<=),
        CmpOp::Gt => each!(>),
        CmpOp::Ge => each!(>=),
        CmpOp::Eq => each!(==),
        CmpOp::Ne => each!(!=),
    }
}

fn eval<T: ReduceElement>(t: &Tree<T>, xs: &[T], out: &mut [u8], scratch: &mut Scratch) {
    match t {
        Tree::Const(b) => out.fill(*b as u8),
        Tree::IsNan => {
            for (o, &x) in out.iter_mut().zip(xs) {
                *o = x.is_nan() as u8;
            }
        }
        Tree::IsFinite => {
            for (o, &x) in out.iter_mut().zip(xs) {
                *o = x.to_f64().is_finite() as u8;
            }
        }
        Tree::Cmp(op, c) => cmp_into(*op, *c, xs, out),
        Tree::Not(a) => {
            eval(a, xs, out, scratch);
            for o in out.iter_mut() {
                *o ^= 1;
            }
        }
        Tree::And(a, b) | Tree::Or(a, b) => {
            eval(a, xs, out, scratch);
            let mut other = scratch.spare.pop().unwrap_or_default();
            other.resize(xs.len(), 0);
            eval(b, xs, &mut other, scratch);
            if matches!(t, Tree::And(..)) {
                out.iter_mut().zip(&other).for_each(|(o, m)| *o &= m);
            } else {
                out.iter_mut().zip(&other).for_each(|(o, m)| *o |= m);
            }
            scratch.spare.push(other);
        }
        Tree::Custom(f) => {
            for (o, &x) in out.iter_mut().zip(xs) {
                *o = f(x) as u8;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::Predicate;

    #[test]
    fn blocks_agree_with_one_at_a_time() {
        let xs: Vec<f32> = (0..3000).map(|i| if i % 7 == 0 { f32::NAN } else { (i as f32 - 1500.0) / 100.0 }).collect();
        let p = Predicate::parse("(x > -3 && x < 4.5) || isnan(x) && !(x == 0)").unwrap();
        let b = p.bind::<f32>().unwrap();
        let mut mask = vec![9u8; xs.len()];
        let mut scratch = super::Scratch::default();
        b.eval_block(&xs, &mut mask, &mut scratch);
        for (x, m) in xs.iter().zip(&mask) {
            assert_eq!(*m == 1, b.test(*x), "{x}");
        }
    }
}
