//! Fuzzing of the predicate language (proptest; `PROPTEST_CASES=n` for more cases): arbitrary
//! text, bytes and token soups never panic and fail with one line that names a byte of the text;
//! structured random expressions (constants at and beyond every type's limits, NaN and
//! infinities, every spelling of a literal, literals on either side, redundant parentheses,
//! deep nesting) parse to the tree they were written from, their canonical text parses back to
//! that tree, and the CPU evaluators (one element at a time, by blocks, and `select` on the CPU
//! backend) agree on every element type with [`oracle`], the rule evaluated directly on the tree.

use super::parse::{Literal, Node};
use super::{eval, Predicate};
use crate::reduce::{CmpOp, ReduceElement};
use crate::select::reference::holds;
use crate::{Backend, SelectOptions};
use proptest::prelude::*;
use std::cmp::Ordering;

const OPS: [CmpOp; 6] = [CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge, CmpOp::Eq, CmpOp::Ne];

/// An element as the oracle sees it: integers exactly, floats in their own precision.
#[derive(Clone, Copy, Debug)]
enum Elem {
    Int(i128),
    F32(f32),
    F64(f64),
}

/// The exact order of an integer and a float.
fn int_against_float(x: i128, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    let limit = 2f64.powi(126);
    if f >= limit {
        return Some(Ordering::Less);
    }
    if f <= -limit {
        return Some(Ordering::Greater);
    }
    let floor = f.floor();
    match x.cmp(&(floor as i128)) {
        // x is floor(f): below f unless f is that integer.
        Ordering::Equal if floor != f => Some(Ordering::Less),
        o => Some(o),
    }
}

/// The documented rule, straight from the tree: floats against the constant rounded (through
/// f64) to their type, integers against the constant's exact value.
fn oracle(n: &Node, x: Elem) -> bool {
    match n {
        Node::Bool(b) => *b,
        Node::IsNan => match x {
            Elem::Int(_) => false,
            Elem::F32(v) => v.is_nan(),
            Elem::F64(v) => v.is_nan(),
        },
        Node::IsFinite => match x {
            Elem::Int(_) => true,
            Elem::F32(v) => v.is_finite(),
            Elem::F64(v) => v.is_finite(),
        },
        Node::Cmp(op, lit) => {
            let as_f64 = match *lit {
                Literal::Int(v) => v as f64,
                Literal::Float(f) => f,
            };
            let order = match (x, *lit) {
                (Elem::Int(v), Literal::Int(c)) => Some(v.cmp(&c)),
                (Elem::Int(v), Literal::Float(f)) => int_against_float(v, f),
                (Elem::F32(v), _) => v.partial_cmp(&(as_f64 as f32)),
                (Elem::F64(v), _) => v.partial_cmp(&as_f64),
            };
            holds(*op, order)
        }
        Node::Not(a) => !oracle(a, x),
        Node::And(a, b) => oracle(a, x) && oracle(b, x),
        Node::Or(a, b) => oracle(a, x) || oracle(b, x),
    }
}

/// An element type under test: its values worth probing around the given constants.
trait Probe: ReduceElement {
    fn elem(self) -> Elem;
    fn probes(constants: &[Literal]) -> Vec<Self>;
}

macro_rules! int_probe {
    ($($t:ty),*) => {$(
        impl Probe for $t {
            fn elem(self) -> Elem {
                Elem::Int(self as i128)
            }
            fn probes(constants: &[Literal]) -> Vec<Self> {
                let mut centres = vec![0i128, <$t>::MIN as i128, <$t>::MAX as i128];
                for c in constants {
                    match *c {
                        Literal::Int(v) => centres.push(v),
                        Literal::Float(f) if f.is_finite() && f.abs() < 1e38 => centres.push(f.floor() as i128),
                        Literal::Float(_) => {}
                    }
                }
                let mut v: Vec<$t> = centres
                    .iter()
                    .flat_map(|&c| [c.saturating_sub(1), c, c.saturating_add(1)])
                    .filter_map(|c| <$t>::try_from(c).ok())
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            }
        }
    )*};
}
int_probe!(u8, i8, u16, i16, u32, i32, u64, i64);

macro_rules! float_probe {
    ($t:ty, $e:ident) => {
        impl Probe for $t {
            fn elem(self) -> Elem {
                Elem::$e(self)
            }
            fn probes(constants: &[Literal]) -> Vec<Self> {
                let mut v: Vec<$t> = vec![
                    0.0,
                    -0.0,
                    1.0,
                    -1.0,
                    <$t>::NAN,
                    -<$t>::NAN,
                    <$t>::INFINITY,
                    <$t>::NEG_INFINITY,
                    <$t>::MAX,
                    <$t>::MIN,
                    <$t>::MIN_POSITIVE,
                    <$t>::from_bits(1),
                    -<$t>::from_bits(1),
                ];
                for c in constants {
                    let c = match *c {
                        Literal::Int(i) => i as f64 as $t,
                        Literal::Float(f) => f as $t,
                    };
                    v.extend([c, c.next_up(), c.next_down(), -c]);
                }
                v
            }
        }
    };
}
float_probe!(f32, F32);
float_probe!(f64, F64);

