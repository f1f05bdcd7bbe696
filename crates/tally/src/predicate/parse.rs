//! The predicate language's parser: a hand-written lexer and recursive descent over
//!
//! ```text
//! or      := and ("||" and)*
//! and     := unary ("&&" unary)*
//! unary   := "!" unary | primary
//! primary := "(" or ")" | "true" | "false" | ("isnan" | "isfinite") "(" "x" ")"
//!          | operand [cmp operand]        (one side x, the other a number; bare x: x != 0)
//! operand := "x" | number
//! number  := ["-" | "+"] (decimal | 0x hex | "inf" | "nan")
//! cmp     := "<" | "<=" | ">" | ">=" | "==" | "!="
//! ```
//!
//! Every error names the byte where the problem is, counting from 1.

use crate::error::{Error, Result};
use crate::reduce::CmpOp;

/// A number as written: integers exactly, everything else as the nearest f64.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Literal {
    /// A decimal or hexadecimal integer.
    Int(i128),
    /// A decimal with a point or an exponent, `inf` or `nan`.
    Float(f64),
}

/// A parsed predicate, before it meets an element type.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// `true` or `false`.
    Bool(bool),
    /// `x OP literal` (a literal on the left is moved right, the operator mirrored).
    Cmp(CmpOp, Literal),
    /// `isnan(x)`.
    IsNan,
    /// `isfinite(x)`.
    IsFinite,
    /// `!a`.
    Not(Box<Node>),
    /// `a && b`.
    And(Box<Node>, Box<Node>),
    /// `a || b`.
    Or(Box<Node>, Box<Node>),
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Number(Literal),
    Cmp(CmpOp),
    And,
    Or,
    Not,
    Minus,
    Plus,
    Open,
    Close,
    End,
}

/// The error at the byte at offset `pos` of `text` (reported counting from 1, as editors count
/// columns).
pub fn error_at(text: &str, pos: usize, what: impl std::fmt::Display) -> Error {
    Error::invalid(format!("at byte {} of {text:?}: {what}", pos + 1))
}

struct Lexer<'a> {
    text: &'a str,
    toks: Vec<(Tok, usize)>,
}

impl<'a> Lexer<'a> {
    fn run(text: &'a str) -> Result<Vec<(Tok, usize)>> {
        let mut lx = Lexer { text, toks: Vec::new() };
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            let two = |s: &str| text[i..].starts_with(s);
            let (tok, len) = match c {
                b' ' | b'\t' | b'\n' | b'\r' => {
                    i += 1;
                    continue;
                }
                b'(' => (Tok::Open, 1),
                b')' => (Tok::Close, 1),
                b'-' => (Tok::Minus, 1),
                b'+' => (Tok::Plus, 1),
                _ if two("&&") => (Tok::And, 2),
                _ if two("||") => (Tok::Or, 2),
                _ if two("<=") => (Tok::Cmp(CmpOp::Le), 2),
                _ if two(">=") => (Tok::Cmp(CmpOp::Ge), 2),
                _ if two("==") => (Tok::Cmp(CmpOp::Eq), 2),
                _ if two("!=") => (Tok::Cmp(CmpOp::Ne), 2),
                b'<' => (Tok::Cmp(CmpOp::Lt), 1),
                b'>' => (Tok::Cmp(CmpOp::Gt), 1),
                b'!' => (Tok::Not, 1),
                b'=' => return Err(error_at(text, i, "'=' is not an operator (compare with '==')")),
                b'&' | b'|' => {
                    return Err(error_at(text, i, format!("expected '{0}{0}'", c as char)));
                }
                b'0'..=b'9' | b'.' => lx.number(i)?,
                _ if c.is_ascii_alphabetic() || c == b'_' => {
                    let len = b[i..].iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'_').count();
                    (Tok::Ident(text[i..i + len].to_string()), len)
                }
                _ => {
                    let ch = text[i..].chars().next().unwrap_or('?');
                    return Err(error_at(text, i, format!("unexpected character {ch:?}")));
                }
            };
            lx.toks.push((tok, i));
            i += len;
        }
        lx.toks.push((Tok::End, text.len()));
        Ok(lx.toks)
    }

    /// A number at byte `i`: `0x` hex, or decimal digits with an optional point and exponent.
    fn number(&self, i: usize) -> Result<(Tok, usize)> {
        let b = self.text.as_bytes();
        let bad = |what: &str| error_at(self.text, i, what);
        if b[i] == b'0' && matches!(b.get(i + 1), Some(b'x' | b'X')) {
            let len = b[i + 2..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
            if len == 0 {
                return Err(bad("a hexadecimal number needs digits after 0x"));
            }
            let v = i128::from_str_radix(&self.text[i + 2..i + 2 + len], 16)
                .map_err(|_| bad("integer too large (beyond 128 bits)"))?;
            return self.ends_number(Tok::Number(Literal::Int(v)), i, 2 + len);
        }
        let mut j = i;
        let digits = |j: &mut usize| {
            let start = *j;
            while *j < b.len() && b[*j].is_ascii_digit() {
                *j += 1;
            }
            *j - start
        };
        let mut seen = digits(&mut j);
        let mut float = false;
        if j < b.len() && b[j] == b'.' {
            j += 1;
            float = true;
            seen += digits(&mut j);
        }
        if seen == 0 {
            return Err(bad("expected digits"));
        }
        if j < b.len() && (b[j] == b'e' || b[j] == b'E') {
            j += 1;
            float = true;
            if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
                j += 1;
            }
            if digits(&mut j) == 0 {
                return Err(error_at(self.text, j, "expected the exponent's digits"));
            }
        }
        let s = &self.text[i..j];
        let lit = if float {
            Literal::Float(s.parse::<f64>().map_err(|_| bad("not a number"))?)
        } else {
            match s.parse::<i128>() {
                Ok(v) => Literal::Int(v),
                Err(_) => return Err(bad("integer too large (beyond 128 bits); write it with an exponent")),
            }
        };
        self.ends_number(Tok::Number(lit), i, j - i)
    }

    /// A number must not run into a name (`3x`, `0x1g`).
    fn ends_number(&self, tok: Tok, i: usize, len: usize) -> Result<(Tok, usize)> {
        match self.text.as_bytes().get(i + len) {
            Some(c) if c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.' => {
                Err(error_at(self.text, i + len, "unexpected character after a number"))
            }
            _ => Ok((tok, len)),
        }
    }
}

