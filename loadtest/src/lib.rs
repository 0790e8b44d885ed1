//! The load tester's library: the fake Kubernetes API server
//! ([`fakeapi`]) that the server's watch tests and the benchmarks use,
//! synthetic clusters for it ([`synth`]), and a minimal DNS client for
//! measurements ([`dns`]).
#![forbid(unsafe_code)]

pub mod dns;
pub mod fakeapi;
pub mod synth;
pub mod watchbench;
