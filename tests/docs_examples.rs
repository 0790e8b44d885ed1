//! Every Corefile example in the documentation is loaded by `clusterdns
//! check`, so the docs cannot drift from what the server accepts (as
//! CoreDNS's `test/readme_test.go` does for its READMEs).
//!
//! The documents read: `README.md`, `ARCHITECTURE.md`, `deploy/README.md`
//! and every `docs/*.md`. In them every fenced block carries a tag, and the
//! tag says what the test does with it:
//!
//! | tag                  | what it holds                          | checked by                                                |
//! |----------------------|----------------------------------------|-----------------------------------------------------------|
//! | `corefile`           | a whole Corefile                       | `check` exits 0                                           |
//! | `corefile-fragment`  | the lines of one server block          | wrapped in `.:1053 {` … `}`, then as `corefile`           |
//! | `corefile-error`     | a Corefile `check` must refuse         | exit 64, and its stderr is the `check-output` block below |
//! | `check-output`       | what `check` prints for the block above | each line equal, or a prefix where it ends in `...`      |
//! | `corefile-synopsis`  | the grammar in `docs/corefile.md`      | its directives are the ones `check` lists as supported    |
//! | anything else        | not a Corefile (`sh`, `text`, `yaml`)  | nothing                                                   |
//!
//! An untagged fence fails the test: a Corefile could hide there unchecked.
//! A `check-output` block must follow a `corefile-error` block directly
//! (blank lines and prose between them are fine), and every
//! `corefile-error` block must have one.
//!
//! Each example is written as `Corefile` into a fresh directory holding
//! `zones` (a link to this repository's `zones/`, so an example may name
//! `zones/example.db` or `zones/cluster.yaml`: relative paths resolve from
//! the Corefile's directory), and `check -conf Corefile` runs there, so its
//! messages read `Corefile:LINE:COL`. The environment has
//! `KUBE_DNS_SERVICE_HOST=10.96.0.10` for examples that read it with
//! `{$KUBE_DNS_SERVICE_HOST}`.
//!
//! The test counts what it checked and fails below a floor, so it cannot
//! pass by finding nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// At least this many examples are loaded (`corefile` and
/// `corefile-fragment`), and at least this many refused ones compared.
const LOADED_FLOOR: usize = 10;
const REFUSED_FLOOR: usize = 2;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One fenced block of a document.
struct Block {
    /// `FILE:LINE` of its opening fence, for messages.
    at: String,
    tag: String,
    text: String,
}

/// The documents whose blocks are checked.
fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "deploy/README.md"]
        .iter()
        .map(|f| root().join(f))
        .collect();
    let mut more: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("read docs/").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    assert!(!more.is_empty(), "no docs/*.md found");
    more.sort();
    docs.extend(more);
    docs
}

/// The fenced blocks of `text`, in order. A fence may be indented (inside
/// a list item); its lines lose that indentation.
fn blocks(name: &str, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(usize, usize, String, Vec<String>)> = None;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match &mut open {
            None if trimmed.starts_with("```") => {
                let tag = trimmed.trim_start_matches('`').trim().to_string();
                open = Some((n + 1, indent, tag, Vec::new()));
            }
            None => {}
            Some((start, _, tag, lines)) if trimmed.trim_end() == "```" => {
                out.push(Block {
                    at: format!("{name}:{start}"),
                    tag: std::mem::take(tag),
                    text: std::mem::take(lines).join("\n") + "\n",
                });
                open = None;
            }
            Some((_, indent, _, lines)) => {
                let cut = line.len() - line.trim_start().len();
                lines.push(line[cut.min(*indent)..].to_string());
            }
        }
    }
    if let Some((start, ..)) = open {
        panic!("{name}:{start}: a fence that is never closed");
    }
    out
}

/// Every block of every document, named by its place.
fn all_blocks() -> Vec<Block> {
    let mut out = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
        let name = doc.strip_prefix(root()).unwrap_or(&doc).display().to_string();
        out.extend(blocks(&name, &text));
    }
    out
}

