//! The hand-over's edge cases, in the same namespaces as the surge test
//! (its `lab`, client and node watcher):
//!
//! - a successor that dies before it serves: the old instance, already
//!   told to stop and waiting for it, keeps serving (no teardown, no gap)
//!   and hands over to the next one that serves;
//! - a `lockdir` nobody can lock in (here a regular file in its place):
//!   the instance logs it, serves, and runs as if alone: it tears down at
//!   exit, as before leases existed.

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::common::netns::wait_log;
use super::{corefile, finish_client, lab, start_client, start_serving, wait_ready, watch_node, Mode, LINK_LOCAL};

/// SIGTERM to child `i`, not waiting for it to exit.
fn term(lab: &super::Lab, i: usize) {
    let pid = lab.children[i].id().to_string();
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
}

#[test]
fn a_successor_killed_before_serving_leaves_the_old_one_serving() {
    let _serial = super::SERIAL.lock();
    let mut lab = match lab(Mode::Iptables, "o") {
        Ok(l) => l,
        Err(why) => return super::not_checked(&why),
    };
    let (old, old_log, _) = start_serving(&mut lab, "a0");
    wait_ready(&lab);
    let done = Arc::new(AtomicBool::new(false));
    let taken = Arc::new(AtomicU64::new(0));
    let watcher = watch_node(&lab, Mode::Iptables, "iptables", done.clone(), taken.clone());
    let client = start_client(&lab);
    super::load_flowing(&lab, LINK_LOCAL, super::FLOWING);
    // A successor that never loads its cluster state (an API server
    // nobody answers for): it stays "starting", never binds.
    let unready = corefile(&lab).replace(
        &format!("snapshot {}", super::common::demo_cluster().display()),
        "endpoint https://10.200.0.99:6443",
    );
    let (doomed, doomed_log) = lab.start("b0", &unready);
    wait_log(
        &doomed_log,
        "binding the DNS listeners once the cluster state is loaded",
    );
    term(&lab, old);
    wait_log(&old_log, "is starting: serving until it answers");
    super::kill9(&mut lab, doomed);
    let seen = taken.load(Ordering::Relaxed);
    let text = wait_log(&old_log, "ended before it served: still serving");
    super::sampled_twice_since(&taken, seen);
    assert!(!text.contains("torn down"), "the old one tore down:\n{text}");
    std::thread::sleep(Duration::from_millis(1500));
    let (_next, _, _) = start_serving(&mut lab, "c0");
    let seen = taken.load(Ordering::Relaxed);
    let text = wait_log(&old_log, "stopped (");
    super::sampled_twice_since(&taken, seen);
    assert!(
        lab.children[old].wait().is_ok_and(|s| s.success()),
        "old instance exits cleanly"
    );
    assert!(
        text.contains("handing over to instance"),
        "no hand-over to the next one:\n{text}"
    );
    assert!(
        text.contains("not tearing down"),
        "the old one must not tear down:\n{text}"
    );
    let tally = finish_client(client);
    done.store(true, Ordering::Relaxed);
    let (samples, bad, first) = watcher.join().expect("watcher");
    println!("nodelocal surge: successor killed before serving, then another: {tally:?}; node checked {samples} times, {bad} bad");
    assert!(tally.sent as f64 >= super::FLOWING, "the load ran: {tally:?}");
    assert_eq!((tally.lost, tally.servfail, tally.tcp_lost), (0, 0, 0), "{tally:?}");
    // sampled through both steps (counted, not timed)
    assert!(
        samples >= 4 && bad == 0,
        "{bad} of {samples} samples wrong; first: {first}"
    );
}

#[test]
fn an_unusable_lockdir_runs_the_instance_alone() {
    let _serial = super::SERIAL.lock();
    let mut lab = match lab(Mode::Iptables, "l") {
        Ok(l) => l,
        Err(why) => return super::not_checked(&why),
    };
    // A file where the directory should be: nothing can be created in it.
    std::fs::write(lab.dir.join("lockdir"), b"not a directory").expect("write");
    let (i, log, text) = start_serving(&mut lab, "a0");
    assert!(text.contains("running as the only instance"), "{text}");
    wait_ready(&lab);
    let answer = lab.dig(LINK_LOCAL, super::NAME, false);
    assert!(answer.contains("10.96.0.1"), "answers at {LINK_LOCAL}: {answer}");
    assert!(lab.stop(i), "exits cleanly");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(text.contains("torn down"), "alone, it tears down at exit:\n{text}");
    assert!(lab.rules("iptables", "raw").is_empty(), "rules left");
    assert!(
        !lab.sh(&lab.node, "ip -o addr show dev nl0").1.contains("inet "),
        "addresses left"
    );
}
