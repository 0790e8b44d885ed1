//! `loadtest`: the load generator for clusterdns.
//!
//! Only the command-line surface exists so far; the generator, the pods
//! profile, the capacity knee and the churn mode are tracked in their own
//! issue. Until then `dnsperf` is the load tool (see README.md).

fn main() {
    let help = "loadtest: load generator for clusterdns (not implemented yet; use dnsperf)\n\
                usage: loadtest --help";
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{help}");
        return;
    }
    eprintln!("{help}");
    std::process::exit(64);
}
