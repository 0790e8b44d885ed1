//! The fuzz targets' properties (`clusterdns::fuzzing`) on the stable
//! toolchain, for a fixed number of inputs each (the same inputs on every
//! machine, however busy: the mutations come from a fixed seed): every
//! seed in `fuzz/corpus`, then random mutations of them (bit flips, byte
//! edits, cuts, splices, repeats). The long libFuzzer runs are
//! `cargo +nightly fuzz run`; this keeps the properties checked on every
//! `.ci/run`.

use std::path::{Path, PathBuf};
use std::time::Instant;

/// Mutated inputs for a target: `default`, or `FUZZ_SMOKE_INPUTS`.
fn inputs(default: u64) -> u64 {
    std::env::var("FUZZ_SMOKE_INPUTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = root().join("fuzz/corpus").join(target);
    let mut out: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| std::fs::read(e.ok()?.path()).ok())
        .collect();
    assert!(!out.is_empty(), "no seeds in {}", dir.display());
    out.sort();
    out
}

/// One random mutation of `seed` (with `other` for splices).
fn mutate(rng: &mut fastrand::Rng, seed: &[u8], other: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..rng.usize(1..=4) {
        let len = v.len();
        match rng.u8(0..7) {
            0 if len > 0 => {
                let i = rng.usize(..len);
                v[i] ^= 1 << rng.u8(0..8);
            }
            1 if len > 0 => {
                let i = rng.usize(..len);
                v[i] = [0, 0xFF, 0x7F, 0x80, 0xC0, b'.', b'{', b'}', b'\n'][rng.usize(..9)];
            }
            2 if len > 0 => v.truncate(rng.usize(..len)),
            3 => {
                let i = rng.usize(..=len);
                v.insert(i, rng.u8(..));
            }
            4 if !other.is_empty() => {
                let cut = rng.usize(..=len);
                let from = rng.usize(..other.len());
                v.truncate(cut);
                v.extend_from_slice(&other[from..]);
            }
            5 if len > 1 => {
                let a = rng.usize(..len);
                let b = rng.usize(a..len);
                let piece = v[a..=b].to_vec();
                v.splice(a..a, piece);
            }
            _ if len > 1 => {
                let (a, b) = (rng.usize(..len), rng.usize(..len));
                v.swap(a, b);
            }
            _ => v.push(rng.u8(..)),
        }
    }
    v.truncate(8192);
    v
}

/// Runs `check` over the seeds, then over `mutations` mutated inputs;
/// how many inputs were checked.
fn run(target: &str, mutations: u64, mut check: impl FnMut(&[u8])) -> u64 {
    let seeds = seeds(target);
    for s in &seeds {
        check(s);
    }
    let mut rng = fastrand::Rng::with_seed(0x5eed_f022);
    let started = Instant::now();
    let mut n = seeds.len() as u64;
    for _ in 0..mutations {
        let seed = &seeds[rng.usize(..seeds.len())];
        let other = &seeds[rng.usize(..seeds.len())];
        let input = mutate(&mut rng, seed, other);
        check(&input);
        n += 1;
    }
    eprintln!(
        "{target}: {n} inputs in {:.1} s, every property held",
        started.elapsed().as_secs_f64()
    );
    n
}

#[test]
fn the_query_path_keeps_its_reply_properties_on_mutated_queries() {
    let mut path = clusterdns::fuzzing::QueryPath::demo(&root());
    let mutations = inputs(20_000);
    assert!(run("query", mutations, |d| path.check(d)) > mutations);
}

#[test]
fn the_corefile_parser_never_panics_and_positions_every_error() {
    let mutations = inputs(5_000);
    assert!(run("corefile", mutations, clusterdns::fuzzing::corefile) > mutations);
}

#[test]
fn dump_conversion_never_panics_on_mutated_dumps() {
    let dump = clusterdns::fuzzing::Dump::demo(Path::new(env!("CARGO_MANIFEST_DIR")));
    let mutations = inputs(15_000);
    assert!(run("dump", mutations, |d| dump.check(d)) > mutations);
}
