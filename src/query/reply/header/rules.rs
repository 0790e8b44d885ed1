//! `header`'s rules as data: the flags a rule names, and the rules applied
//! to a header's flags word.

/// A header flag a rule names, as its bit in the header's flags word
/// (bytes 2 and 3 of a message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    Qr = 0x8000,
    Aa = 0x0400,
    Rd = 0x0100,
    Ra = 0x0080,
    Ad = 0x0020,
    Cd = 0x0010,
}

/// The flags by name, as the Corefile writes them.
pub const FLAGS: &[(&str, Flag)] = &[
    ("aa", Flag::Aa),
    ("ra", Flag::Ra),
    ("rd", Flag::Rd),
    ("ad", Flag::Ad),
    ("cd", Flag::Cd),
    ("qr", Flag::Qr),
];

/// One rule: `flag` set (`set`) or cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub flag: Flag,
    pub set: bool,
}

/// A block's rules, each list in the order written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    pub query: Vec<Rule>,
    pub response: Vec<Rule>,
}

/// `word` (a header's flags) with `rules` applied in turn.
pub fn apply(rules: &[Rule], word: u16) -> u16 {
    rules.iter().fold(word, |w, r| {
        let bit = r.flag as u16;
        if r.set {
            w | bit
        } else {
            w & !bit
        }
    })
}
