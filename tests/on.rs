//! `on` end to end (caddy's `onevent`, CoreDNS's `on` directive): a
//! `startup` command that writes a file has run by the time the server
//! answers; a background one (`&`) runs beside it; a command that cannot
//! start and one that exits non-zero are logged and change nothing else;
//! a `shutdown` command runs on SIGTERM before the process exits. Rows of
//! caddy's `onevent/hook/hook_test.go` TestHook (blocking `mkdir`, a
//! non-blocking one, a command that does not exist) over the real binary.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::netns::eventually;
use common::{run, temp_dir, Server};

/// A ceiling only a hang reaches.
const HANG: Duration = Duration::from_secs(30);

fn corefile(dir: &Path) -> String {
    let d = dir.display();
    format!(
        r#".:0 {{
    bind 127.0.0.1
    ready 127.0.0.1:0
    on startup mkdir {d}/started
    on startup sh -c "sleep 0.3; mkdir {d}/background" &
    on startup /nonexistent/clusterdns-on-test
    on startup false
    on shutdown sh -c "echo bye > {d}/stopped"
    template IN A {{
        answer "{{{{ .Name }}}} 60 IN A 192.0.2.9"
    }}
}}
"#
    )
}

/// `on startup` runs again for a configuration a reload switches in
/// (caddy's instance-startup event), the new configuration's commands.
#[test]
fn a_reload_runs_the_new_startup_commands() {
    let dir = temp_dir("on-reload");
    let d = dir.display();
    let text = |marker: &str| {
        format!(".:0 {{\n    bind 127.0.0.1\n    ready 127.0.0.1:0\n    reload 2s 0s\n    on startup mkdir {d}/{marker}\n    whoami\n}}\n")
    };
    let server = Server::start(&dir, &text("first"));
    assert!(eventually(|| dir.join("first").exists()), "startup command ran");
    std::fs::write(dir.join("Corefile"), text("second")).expect("rewrite the Corefile");
    assert!(
        eventually(|| dir.join("second").exists()),
        "the reloaded configuration's startup command ran"
    );
    assert!(server.is_running());
}

#[test]
fn startup_and_shutdown_commands_run() {
    let dir = temp_dir("on");
    let mut server = Server::start(&dir, &corefile(&dir));
    // TestHook/blocking: waited for once listening (ready answers after it)
    assert!(eventually(|| dir.join("started").exists()), "startup command ran");
    let port = server.port();
    let answer = run(
        "dig",
        &["@127.0.0.1", "-p", &port, "+short", "+tries=1", "x.example", "A"],
    );
    assert_eq!(answer.trim(), "192.0.2.9");
    // TestHook/nonBlocking: started and left to run
    assert!(eventually(|| dir.join("background").exists()), "background command ran");
    // TestHook/nonExistent, and a command that fails: logged, nothing else
    let started = Instant::now();
    while started.elapsed() < HANG && !(server.log_contains("did not start") && server.log_contains("failed")) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(server.log_contains("startup command \"/nonexistent/clusterdns-on-test\" did not start"));
    assert!(server.log_contains("startup command \"false\" failed"));
    assert!(!dir.join("stopped").exists(), "shutdown command before shutdown");
    run("kill", &["-TERM", &server.pid().to_string()]);
    let status = server.wait_exit(HANG).expect("exits on SIGTERM");
    assert!(status.success(), "{status:?}");
    let bye = std::fs::read_to_string(dir.join("stopped")).expect("shutdown command wrote its file");
    assert_eq!(bye.trim(), "bye");
}