fn literals(n: &Node, out: &mut Vec<Literal>) {
    match n {
        Node::Cmp(_, l) => out.push(*l),
        Node::Not(a) => literals(a, out),
        Node::And(a, b) | Node::Or(a, b) => {
            literals(a, out);
            literals(b, out);
        }
        _ => {}
    }
}

/// Every CPU evaluator of `p` on `T` against the oracle on the tree `n`.
fn agree_on<T: Probe>(p: &Predicate, n: &Node, constants: &[Literal]) -> Result<(), TestCaseError> {
    let xs = T::probes(constants);
    let bound = p.bind::<T>().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let want: Vec<bool> = xs.iter().map(|&x| oracle(n, x.elem())).collect();
    let mut mask = vec![7u8; xs.len()];
    bound.eval_block(&xs, &mut mask, &mut eval::Scratch::default());
    for (i, &x) in xs.iter().enumerate() {
        prop_assert_eq!(bound.test(x), want[i], "{} on {} {:?}: one at a time", p.canonical(), T::TYPE, x);
        prop_assert_eq!(mask[i] == 1, want[i], "{} on {} {:?}: by blocks", p.canonical(), T::TYPE, x);
        let reference = crate::select::reference::passes(p, x);
        prop_assert_eq!(reference, want[i], "{} on {} {:?}: select's reference", p.canonical(), T::TYPE, x);
        if let Some(c) = bound.constant() {
            prop_assert_eq!(c, want[i], "{} on {} {:?}: folded to a constant", p.canonical(), T::TYPE, x);
        }
    }
    let kept = Backend::Cpu.select_indices_vec(&xs, p).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let expected: Vec<u64> = (0..xs.len() as u64).filter(|&i| want[i as usize]).collect();
    prop_assert_eq!(kept, expected, "{} on {}: select", p.canonical(), T::TYPE);
    let selected = Backend::Cpu.select_vec(&xs, p, SelectOptions::default()).unwrap();
    prop_assert_eq!(selected.len() as u64, Backend::Cpu.count_if(&xs, p).unwrap());
    Ok(())
}

