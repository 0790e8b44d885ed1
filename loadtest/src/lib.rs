//! The load tester's library: today the fake Kubernetes API server
//! ([`fakeapi`]) that the server's watch tests and the churn mode use.
#![forbid(unsafe_code)]

pub mod fakeapi;
