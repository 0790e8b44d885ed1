//! The fake's HTTP/1.1 side: keep-alive connections, JSON responses with
//! Content-Length, and watch streams as chunked newline-delimited JSON.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use super::{resource, select, Event, FakeApi, Fault, RESOURCES};

struct Request {
    path: String,
    query: HashMap<String, String>,
    accept: String,
}

pub(crate) async fn serve(listener: TcpListener, api: FakeApi) {
    loop {
        if let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(connection(stream, api.clone()));
        }
    }
}

async fn connection(stream: TcpStream, api: FakeApi) -> std::io::Result<()> {
    let mut stream = BufReader::new(stream);
    while let Some(req) = read_request(&mut stream).await? {
        let fault = {
            let mut s = api.state();
            s.requests += 1;
            s.fault
        };
        match fault {
            Fault::Outage => return Ok(()),
            Fault::Status(code) => {
                respond(
                    &mut stream,
                    code,
                    &status(code, &format!("injected fault for {}", req.path)),
                )
                .await?;
                continue;
            }
            Fault::SlowList(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
            Fault::None | Fault::Silent => {}
        }
        route(&mut stream, &api, &req).await?;
    }
    Ok(())
}

async fn read_request(stream: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    if stream.read_line(&mut line).await? == 0 {
        return Ok(None);
    }
    let target = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut accept = String::new();
    for _ in 0..100 {
        let mut header = String::new();
        if stream.read_line(&mut header).await? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':') {
            if k.eq_ignore_ascii_case("accept") {
                accept = v.trim().to_string();
            }
        }
    }
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let query = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), decode(v)))
        .collect();
    Ok(Some(Request {
        path: path.trim_end_matches('/').to_string(),
        query,
        accept,
    }))
}

/// Percent-decoding of a query value (`+` is a space).
fn decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                out.push(hex.unwrap_or(b'%'));
                i += if hex.is_some() { 3 } else { 1 };
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn status(code: u16, message: &str) -> Value {
    let reason = match code {
        403 => "Forbidden",
        404 => "NotFound",
        410 => "Expired",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        _ => "InternalError",
    };
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code})
}

async fn respond(stream: &mut BufReader<TcpStream>, code: u16, body: &Value) -> std::io::Result<()> {
    respond_text(stream, code, &body.to_string()).await
}

async fn respond_text(stream: &mut BufReader<TcpStream>, code: u16, body: &str) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.get_mut().write_all(head.as_bytes()).await?;
    stream.get_mut().write_all(body.as_bytes()).await
}

/// `(plural, namespace)` of a collection path.
fn collection(path: &str) -> Option<(&'static str, Option<String>)> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (rest, group_ok) = match parts.as_slice() {
        ["api", "v1", rest @ ..] => (rest, true),
        ["apis", "discovery.k8s.io", "v1", rest @ ..] => (rest, true),
        ["apis", "multicluster.x-k8s.io", "v1alpha1", rest @ ..] => (rest, true),
        _ => (&[][..], false),
    };
    if !group_ok {
        return None;
    }
    match rest {
        [plural] => Some((resource(plural)?.0, None)),
        ["namespaces", ns, plural] => Some((resource(plural)?.0, Some(ns.to_string()))),
        _ => None,
    }
}

async fn route(stream: &mut BufReader<TcpStream>, api: &FakeApi, req: &Request) -> std::io::Result<()> {
    if let Some(body) = discovery(&req.path, api) {
        return respond(stream, 200, &body).await;
    }
    let crd_missing = |plural: &str| plural == "serviceimports" && api.state().mcs_crd_missing;
    let Some((plural, ns)) = collection(&req.path).filter(|(plural, _)| !crd_missing(plural)) else {
        return respond(
            stream,
            404,
            &status(
                404,
                &format!("the server could not find the requested resource ({})", req.path),
            ),
        )
        .await;
    };
    if matches!(req.query.get("watch").map(String::as_str), Some("true" | "1")) {
        return watch(stream, api, req, plural, ns).await;
    }
    let body = list(api, req, plural, ns.as_deref());
    respond_text(stream, 200, &body).await
}

fn selected(req: &Request, ns: Option<&str>, object: &Value) -> bool {
    let q = |k: &str| req.query.get(k).map_or("", String::as_str);
    ns.is_none_or(|n| object["metadata"]["namespace"] == n)
        && select::matches(object, q("labelSelector"), q("fieldSelector"))
}

/// What a client asked to receive: whole objects, metadata only, or a Table.
fn shape(req: &Request, object: &Value) -> Value {
    if req.accept.contains("as=PartialObjectMetadata") {
        return json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": object["metadata"]});
    }
    object.clone()
}

