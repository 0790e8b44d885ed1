//! The byte-level encoding of records in a `persist` file (the layout is
//! drawn in [`super::persist`]): an encoder streaming to any writer while
//! it checksums, and a decoder over a whole file in memory.

pub use dec::Dec;
pub use enc::Enc;

mod dec;
mod enc;
#[cfg(test)]
mod tests;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv_update(mut hash: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        hash = (hash ^ u64::from(*b)).wrapping_mul(FNV_PRIME);
    }
    hash
}

/// FNV-1a (64 bit) of `bytes`: the file's checksum.
pub fn fnv(bytes: &[u8]) -> u64 {
    fnv_update(FNV_OFFSET, bytes)
}
