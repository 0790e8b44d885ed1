//! The shared schedule of N generators: generator `index` of `of` offers
//! `1/of` of every step's rate, and step `k` starts for all of them at the
//! same wall-clock time, `start_at + k × slot`. A slot is the step, the
//! wait for late answers and a second to spare, so a generator that
//! finishes early waits and one that overran starts late (and its report
//! says by how much). Without `--start-at` steps follow each other at once.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where this generator sits in the schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub index: usize,
    pub of: usize,
    /// Unix time (seconds) of the first step, shared by all generators.
    pub start_at: Option<f64>,
    /// Seconds from one step's start to the next's.
    pub slot: f64,
}

/// The environment variable a Kubernetes Indexed Job sets in each pod.
pub const JOB_INDEX: &str = "JOB_COMPLETION_INDEX";

impl Schedule {
    /// `--index` (else `$JOB_COMPLETION_INDEX`, else 0) of `--of`, with the
    /// slot for steps of `step_seconds` whose answers may arrive until
    /// `timeout` after the last query.
    pub fn new(
        index: Option<usize>,
        of: usize,
        start_at: Option<f64>,
        step_seconds: f64,
        timeout: Duration,
    ) -> Result<Schedule, String> {
        let index = match index {
            Some(i) => i,
            None => match std::env::var(JOB_INDEX) {
                Ok(v) => v
                    .trim()
                    .parse()
                    .map_err(|_| format!("${JOB_INDEX}: '{v}' is not a number"))?,
                Err(_) => 0,
            },
        };
        if of == 0 || index >= of {
            return Err(format!("--index {index} --of {of}: the index must be below --of"));
        }
        Ok(Schedule {
            index,
            of,
            start_at,
            slot: (step_seconds + timeout.as_secs_f64() + 1.0).ceil(),
        })
    }

    /// This generator's share of a total rate.
    pub fn share(&self, rate: f64) -> f64 {
        rate / self.of as f64
    }

    /// When step `k` starts (Unix seconds), if the schedule is shared.
    pub fn at(&self, k: usize) -> Option<f64> {
        Some(self.start_at? + k as f64 * self.slot)
    }

    /// Sleeps until step `k`'s start; returns at once when late or unshared.
    pub fn wait(&self, k: usize) {
        if let Some(at) = self.at(k) {
            let ahead = at - unix_now();
            if ahead > 0.0 {
                std::thread::sleep(Duration::from_secs_f64(ahead));
            }
        }
    }

    /// Offsets `queries` so generators do not send the same names in step.
    pub fn rotate<T>(&self, queries: &mut [T]) {
        if !queries.is_empty() {
            let at = self.index * queries.len() / self.of;
            queries.rotate_left(at);
        }
    }
}

/// The wall clock, in Unix seconds.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generators_share_rates_and_start_times() {
        let s = Schedule::new(Some(2), 4, Some(1000.0), 5.0, Duration::from_secs(2)).expect("valid");
        assert_eq!(s.share(40_000.0), 10_000.0);
        assert_eq!(s.slot, 8.0);
        assert_eq!(s.at(3), Some(1024.0));
        let mut q = [0, 1, 2, 3, 4, 5, 6, 7];
        s.rotate(&mut q);
        assert_eq!(q[0], 4);
        assert!(Schedule::new(Some(4), 4, None, 5.0, Duration::ZERO).is_err());
        let alone = Schedule::new(Some(0), 1, None, 5.0, Duration::ZERO).expect("valid");
        assert_eq!(alone.at(0), None);
    }
}