fn list(api: &FakeApi, req: &Request, plural: &'static str, ns: Option<&str>) -> String {
    use std::ops::Bound::{Excluded, Unbounded};
    let mut s = api.state();
    s.lists += 1;
    let rv = s.rv;
    // the continue token is "RV:LAST-KEY": the page goes on after that key
    let after = req
        .query
        .get("continue")
        .and_then(|c| c.split_once(':'))
        .map(|(_, k)| k.to_string());
    let limit: usize = req
        .query
        .get("limit")
        .and_then(|l| l.parse().ok())
        .filter(|l| *l > 0)
        .unwrap_or(usize::MAX);
    // Plain lists are written from the objects' stored texts; shaped ones
    // (metadata only, Table) from the objects.
    let plain = !req.accept.contains("as=");
    let mut page: Vec<(String, Value)> = Vec::new();
    let mut texts: Vec<std::sync::Arc<str>> = Vec::new();
    let (mut count, mut last, mut more) = (0, None, false);
    if let Some(objects) = s.objects.get(plural) {
        let start = after.map_or(Unbounded, Excluded);
        let stored = s.texts.get(plural);
        for (key, object) in objects
            .range::<String, _>((start, Unbounded))
            .filter(|(_, o)| selected(req, ns, o))
        {
            if count == limit {
                more = true;
                break;
            }
            count += 1;
            last = Some(key.clone());
            match stored.and_then(|t| t.get(key)).filter(|_| plain) {
                Some(text) => texts.push(text.clone()),
                None => page.push((key.clone(), object.clone())),
            }
        }
    }
    drop(s);
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if let (true, Some(last)) = (more, last) {
        metadata["continue"] = json!(format!("{rv}:{last}"));
    }
    let page: Vec<&Value> = page.iter().map(|(_, o)| o).collect();
    let (_, api_version, kind, _) = resource(plural).unwrap_or(RESOURCES[0]);
    if req.accept.contains("as=Table") {
        return table(&page, rv).to_string();
    }
    let items: Vec<Value> = page.iter().map(|o| shape(req, o)).collect();
    if req.accept.contains("as=PartialObjectMetadataList") {
        return json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": metadata, "items": items}).to_string();
    }
    let mut body =
        format!("{{\"kind\":\"{kind}List\",\"apiVersion\":\"{api_version}\",\"metadata\":{metadata},\"items\":[");
    let shaped: Vec<String> = items.iter().map(ToString::to_string).collect();
    for (i, text) in texts
        .iter()
        .map(|t| &**t)
        .chain(shaped.iter().map(String::as_str))
        .enumerate()
    {
        if i > 0 {
            body.push(',');
        }
        body.push_str(text);
    }
    body.push_str("]}");
    body
}

