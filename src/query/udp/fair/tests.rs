//! Who is limited and released, against made-up windows.

use super::*;

const MS: Duration = Duration::from_millis(1);

fn ip(last: u8) -> IpAddr {
    IpAddr::from([127, 0, 0, last])
}

/// One overloaded window: `per` queries from each source, interleaved;
/// the clients limited before it still fall behind.
fn window(f: &mut Fairness, sources: &[(u8, u32)], at: Instant) -> Option<Verdict> {
    for ip in f.limited.iter().map(|l| l.ip).collect::<Vec<_>>() {
        f.behind(ip, true, true);
    }
    let most = sources.iter().map(|s| s.1).max().unwrap_or(0);
    for i in 0..most {
        for &(s, n) in sources {
            if i < n {
                f.talkers.note(ip(s));
            }
        }
    }
    f.overloaded();
    let (verdict, ended) = f.judge(at);
    assert!(ended);
    f.next_window();
    verdict
}

#[test]
fn the_heaviest_client_is_limited_first_then_the_next_polite_ones_never() {
    let t0 = Instant::now();
    let mut f = Fairness::new(10, 4, t0);
    // A flooder (2), a heavy client (3) and 20 polite ones at 1% each.
    let mut load: Vec<(u8, u32)> = (10..30).map(|s| (s, 10)).collect();
    load.push((2, 2000));
    load.push((3, 400));
    assert_eq!(window(&mut f, &load, t0 + 50 * MS), Some(Verdict::Limit(ip(2))));
    // With the flooder apart, the heavy client now stands out.
    load.retain(|s| s.0 != 2);
    assert_eq!(window(&mut f, &load, t0 + 100 * MS), Some(Verdict::Limit(ip(3))));
    // Polite clients share the rest evenly: none is above its share.
    load.retain(|s| s.0 != 3);
    for k in 3..20 {
        assert_eq!(window(&mut f, &load, t0 + k * 50 * MS), None, "window {k}");
    }
    assert_eq!(f.limited().collect::<Vec<_>>(), vec![ip(2), ip(3)]);
}

#[test]
fn without_overload_nobody_is_limited() {
    let t0 = Instant::now();
    let mut f = Fairness::new(10, 4, t0);
    for _ in 0..1000 {
        f.talkers.note(ip(2));
    }
    f.talkers.note(ip(10));
    assert_eq!(f.judge(t0 + 50 * MS), (None, true));
    f.next_window();
    // A client alone is not limited: there is nobody to protect.
    assert_eq!(window(&mut f, &[(2, 1000)], t0 + 100 * MS), None);
    // Off: nobody, even under overload.
    let mut off = Fairness::new(0, 4, t0);
    assert_eq!(window(&mut off, &[(2, 1000)], t0 + 50 * MS), None);
    assert!(!off.counts(32, 32));
}

#[test]
fn at_most_max_clients_are_limited() {
    let t0 = Instant::now();
    let mut f = Fairness::new(10, 2, t0);
    let load = [(2, 500), (3, 400), (4, 300), (10, 5)];
    let verdicts: Vec<_> = (1..6).map(|k| window(&mut f, &load, t0 + k * 50 * MS)).collect();
    assert_eq!(
        verdicts,
        vec![
            Some(Verdict::Limit(ip(2))),
            Some(Verdict::Limit(ip(3))),
            None,
            None,
            None
        ]
    );
}

#[test]
fn a_limited_client_is_released_once_its_queue_keeps_up_for_calm() {
    let t0 = Instant::now();
    let mut f = Fairness::new(10, 4, t0);
    assert_eq!(
        window(&mut f, &[(2, 900), (10, 9)], t0 + 50 * MS),
        Some(Verdict::Limit(ip(2)))
    );
    // Still flooding: its queue drops at the door, every window.
    let mut at = 50;
    for _ in 0..40 {
        at += 50;
        f.behind(ip(2), true, true);
        assert_eq!(f.judge(t0 + at * MS).0, None, "at {at} ms");
    }
    // It slows down: released after CALM of windows that kept up.
    let quiet = at;
    let released = loop {
        at += 50;
        if let (Some(v), _) = f.judge(t0 + at * MS) {
            break (v, at);
        }
        assert!(at < quiet + 2000, "never released");
    };
    assert_eq!(released.0, Verdict::Release(ip(2)));
    assert!(released.1 - quiet >= 500 && released.1 - quiet <= 600, "{released:?}");
    assert!(!f.is_limited(ip(2)));
}

#[test]
fn many_sources_fit_in_fixed_space_and_a_heavy_one_survives_them() {
    let mut t = Talkers::default();
    // 10,000 distinct (spoofed) sources and one real flooder among them.
    for i in 0..10_000u32 {
        t.note(IpAddr::from((0x0a00_0000 + i).to_be_bytes()));
        if i % 4 == 0 {
            t.note(ip(2));
        }
    }
    assert_eq!(t.total(), 12_500);
    let (heaviest, n) = t.heaviest(|_| false).expect("a talker");
    assert_eq!(heaviest, ip(2));
    assert!(n >= 1000, "{n}");
    // None of the spoofed ones stands out: no share above 10%.
    let next = t.heaviest(|x| x == ip(2)).expect("another");
    assert!(u64::from(next.1) * 10 < t.total(), "{next:?}");
}
