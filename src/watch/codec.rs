//! The byte-level encoding of records in a `persist` file (the layout is
//! drawn in [`super::persist`]): an encoder streaming to any writer while
//! it checksums, and a decoder over a whole file in memory.

pub use dec::Dec;
pub use enc::Enc;
pub use fnv::fnv;

mod dec;
mod enc;
mod fnv;
#[cfg(test)]
mod tests;