/// `clusterdns check -conf Corefile` on `text`, in a fresh directory.
fn check(text: &str) -> Output {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("clusterdns-docs-examples-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::os::unix::fs::symlink(root().join("zones"), dir.join("zones")).expect("link zones/");
    std::fs::write(dir.join("Corefile"), text).expect("write Corefile");
    let out = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(["check", "-conf", "Corefile"])
        .current_dir(&dir)
        .env("KUBE_DNS_SERVICE_HOST", "10.96.0.10")
        .output()
        .expect("run clusterdns check");
    let _ = std::fs::remove_dir_all(&dir);
    out
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Whether `got` is what `expected` (a `check-output` block) shows.
fn matches(expected: &str, got: &str) -> bool {
    let want: Vec<&str> = expected.lines().collect();
    let have: Vec<&str> = got.lines().collect();
    want.len() == have.len()
        && want.iter().zip(&have).all(|(w, h)| match w.strip_suffix("...") {
            Some(prefix) => h.starts_with(prefix),
            None => w == h,
        })
}

/// The directive names of a synopsis: the first word of each line at a
/// server block's indentation (four spaces).
fn synopsis_directives(text: &str) -> Vec<String> {
    let mut names: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("    ") && l.as_bytes().get(4).is_some_and(u8::is_ascii_lowercase))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The directives `check` names as supported when it meets an unknown one.
fn supported() -> Vec<String> {
    let out = check(".:1053 {\n    no_such_directive\n}\n");
    let err = stderr(&out);
    let list = err
        .split_once("(supported: ")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(list, _)| list)
        .unwrap_or_else(|| panic!("check lists no supported directives:\n{err}"));
    let mut names: Vec<String> = list.split(", ").map(str::to_string).collect();
    names.sort();
    names
}

/// What the blocks checked so far came to.
#[derive(Default)]
struct Tally {
    loaded: usize,
    refused: usize,
    synopses: usize,
    failures: Vec<String>,
}

impl Tally {
    /// Checks `blocks[i]` as its tag says; returns how many blocks it took
    /// (a `corefile-error` block takes its `check-output` block too).
    fn judge(&mut self, blocks: &[Block], i: usize) -> usize {
        let b = &blocks[i];
        match b.tag.as_str() {
            "" => self.fail(b, "a fence without a tag (see tests/docs_examples.rs)".into()),
            "corefile" => self.load(b, b.text.clone()),
            "corefile-fragment" => {
                let inner: String = b.text.lines().map(|l| format!("    {l}\n")).collect();
                self.load(b, format!(".:1053 {{\n{inner}}}\n"));
            }
            "corefile-error" => match blocks.get(i + 1).filter(|n| n.tag == "check-output") {
                Some(expected) => {
                    self.refuse(b, expected);
                    return 2;
                }
                None => self.fail(b, "a corefile-error block without a check-output block after it".into()),
            },
            "check-output" => self.fail(b, "a check-output block not after a corefile-error block".into()),
            "corefile-synopsis" => {
                let (documented, supported) = (synopsis_directives(&b.text), supported());
                if documented != supported {
                    let why = format!("the synopsis documents {documented:?}, `check` supports {supported:?}");
                    self.fail(b, why);
                }
                self.synopses += 1;
            }
            _ => {}
        }
        1
    }

    fn fail(&mut self, b: &Block, why: String) {
        self.failures.push(format!("{}: {why}", b.at));
    }

    fn load(&mut self, b: &Block, text: String) {
        let out = check(&text);
        if out.status.code() != Some(0) {
            self.fail(b, format!("`check` refused the example:\n{}", stderr(&out)));
        }
        self.loaded += 1;
    }

    fn refuse(&mut self, b: &Block, expected: &Block) {
        let out = check(&b.text);
        let got = stderr(&out);
        if out.status.code() != Some(64) || !matches(&expected.text, &got) {
            let code = out.status.code();
            self.fail(
                b,
                format!(
                    "`check` exited {code:?} and printed, where {} shows:\n{got}",
                    expected.at
                ),
            );
        }
        self.refused += 1;
    }
}

#[test]
fn every_corefile_example_in_the_docs_loads() {
    let blocks = all_blocks();
    let mut tally = Tally::default();
    let mut i = 0;
    while i < blocks.len() {
        i += tally.judge(&blocks, i);
    }
    let Tally {
        loaded,
        refused,
        synopses,
        failures,
    } = tally;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(
        loaded >= LOADED_FLOOR,
        "only {loaded} Corefile examples found and loaded"
    );
    assert!(
        refused >= REFUSED_FLOOR,
        "only {refused} refused examples found and compared"
    );
    assert_eq!(synopses, 1, "the directive synopsis of docs/corefile.md");
    println!("{loaded} examples loaded, {refused} refused as shown, {synopses} synopsis");
}

/// The rules the test lives by can fail: an untagged fence, a refused
/// example, output that differs, a synopsis missing a directive.
#[test]
fn the_checks_can_fail() {
    let b = blocks(
        "x.md",
        "text\n  ```corefile\n  .:53 {\n      whoami\n  }\n  ```\n```\nuntagged\n```\n",
    );
    assert_eq!(b.len(), 2);
    assert_eq!(
        (b[0].tag.as_str(), b[0].text.as_str()),
        ("corefile", ".:53 {\n    whoami\n}\n")
    );
    assert_eq!((b[1].at.as_str(), b[1].tag.as_str()), ("x.md:7", ""));
    assert_eq!(check(".:1053 {\n    whoami extra\n}\n").status.code(), Some(64));
    assert!(matches("a ...\nb\n", "a b c\nb\n"));
    assert!(!matches("a ...\nb\n", "a b c\nb\nc\n"));
    assert!(!matches("a\n", "a b\n"));
    let documented = synopsis_directives("x {\n    whoami\n        option\n    bind ADDR\n}\n");
    assert_eq!(documented, ["bind", "whoami"]);
    assert_ne!(documented, supported());
}