/// Trees equal with NaN constants equal to each other (whatever their sign).
fn same_tree(a: &Node, b: &Node) -> bool {
    match (a, b) {
        (Node::Cmp(o, Literal::Float(x)), Node::Cmp(p, Literal::Float(y))) => {
            o == p && (x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
        }
        (Node::Not(x), Node::Not(y)) => same_tree(x, y),
        (Node::And(a1, b1), Node::And(a2, b2)) | (Node::Or(a1, b1), Node::Or(a2, b2)) => {
            same_tree(a1, a2) && same_tree(b1, b2)
        }
        _ => a == b,
    }
}

/// An error of `text`: one line, and the byte it names (counting from 1) lies inside the text
/// or just after it (the end), on a character's start.
fn check_error(text: &str, e: &crate::Error) -> Result<(), TestCaseError> {
    let msg = e.to_string();
    prop_assert!(matches!(e, crate::Error::InvalidArgument(_)), "{msg}");
    prop_assert!(!msg.chars().any(|c| c.is_control() || c == '\u{2028}' || c == '\u{2029}'), "not one line: {msg:?}");
    let byte = msg
        .split("at byte ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse::<usize>().ok())
        .ok_or_else(|| TestCaseError::fail(format!("no byte position: {msg}")))?;
    prop_assert!(byte >= 1 && byte <= text.len() + 1, "byte {byte} of {} bytes: {msg}", text.len());
    prop_assert!(text.is_char_boundary(byte - 1), "byte {byte} inside a character: {msg}");
    Ok(())
}

/// Whatever `text` is: an error as [`check_error`] wants, or a tree whose canonical text parses
/// back to it and on which every evaluator agrees with the oracle.
fn check_text(text: &str) -> Result<Option<Node>, TestCaseError> {
    match Predicate::parse(text) {
        Err(e) => check_error(text, &e).map(|_| None),
        Ok(p) => {
            let node = p.node().expect("parsed").clone();
            let canonical = p.canonical();
            let again = Predicate::parse(&canonical)
                .map_err(|e| TestCaseError::fail(format!("the canonical text of {text:?} fails: {e}")))?;
            prop_assert!(same_tree(again.node().unwrap(), &node), "{text:?} -> {canonical:?} -> another tree");
            prop_assert_eq!(again.canonical(), canonical.clone());
            let mut constants = Vec::new();
            literals(&node, &mut constants);
            agree_on::<u8>(&p, &node, &constants)?;
            agree_on::<i8>(&p, &node, &constants)?;
            agree_on::<u16>(&p, &node, &constants)?;
            agree_on::<i16>(&p, &node, &constants)?;
            agree_on::<u32>(&p, &node, &constants)?;
            agree_on::<i32>(&p, &node, &constants)?;
            agree_on::<u64>(&p, &node, &constants)?;
            agree_on::<i64>(&p, &node, &constants)?;
            agree_on::<f32>(&p, &node, &constants)?;
            agree_on::<f64>(&p, &node, &constants)?;
            Ok(Some(node))
        }
    }
}

/// Integer constants at, just inside and just beyond every type's limits, and far beyond.
fn int_constant() -> impl Strategy<Value = i128> {
    let mut edges = vec![0i128, 1, 2, 1 << 24, (1 << 24) + 1, 1 << 53, (1 << 53) + 1, 1 << 100, i128::MAX];
    for m in [u8::MAX as i128, i8::MAX as i128, u16::MAX as i128, i16::MAX as i128, u32::MAX as i128]
        .into_iter()
        .chain([i32::MAX as i128, u64::MAX as i128, i64::MAX as i128])
    {
        edges.extend([m - 1, m, m + 1]);
    }
    let edges: Vec<i128> = edges.iter().flat_map(|&e| [e, -e]).collect();
    prop_oneof![3 => prop::sample::select(edges), 1 => any::<i64>().prop_map(i128::from), 1 => -50i128..50]
}

/// Float constants: limits of f32 and f64, halves, powers of two around the integers' limits,
/// the binder's 1e30 boundary, subnormals, NaN, infinities, and any f64.
fn float_constant() -> impl Strategy<Value = f64> {
    let edges = [
        0.0,
        0.5,
        2.5,
        255.5,
        f32::MAX as f64,
        (f32::MAX as f64).next_up(),
        f32::MIN_POSITIVE as f64,
        f32::from_bits(1) as f64,
        16777217.0,
        f64::MAX,
        f64::MIN_POSITIVE,
        f64::from_bits(1),
        2f64.powi(53),
        2f64.powi(63),
        2f64.powi(64),
        2f64.powi(127),
        1e30,
        1e30f64.next_down(),
        f64::NAN,
        f64::INFINITY,
    ];
    let edges: Vec<f64> = edges.iter().flat_map(|&e| [e, -e]).collect();
    prop_oneof![3 => prop::sample::select(edges), 1 => any::<f64>(), 1 => -100.0f64..100.0]
}

fn literal() -> impl Strategy<Value = Literal> {
    prop_oneof![int_constant().prop_map(Literal::Int), float_constant().prop_map(Literal::Float)]
}

fn tree() -> impl Strategy<Value = Node> {
    let leaf = prop_oneof![
        6 => (prop::sample::select(&OPS[..]), literal()).prop_map(|(op, l)| Node::Cmp(op, l)),
        1 => any::<bool>().prop_map(Node::Bool),
        1 => Just(Node::IsNan),
        1 => Just(Node::IsFinite),
    ];
    leaf.prop_recursive(6, 40, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|a| Node::Not(Box::new(a))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Node::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner).prop_map(|(a, b)| Node::Or(Box::new(a), Box::new(b))),
        ]
    })
}

/// How a tree is spelled: spaces, literals first, hex, `infinity`, redundant parentheses.
#[derive(Clone, Debug)]
struct Style(Vec<u8>);

impl Style {
    fn pick(&self, salt: usize, n: u8) -> u8 {
        self.0[salt % self.0.len()] % n
    }
}

fn write_literal(l: &Literal, s: &Style, salt: usize) -> String {
    match *l {
        Literal::Int(v) if v >= 0 && s.pick(salt, 3) == 0 => format!("0x{v:x}"),
        Literal::Int(v) if v >= 0 && s.pick(salt, 3) == 1 => format!("+{v}"),
        Literal::Int(v) => v.to_string(),
        Literal::Float(f) if f.is_nan() => if f.is_sign_negative() { "-nan" } else { "nan" }.into(),
        Literal::Float(f) if f.is_infinite() => {
            let name = if s.pick(salt, 2) == 0 { "inf" } else { "infinity" };
            format!("{}{name}", if f < 0.0 { "-" } else { "" })
        }
        // Both print the shortest digits that read back as f; `{:e}` always has an exponent,
        // `{:?}` a point or an exponent, so either stays a float literal.
        Literal::Float(f) if s.pick(salt, 2) == 0 => format!("{f:e}"),
        Literal::Float(f) => format!("{f:?}"),
    }
}

