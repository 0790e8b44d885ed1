//! The load tester's library: the fake Kubernetes API server
//! ([`fakeapi`]) that the server's watch tests and the benchmarks use,
//! synthetic clusters for it ([`synth`]), and a minimal DNS client for
//! measurements ([`dns`]).
#![forbid(unsafe_code)]

pub mod capacity;
pub mod churn;
pub mod dns;
pub mod engine;
pub mod fakeapi;
pub mod handshakes;
pub mod incluster;
pub mod merge;
pub mod outcome;
pub mod plan;
pub mod report;
pub mod schedule;
pub mod synth;
pub mod watchbench;
pub mod workload;
