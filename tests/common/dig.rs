//! `dig` run against a test server, its reply split into status, flags and
//! sections of records (whitespace collapsed, so `name ttl IN type data`).

/// One dig reply.
#[derive(Debug, Default)]
pub struct Reply {
    pub status: String,
    pub flags: String,
    pub answer: Vec<String>,
    pub authority: Vec<String>,
    pub additional: Vec<String>,
}

impl Reply {
    /// The data of the answer records (last fields after the type).
    pub fn data(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .answer
            .iter()
            .map(|r| r.splitn(5, ' ').nth(4).unwrap_or_default().to_string())
            .collect();
        v.sort();
        v
    }

    /// Whether the AA flag is set.
    pub fn aa(&self) -> bool {
        self.flags.split(' ').any(|f| f == "aa")
    }
}

/// `dig @server -p port ARGS...` with every section shown.
pub fn dig(server: &str, port: u16, args: &[&str]) -> Reply {
    let port = port.to_string();
    let mut all = vec![
        format!("@{server}"),
        "-p".into(),
        port,
        "+noall".into(),
        "+comments".into(),
        "+answer".into(),
        "+authority".into(),
        "+additional".into(),
        "+nocookie".into(),
        "+time=2".into(),
        "+tries=1".into(),
    ];
    all.extend(args.iter().map(ToString::to_string));
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    parse(&super::run("dig", &refs))
}

fn parse(text: &str) -> Reply {
    let mut reply = Reply::default();
    let mut section = None;
    for line in text.lines() {
        if let Some(rest) = line.split("status: ").nth(1) {
            reply.status = rest.split(',').next().unwrap_or_default().to_string();
        }
        if let Some(rest) = line.strip_prefix(";; flags: ") {
            reply.flags = rest.split(';').next().unwrap_or_default().trim().to_string();
        }
        if line.starts_with(";; ") && line.ends_with("SECTION:") {
            section = line.split_whitespace().nth(1).map(str::to_string);
            continue;
        }
        if line.trim().is_empty() || line.starts_with(';') {
            continue;
        }
        let record = line.split_whitespace().collect::<Vec<_>>().join(" ");
        match section.as_deref() {
            Some("ANSWER") => reply.answer.push(record),
            Some("AUTHORITY") => reply.authority.push(record),
            Some("ADDITIONAL") => reply.additional.push(record),
            _ => {}
        }
    }
    reply
}