/// The server-side printing kubectl asks for: NAME and AGE columns.
fn table(page: &[&Value], rv: u64) -> Value {
    let rows: Vec<Value> = page
        .iter()
        .map(|o| json!({"cells": [o["metadata"]["name"], "<unknown>"], "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]}}))
        .collect();
    let columns = json!([
        {"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0},
        {"name": "Age", "type": "string", "format": "", "description": "Age", "priority": 0}
    ]);
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": rv.to_string()}, "columnDefinitions": columns, "rows": rows})
}

async fn chunk(stream: &mut BufReader<TcpStream>, body: &Value) -> std::io::Result<()> {
    let line = format!("{body}\n");
    let framed = format!("{:x}\r\n{line}\r\n", line.len());
    stream.get_mut().write_all(framed.as_bytes()).await
}

async fn watch(
    stream: &mut BufReader<TcpStream>,
    api: &FakeApi,
    req: &Request,
    plural: &'static str,
    ns: Option<String>,
) -> std::io::Result<()> {
    let mut live = api.subscribe();
    let (from, backlog, epoch, expired) = {
        let mut s = api.state();
        s.watches += 1;
        let initial = req.query.get("sendInitialEvents").is_some_and(|v| v == "true");
        let from: u64 = req
            .query
            .get("resourceVersion")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let expired = !initial && from != 0 && from < s.compacted;
        let backlog: Vec<Value> = if initial || from == 0 {
            let objects: Vec<Value> = s
                .objects
                .get(plural)
                .map(|m| m.values().cloned().collect())
                .unwrap_or_default();
            objects
                .into_iter()
                .filter(|o| selected(req, ns.as_deref(), o))
                .map(|o| json!({"type": "ADDED", "object": shape(req, &o)}))
                .collect()
        } else {
            s.history
                .iter()
                .filter(|e| e.rv > from && e.resource == plural && selected(req, ns.as_deref(), &e.object))
                .map(|e| json!({"type": e.kind, "object": shape(req, &e.object)}))
                .collect()
        };
        (s.rv.max(from), backlog, s.stream_epoch, expired)
    };
    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    stream.get_mut().write_all(head.as_bytes()).await?;
    if stalled(api).await {
        return Err(std::io::Error::other("stalled watch"));
    }
    if expired {
        chunk(
            stream,
            &json!({"type": "ERROR", "object": status(410, &format!("too old resource version: {from}"))}),
        )
        .await?;
        return stream.get_mut().write_all(b"0\r\n\r\n").await;
    }
    for event in &backlog {
        chunk(stream, event).await?;
    }
    let (_, api_version, kind, _) = resource(plural).unwrap_or(RESOURCES[0]);
    let bookmark = |rv: u64, end: bool| {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        json!({"type": "BOOKMARK", "object": {"kind": kind, "apiVersion": api_version, "metadata": meta}})
    };
    if req.query.get("sendInitialEvents").is_some_and(|v| v == "true") {
        chunk(stream, &bookmark(from, true)).await?;
    }
    let bookmarks = req.query.get("allowWatchBookmarks").is_some_and(|v| v == "true");
    let timeout: u64 = req
        .query
        .get("timeoutSeconds")
        .and_then(|t| t.parse().ok())
        .unwrap_or(300);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut ticks = 0u64;
    let mut last = from;
    loop {
        tokio::select! {
            event = live.recv() => match event {
                _ if silent(api) => {
                    if stalled(api).await {
                        return Err(std::io::Error::other("stalled watch"));
                    }
                    break; // healed: the client resumes from its last version
                }
                Ok(e) if e.rv > last && e.resource == plural && selected(req, ns.as_deref(), &e.object) => {
                    last = e.rv;
                    chunk(stream, &json!({"type": e.kind, "object": shape(req, &e.object)})).await?;
                }
                Ok(Event { rv, .. }) => last = last.max(rv),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => break,
                Err(_) => break,
            },
            _ = tick.tick() => {
                ticks += 1;
                let (current, gone) = {
                    let s = api.state();
                    (s.rv, s.stream_epoch != epoch || !matches!(s.fault, Fault::None | Fault::Silent))
                };
                if silent(api) {
                    if stalled(api).await {
                        return Err(std::io::Error::other("stalled watch"));
                    }
                    break;
                }
                if gone || tokio::time::Instant::now() >= deadline {
                    break;
                }
                if bookmarks && ticks.is_multiple_of(4) {
                    chunk(stream, &bookmark(current.max(last), false)).await?;
                }
            }
        }
    }
    let outage = api.state().fault == Fault::Outage;
    if outage {
        return Err(std::io::Error::other("outage"));
    }
    stream.get_mut().write_all(b"0\r\n\r\n").await
}

fn silent(api: &FakeApi) -> bool {
    api.state().fault == Fault::Silent
}

/// While [`Fault::Silent`] lasts, sends nothing. Returns whether the
/// connection should just be dropped (another fault replaced the silence)
/// instead of ending the watch cleanly (healed).
async fn stalled(api: &FakeApi) -> bool {
    loop {
        let fault = api.state().fault;
        match fault {
            Fault::Silent => tokio::time::sleep(Duration::from_millis(100)).await,
            Fault::None | Fault::SlowList(_) => return false,
            Fault::Outage | Fault::Status(_) => return true,
        }
    }
}

/// Discovery documents kubectl reads before listing.
fn discovery(path: &str, api: &FakeApi) -> Option<Value> {
    let resources = |group: &str| -> Value {
        let list: Vec<Value> = RESOURCES
            .iter()
            .filter(|r| r.1 == group)
            .map(|(plural, _, kind, namespaced)| {
                let short: &[&str] = match *plural {
                    "services" => &["svc"],
                    "namespaces" => &["ns"],
                    "pods" => &["po"],
                    _ => &[],
                };
                json!({"name": plural, "singularName": kind.to_lowercase(), "namespaced": namespaced, "kind": kind, "verbs": ["get", "list", "watch"], "shortNames": short})
            })
            .collect();
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group, "resources": list})
    };
    Some(match path {
        "/version" => json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0-fake", "platform": "linux/amd64"}),
        "/api" => {
            json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": api.addr.to_string()}]})
        }
        "/apis" => {
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [{"name": "discovery.k8s.io", "versions": [{"groupVersion": "discovery.k8s.io/v1", "version": "v1"}], "preferredVersion": {"groupVersion": "discovery.k8s.io/v1", "version": "v1"}}]})
        }
        "/api/v1" => resources("v1"),
        "/apis/discovery.k8s.io/v1" => resources("discovery.k8s.io/v1"),
        _ => return None,
    })
}
