//! The architecture's one hard rule: the query path and the watch path meet
//! only at the store. Neither imports the other.

use std::path::Path;

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src").filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn offenders(module: &str, forbidden: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(module);
    let mut files = Vec::new();
    sources(&root, &mut files);
    assert!(!files.is_empty(), "no sources under {}", root.display());
    files
        .into_iter()
        .filter(|f| std::fs::read_to_string(f).is_ok_and(|text| text.contains(forbidden)))
        .map(|f| f.display().to_string())
        .collect()
}

#[test]
fn query_and_watch_never_import_each_other() {
    assert_eq!(
        offenders("query", "crate::watch"),
        Vec::<String>::new(),
        "query must not use watch"
    );
    assert_eq!(
        offenders("watch", "crate::query"),
        Vec::<String>::new(),
        "watch must not use query"
    );
}