/// `n` as text in style `s`, every sub-expression an operand in parentheses (the parser's
/// precedence then cannot regroup it), sometimes wrapped twice.
fn write(n: &Node, s: &Style, salt: usize) -> String {
    let sp = if s.pick(salt, 2) == 0 { " " } else { "" };
    let text = match n {
        Node::Bool(b) => b.to_string(),
        Node::IsNan => format!("isnan({sp}x{sp})"),
        Node::IsFinite => format!("isfinite(x{sp})"),
        Node::Cmp(CmpOp::Ne, Literal::Int(0)) if s.pick(salt + 1, 4) == 0 => "x".into(),
        Node::Cmp(op, l) if s.pick(salt + 2, 2) == 0 => {
            format!("{}{sp}{}{sp}x", write_literal(l, s, salt), super::parse::cmp_symbol(super::parse::mirror(*op)))
        }
        Node::Cmp(op, l) => format!("x{sp}{}{sp}{}", super::parse::cmp_symbol(*op), write_literal(l, s, salt)),
        Node::Not(a) => format!("!{sp}({})", write(a, s, salt * 3 + 1)),
        Node::And(a, b) => format!("({}){sp}&&{sp}({})", write(a, s, salt * 3 + 1), write(b, s, salt * 3 + 2)),
        Node::Or(a, b) => format!("({}){sp}||{sp}({})", write(a, s, salt * 3 + 1), write(b, s, salt * 3 + 2)),
    };
    if s.pick(salt + 3, 5) == 0 {
        format!("({sp}{text}{sp})")
    } else {
        text
    }
}

/// Pieces of the language (and a few foreign ones), for token soups.
const TOKENS: [&str; 40] = [
    "x",
    "x",
    "x",
    " ",
    "(",
    ")",
    "!",
    "&&",
    "||",
    "<",
    "<=",
    ">",
    ">=",
    "==",
    "!=",
    "=",
    "&",
    "|",
    "-",
    "+",
    "0",
    "1",
    "2.5",
    "1e308",
    "1e400",
    "0x",
    "0xff",
    "1e",
    ".",
    "inf",
    "nan",
    "isnan",
    "isfinite",
    "true",
    "false",
    "y",
    "é",
    "\u{2028}",
    "\n",
    "99999999999999999999999999999999999999999",
];

proptest! {
    #[test]
    fn fuzz_predicate_text(text in any::<String>()) {
        check_text(&text)?;
    }

    #[test]
    fn fuzz_predicate_bytes(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        check_text(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn fuzz_predicate_token_soup(parts in prop::collection::vec(prop::sample::select(&TOKENS[..]), 0..30)) {
        check_text(&parts.concat())?;
    }

    #[test]
    fn fuzz_predicate_trees(n in tree(), style in prop::collection::vec(any::<u8>(), 1..16)) {
        let text = write(&n, &Style(style), 0);
        let parsed = check_text(&text)?;
        match parsed {
            Some(p) => prop_assert!(same_tree(&p, &n), "{text:?} parsed to {p:?}, not {n:?}"),
            None => {
                let e = Predicate::parse(&text).unwrap_err().to_string();
                prop_assert!(e.contains("nests too deeply"), "{text:?}: {e}");
            }
        }
    }

    #[test]
    fn fuzz_predicate_nesting(opens in 0usize..200, nots in 0usize..200, closes in 0usize..200, chain in 0usize..3000) {
        let text = format!("{}{}x > 1{}{}", "(".repeat(opens), "!".repeat(nots), ")".repeat(closes), " && x < 2".repeat(chain));
        check_text(&text)?;
    }
}

/// The deepest texts the parser accepts, in shapes where the canonical text needs more
/// parentheses than the original (precedence instead of parentheses, `!` before a
/// comparison): their canonical text parses back to the same tree.
#[test]
fn the_deepest_accepted_texts_have_canonical_forms_that_parse() {
    type Shape = fn(usize) -> String;
    let shapes: [Shape; 4] = [
        |k| "x > 0 || x > 1 && !(".repeat(k) + "x > 2" + &")".repeat(k),
        |k| "!(x > 0 || ".repeat(k) + "x < 1" + &")".repeat(k),
        |k| "!".repeat(k) + "x == 1",
        |k| "(x > 0 && ".repeat(k) + "x" + &" || x < 5)".repeat(k),
    ];
    for shape in shapes {
        let mut deepest = None;
        for k in 0..200 {
            match Predicate::parse(&shape(k)) {
                Ok(p) => deepest = Some(p),
                Err(e) => {
                    assert!(e.to_string().contains("nests too deeply"), "{e}");
                    break;
                }
            }
        }
        let p = deepest.expect("the shallowest parses");
        let again = Predicate::parse(&p.canonical()).unwrap_or_else(|e| panic!("{}: {e}", p.text()));
        assert!(same_tree(again.node().unwrap(), p.node().unwrap()), "{}", p.text());
    }
}
