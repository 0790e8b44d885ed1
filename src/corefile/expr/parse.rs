//! The parser: tokens to a tree, each node typed as it is built, so a
//! misuse is found at load with its offset (the grammar is in `mod.rs`).

use super::functions::{FUNCTIONS, PER_REQUEST, PREDICATES};
use super::lex::Tok;
use super::typing::{arith_type, check_cmp, fail, want, CompileError, Ty};
use super::value::Value;

/// A node of the tree.
#[derive(Debug, Clone)]
pub enum Node {
    Lit(Value),
    /// The value of the variable with this index.
    Var(usize),
    /// `#`: the element a predicate looks at.
    Item,
    Array(Vec<Node>),
    Unary(&'static str, Box<Node>),
    Binary(&'static str, Box<Node>, Box<Node>),
    Cond(Box<Node>, Box<Node>, Box<Node>),
    Index(Box<Node>, Box<Node>),
    Call(&'static str, Vec<Node>),
}

type Parsed = Result<(Node, Ty), CompileError>;

pub struct Parser<'a> {
    toks: &'a [(usize, Tok)],
    i: usize,
    vars: &'a [(String, Ty)],
    end: usize,
    /// Inside a predicate's body (`#` is allowed).
    in_predicate: bool,
    pub uses_client: bool,
}

impl<'a> Parser<'a> {
    pub fn new(toks: &'a [(usize, Tok)], vars: &'a [(String, Ty)], end: usize) -> Parser<'a> {
        Parser {
            toks,
            i: 0,
            vars,
            end,
            in_predicate: false,
            uses_client: false,
        }
    }

    fn at(&self) -> usize {
        self.toks.get(self.i).map_or(self.end, |t| t.0)
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|t| &t.1)
    }

    /// Takes the next token when it is operator or keyword `word`.
    fn eat(&mut self, word: &str) -> bool {
        let hit = match self.peek() {
            Some(Tok::Op(op)) => *op == word,
            Some(Tok::Name(n)) => n == word,
            _ => false,
        };
        self.i += usize::from(hit);
        hit
    }

    fn expect(&mut self, op: &str) -> Result<(), CompileError> {
        if self.eat(op) {
            return Ok(());
        }
        fail(self.at(), format!("expected '{op}'"))
    }

    pub fn end(&self) -> Result<(), CompileError> {
        match self.toks.get(self.i) {
            None => Ok(()),
            Some((at, t)) => fail(*at, format!("unexpected token {t:?}")),
        }
    }

    pub fn expr(&mut self) -> Parsed {
        let (cond, ty) = self.or()?;
        if !self.eat("?") {
            return Ok((cond, ty));
        }
        let at = self.at();
        want(ty, Ty::Bool, at, "?")?;
        let (yes, ty1) = self.expr()?;
        self.expect(":")?;
        let (no, ty2) = self.expr()?;
        let ty = if ty1 == ty2 { ty1 } else { Ty::Any };
        Ok((Node::Cond(Box::new(cond), Box::new(yes), Box::new(no)), ty))
    }

    fn or(&mut self) -> Parsed {
        self.logic(&["||", "or"], Self::and)
    }

    fn and(&mut self) -> Parsed {
        self.logic(&["&&", "and"], Self::cmp)
    }