/// What one side of a comparison is.
enum Operand {
    X,
    Number(Literal),
}

struct Parser<'a> {
    text: &'a str,
    toks: Vec<(Tok, usize)>,
    at: usize,
    depth: usize,
    /// `&&` and `||` read so far.
    operators: usize,
}

/// Nesting deeper than this is refused (the parser and the evaluators recurse), both as
/// written and as the canonical text would write it ([`super::canonical_depth`]), which can
/// need more parentheses than the text had (`a || b && c` is `(a) || ((b) && (c))`).
const MAX_DEPTH: usize = 64;

/// More `&&` and `||` than this are refused: a chain of them is a tree as deep as it is long,
/// and binding, evaluating, writing and dropping the tree recurse over it.
pub const MAX_OPERATORS: usize = 1000;

/// Parses `text`.
pub fn parse(text: &str) -> Result<Node> {
    let toks = Lexer::run(text)?;
    let mut p = Parser { text, toks, at: 0, depth: 0, operators: 0 };
    let node = p.or()?;
    match p.peek() {
        Tok::End => Ok(node),
        Tok::Close => Err(p.error("unbalanced ')'")),
        _ => Err(p.error("expected '&&', '||' or the end")),
    }
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.at].0
    }

    fn pos(&self) -> usize {
        self.toks[self.at].1
    }

    fn error(&self, what: &str) -> Error {
        error_at(self.text, self.pos(), what)
    }

    fn bump(&mut self) -> Tok {
        let t = self.toks[self.at].0.clone();
        if t != Tok::End {
            self.at += 1;
        }
        t
    }

    fn expect(&mut self, tok: Tok, what: &str) -> Result<()> {
        if *self.peek() == tok {
            self.bump();
            Ok(())
        } else {
            Err(self.error(what))
        }
    }

    /// Takes a binary operator, counting it against [`MAX_OPERATORS`].
    fn operator(&mut self) -> Result<()> {
        self.operators += 1;
        if self.operators > MAX_OPERATORS {
            return Err(self.error(&format!("more than {MAX_OPERATORS} '&&' and '||' in one expression")));
        }
        self.bump();
        Ok(())
    }

    /// `node`, unless its canonical text would nest too deeply (the error names the byte
    /// after it).
    fn nested(&self, node: Node) -> Result<Node> {
        if super::canonical_depth(&node) > MAX_DEPTH {
            return Err(self.error("the expression nests too deeply"));
        }
        Ok(node)
    }

    fn or(&mut self) -> Result<Node> {
        let mut left = self.and()?;
        while *self.peek() == Tok::Or {
            self.operator()?;
            let right = self.and()?;
            left = self.nested(Node::Or(Box::new(left), Box::new(right)))?;
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Node> {
        let mut left = self.unary()?;
        while *self.peek() == Tok::And {
            self.operator()?;
            let right = self.unary()?;
            left = self.nested(Node::And(Box::new(left), Box::new(right)))?;
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Node> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error("the expression nests too deeply"));
        }
        let node = if *self.peek() == Tok::Not {
            self.bump();
            let operand = self.unary()?;
            self.nested(Node::Not(Box::new(operand)))?
        } else {
            self.primary()?
        };
        self.depth -= 1;
        Ok(node)
    }

    fn primary(&mut self) -> Result<Node> {
        let start = self.pos();
        match self.peek().clone() {
            Tok::Open => {
                self.bump();
                let inner = self.or()?;
                self.expect(Tok::Close, "expected ')'")?;
                Ok(inner)
            }
            Tok::Ident(name) if name == "true" || name == "false" => {
                self.bump();
                Ok(Node::Bool(name == "true"))
            }
            Tok::Ident(name) if name == "isnan" || name == "isfinite" => {
                self.bump();
                self.expect(Tok::Open, "expected '(' after the function's name")?;
                if *self.peek() != Tok::Ident("x".into()) {
                    return Err(self.error("the argument must be x"));
                }
                self.bump();
                self.expect(Tok::Close, "expected ')'")?;
                Ok(if name == "isnan" { Node::IsNan } else { Node::IsFinite })
            }
            _ => {
                let left = self.operand()?;
                let Tok::Cmp(op) = *self.peek() else {
                    return match left {
                        // A bare x is truthy where it is not zero (NaN included), as bool(x) is.
                        Operand::X => Ok(Node::Cmp(CmpOp::Ne, Literal::Int(0))),
                        Operand::Number(_) => Err(error_at(self.text, start, "a number alone is not a condition")),
                    };
                };
                let op_pos = self.pos();
                self.bump();
                let right = self.operand()?;
                match (left, right) {
                    (Operand::X, Operand::Number(v)) => Ok(Node::Cmp(op, v)),
                    (Operand::Number(v), Operand::X) => Ok(Node::Cmp(mirror(op), v)),
                    (Operand::X, Operand::X) => Err(error_at(self.text, op_pos, "compare x with a number, not with x")),
                    (Operand::Number(_), Operand::Number(_)) => {
                        Err(error_at(self.text, start, "a comparison needs x on one side"))
                    }
                }
            }
        }
    }

    fn operand(&mut self) -> Result<Operand> {
        let negative = match self.peek() {
            Tok::Minus => {
                self.bump();
                true
            }
            Tok::Plus => {
                self.bump();
                false
            }
            _ => {
                if *self.peek() == Tok::Ident("x".into()) {
                    self.bump();
                    return Ok(Operand::X);
                }
                false
            }
        };
        let lit = match self.peek().clone() {
            Tok::Number(lit) => lit,
            Tok::Ident(name) if name == "inf" || name == "infinity" => Literal::Float(f64::INFINITY),
            Tok::Ident(name) if name == "nan" => Literal::Float(f64::NAN),
            Tok::Ident(name) if name == "x" => return Err(self.error("a sign before x is not supported")),
            Tok::Ident(name) => return Err(self.error(&format!("unknown name '{name}' (the element is x)"))),
            _ => return Err(self.error("expected a number or x")),
        };
        self.bump();
        Ok(Operand::Number(match (lit, negative) {
            (Literal::Int(v), true) => Literal::Int(-v),
            (Literal::Float(f), true) => Literal::Float(-f),
            (lit, false) => lit,
        }))
    }
}

/// `c OP x` as `x OP' c`.
pub(crate) fn mirror(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        CmpOp::Eq | CmpOp::Ne => op,
    }
}

/// The C++ and Rust spelling of a comparison.
pub fn cmp_symbol(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
        CmpOp::Eq => "==",
        CmpOp::Ne => "!=",
    }
}
