//! The checksum a `persist` file ends with: FNV-1a, 64 bit, over every
//! byte before it.

pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// `hash` carried on over `bytes`.
pub fn fnv_update(mut hash: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        hash = (hash ^ u64::from(*b)).wrapping_mul(FNV_PRIME);
    }
    hash
}

/// FNV-1a (64 bit) of `bytes`: the file's checksum.
pub fn fnv(bytes: &[u8]) -> u64 {
    fnv_update(FNV_OFFSET, bytes)
}