    fn logic(&mut self, ops: &[&'static str; 2], next: fn(&mut Self) -> Parsed) -> Parsed {
        let (mut left, mut ty) = next(self)?;
        while let Some(op) = ops.iter().find(|op| self.eat(op)) {
            let at = self.at();
            let (right, rty) = next(self)?;
            want(ty, Ty::Bool, at, op)?;
            want(rty, Ty::Bool, at, op)?;
            left = Node::Binary(
                if ops[0] == "||" { "||" } else { "&&" },
                Box::new(left),
                Box::new(right),
            );
            ty = Ty::Bool;
        }
        Ok((left, ty))
    }

    fn cmp(&mut self) -> Parsed {
        const OPS: [&str; 11] = [
            "==",
            "!=",
            "<=",
            ">=",
            "<",
            ">",
            "in",
            "contains",
            "startsWith",
            "endsWith",
            "matches",
        ];
        let (mut left, mut ty) = self.sum()?;
        loop {
            let at = self.at();
            let negated = matches!(self.peek(), Some(Tok::Name(n)) if n == "not")
                && matches!(self.toks.get(self.i + 1), Some((_, Tok::Name(n))) if n == "in");
            if negated {
                self.i += 1;
            }
            let Some(op) = OPS.iter().find(|op| self.eat(op)) else {
                return Ok((left, ty));
            };
            let (right, rty) = self.sum()?;
            check_cmp(op, ty, rty, at)?;
            left = Node::Binary(op, Box::new(left), Box::new(right));
            if negated {
                left = Node::Unary("!", Box::new(left));
            }
            ty = Ty::Bool;
        }
    }

    fn sum(&mut self) -> Parsed {
        self.arith(&["+", "-"], Self::product)
    }

    fn product(&mut self) -> Parsed {
        self.arith(&["*", "/", "%"], Self::unary)
    }

    fn arith(&mut self, ops: &[&'static str], next: fn(&mut Self) -> Parsed) -> Parsed {
        let (mut left, mut ty) = next(self)?;
        while let Some(op) = ops.iter().find(|op| self.eat(op)) {
            let at = self.at();
            let (right, rty) = next(self)?;
            ty = arith_type(op, ty, rty, at)?;
            left = Node::Binary(op, Box::new(left), Box::new(right));
        }
        Ok((left, ty))
    }

    fn unary(&mut self) -> Parsed {
        let at = self.at();
        if self.eat("!") || self.eat("not") {
            let (n, ty) = self.unary()?;
            want(ty, Ty::Bool, at, "!")?;
            return Ok((Node::Unary("!", Box::new(n)), Ty::Bool));
        }
        if self.eat("-") {
            let (n, ty) = self.unary()?;
            if !ty.numeric() {
                return fail(at, format!("invalid operation: - ({})", ty.name()));
            }
            return Ok((Node::Unary("-", Box::new(n)), ty));
        }
        self.postfix()
    }

    fn postfix(&mut self) -> Parsed {
        let (mut node, mut ty) = self.primary()?;
        while self.eat("[") {
            let at = self.at();
            let (index, ity) = self.expr()?;
            self.expect("]")?;
            if !matches!(ty, Ty::Array | Ty::Str | Ty::Any) || !matches!(ity, Ty::Int | Ty::Any) {
                return fail(at, format!("cannot index {} with {}", ty.name(), ity.name()));
            }
            ty = if ty == Ty::Str { Ty::Str } else { Ty::Any };
            node = Node::Index(Box::new(node), Box::new(index));
        }
        Ok((node, ty))
    }

    fn primary(&mut self) -> Parsed {
        let at = self.at();
        let Some(tok) = self.peek().cloned() else {
            return fail(at, "unexpected end of expression".into());
        };
        self.i += 1;
        match tok {
            Tok::Int(n) => Ok((Node::Lit(Value::Int(n)), Ty::Int)),
            Tok::Float(f) => Ok((Node::Lit(Value::Float(f)), Ty::Float)),
            Tok::Str(s) => Ok((Node::Lit(Value::Str(s)), Ty::Str)),
            Tok::Op("(") => {
                let inner = self.expr()?;
                self.expect(")")?;
                Ok(inner)
            }
            Tok::Op("[") => {
                let items = self.list("]")?;
                Ok((Node::Array(items.into_iter().map(|(n, _)| n).collect()), Ty::Array))
            }
            Tok::Op("#") if self.in_predicate => Ok((Node::Item, Ty::Any)),
            Tok::Name(name) => self.name(&name, at),
            other => fail(at, format!("unexpected token {other:?}")),
        }
    }

    /// Expressions up to `close`, separated by commas.
    fn list(&mut self, close: &str) -> Result<Vec<(Node, Ty)>, CompileError> {
        let mut items = Vec::new();
        if self.eat(close) {
            return Ok(items);
        }
        loop {
            items.push(self.expr()?);
            if self.eat(close) {
                return Ok(items);
            }
            self.expect(",")?;
        }
    }

    fn name(&mut self, name: &str, at: usize) -> Parsed {
        match name {
            "true" | "false" => return Ok((Node::Lit(Value::Bool(name == "true")), Ty::Bool)),
            "nil" => return Ok((Node::Lit(Value::Nil), Ty::Nil)),
            _ => {}
        }
        if let Some(k) = self.vars.iter().position(|(n, _)| n == name) {
            return Ok((Node::Var(k), self.vars[k].1));
        }
        let Some(&(fname, params, result)) = FUNCTIONS.iter().find(|f| f.0 == name) else {
            return fail(at, format!("unknown name {name}"));
        };
        if !self.eat("(") {
            return fail(at, format!("{name} is a function: call it as {name}(...)"));
        }
        let args = if PREDICATES.contains(&fname) {
            self.predicate_args()?
        } else {
            self.list(")")?
        };
        if args.len() != params.len() {
            return fail(
                at,
                format!(
                    "not enough or too many arguments to call {name}: want {}, got {}",
                    params.len(),
                    args.len()
                ),
            );
        }
        for ((_, got), want_ty) in args.iter().zip(params) {
            if *want_ty != Ty::Any && *got != Ty::Any && got != want_ty {
                return fail(
                    at,
                    format!(
                        "cannot use {} as argument (type {}) to call {name}",
                        got.name(),
                        want_ty.name()
                    ),
                );
            }
        }
        self.uses_client |= PER_REQUEST.contains(&fname);
        Ok((Node::Call(fname, args.into_iter().map(|(n, _)| n).collect()), result))
    }

    /// `(ARRAY, BODY)` where BODY may use `#`.
    fn predicate_args(&mut self) -> Result<Vec<(Node, Ty)>, CompileError> {
        let array = self.expr()?;
        self.expect(",")?;
        let outer = std::mem::replace(&mut self.in_predicate, true);
        let body = self.expr();
        self.in_predicate = outer;
        self.expect(")")?;
        Ok(vec![array, body?])
    }
}
