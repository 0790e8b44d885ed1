//! The session against rustls's own client, in memory (handshake, data
//! both ways, a key update, a record split across reads, the client's
//! close), and the halves over loopback against tokio-rustls's client.

use std::io::{Read, Write};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt, ReadBuf};

use super::session::{Seal, Session, Stage};

/// A self-signed certificate for `dns.test` (P-256, made with openssl,
/// valid until 2126) and its key: test material only.
const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIBpTCCAUqgAwIBAgIUN8DkCTFUBe1ou8TN0tUyMYrYudowCgYIKoZIzj0EAwIw\nEzERMA8GA1UEAwwIZG5zLnRlc3QwIBcNMjYxMjA2MDcwOTA5WhgPMjEyNjExMTIw\nNzA5MDlaMBMxETAPBgNVBAMMCGRucy50ZXN0MFkwEwYHKoZIzj0CAQYIKoZIzj0D\nAQcDQgAEy2ZHMlT9TI3iwWgBdQFoG26HKn7B4llP60n3zAENOtl573Kih6d40VDt\nzJ2LnMMuw6/Tf9H14NogFxhEBMWzraN6MHgwHQYDVR0OBBYEFBi6OkaQW2XierEy\n8qg+XLYxmZdaMB8GA1UdIwQYMBaAFBi6OkaQW2XierEy8qg+XLYxmZdaMBMGA1Ud\nEQQMMAqCCGRucy50ZXN0MAwGA1UdEwEB/wQCMAAwEwYDVR0lBAwwCgYIKwYBBQUH\nAwEwCgYIKoZIzj0EAwIDSQAwRgIhAJAQ1edd7JX6n5yTMpg7vAAsIBOjS4HDPzhp\nPHBqIh0YAiEAgrpN0dPZ3VOrUada+QLwbAthspZWzG2cuydyGsRgkq0=\n-----END CERTIFICATE-----\n";
const KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgdNjcr41IFK+yNmGE\nFCLfW2nYgCEFp/emQ6a7OI5fxduhRANCAATLZkcyVP1MjeLBaAF1AWgbbocqfsHi\nWU/rSffMAQ062XnvcqKHp3jRUO3MnYucwy7Dr9N/0fXg2iAXGEQExbOt\n-----END PRIVATE KEY-----\n";

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn server_config() -> Arc<rustls::ServerConfig> {
    let cert = CertificateDer::from_pem_slice(CERT.as_bytes()).expect("certificate");
    let key = PrivateKeyDer::from_pem_slice(KEY.as_bytes()).expect("key");
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .expect("server config");
    config.alpn_protocols = vec![b"dot".to_vec()];
    Arc::new(config)
}

fn client_config() -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(CERT.as_bytes()).expect("certificate"))
        .expect("root");
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"dot".to_vec()];
    Arc::new(config)
}

fn client() -> rustls::ClientConnection {
    let name = ServerName::try_from("dns.test").expect("name");
    rustls::ClientConnection::new(client_config(), name).expect("client")
}

/// What the client has to send, as TLS bytes.
fn from_client(client: &mut rustls::ClientConnection) -> Vec<u8> {
    let mut wire = Vec::new();
    while client.wants_write() {
        client.write_tls(&mut wire).expect("client write");
    }
    wire
}

/// `wire` read by the session, which then takes what it can.
fn to_session(session: &mut Session, wire: &[u8]) -> Stage {
    if !wire.is_empty() {
        let read = session.read_with(|room| {
            room.extend_from_slice(wire);
            Ok(wire.len())
        });
        assert_eq!(read.expect("read"), wire.len());
    }
    session.advance(Seal::Nothing).expect("advance")
}

/// What the session has to send, taken by the client.
fn to_client(session: &mut Session, client: &mut rustls::ClientConnection) {
    let wire = session.unsent().to_vec();
    session.sent(wire.len());
    let mut rest: &[u8] = &wire;
    while !rest.is_empty() {
        client.read_tls(&mut rest).expect("client read");
        client.process_new_packets().expect("client process");
    }
}

/// A client and a session that have finished their handshake.
fn handshaken() -> (rustls::ClientConnection, Session) {
    let (mut client, mut session) = (client(), Session::new(server_config()).expect("session"));
    for _ in 0..8 {
        let wire = from_client(&mut client);
        let stage = to_session(&mut session, &wire);
        to_client(&mut session, &mut client);
        if stage == Stage::Open && !client.is_handshaking() {
            assert_eq!(client.alpn_protocol(), Some(&b"dot"[..]));
            return (client, session);
        }
    }
    panic!("no handshake after 8 round trips");
}

/// The plaintext the session gives now.
fn plain(session: &mut Session) -> Vec<u8> {
    let mut room = [0u8; 256];
    let mut buf = ReadBuf::new(&mut room);
    while session.read_plain(&mut buf) {}
    buf.filled().to_vec()
}

/// The client sends `query`; the session answers `reply`.
fn exchange(client: &mut rustls::ClientConnection, session: &mut Session, query: &[u8], reply: &[u8]) {
    client.writer().write_all(query).expect("client send");
    let wire = from_client(client);
    assert_eq!(to_session(session, &wire), Stage::Open);
    assert_eq!(plain(session), query);
    assert_eq!(session.advance(Seal::Data(reply)).expect("seal"), Stage::Open);
    to_client(session, client);
    let mut got = vec![0u8; reply.len()];
    client.reader().read_exact(&mut got).expect("client reads");
    assert_eq!(got, reply);
}

#[test]
fn a_session_holds_no_buffer_between_queries_and_follows_a_key_update() {
    let (mut client, mut session) = handshaken();
    assert_eq!(session.capacities(), [0, 0, 0], "idle after the handshake");
    exchange(&mut client, &mut session, b"\x00\x05query", b"\x00\x05reply");
    assert_eq!(session.capacities(), [0, 0, 0], "idle after a query");
    // The client updates its keys and asks for ours to change too (rustls
    // sends ours before its next data): both directions go on.
    client.refresh_traffic_keys().expect("key update");
    let wire = from_client(&mut client);
    assert!(!wire.is_empty(), "the client's key update");
    assert_eq!(to_session(&mut session, &wire), Stage::Open);
    exchange(&mut client, &mut session, b"again", b"answered");
    assert_eq!(session.capacities(), [0, 0, 0]);
    client.send_close_notify();
    let wire = from_client(&mut client);
    to_session(&mut session, &wire);
    assert!(
        session.ended && plain(&mut session).is_empty(),
        "the client's end is the end of reading"
    );
}

#[test]
fn a_record_split_across_reads_waits_for_its_rest() {
    let (mut client, mut session) = handshaken();
    client.writer().write_all(b"split query").expect("client send");
    let wire = from_client(&mut client);
    let (head, tail) = wire.split_at(wire.len() / 2);
    assert_eq!(to_session(&mut session, head), Stage::Open);
    assert!(plain(&mut session).is_empty());
    assert!(session.capacities()[0] > 0, "the record's start is kept");
    to_session(&mut session, tail);
    assert_eq!(plain(&mut session), b"split query");
    assert_eq!(session.capacities(), [0, 0, 0]);
}

#[tokio::test]
async fn the_halves_carry_both_ways_over_a_socket_and_close_with_close_notify() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.expect("accept");
        let (mut read, mut write) = super::handshake(tcp, server_config()).await.expect("handshake");
        let mut query = Vec::new();
        while query.len() < 5 {
            assert!(read.read_buf(&mut query).await.expect("read") > 0);
        }
        write.write_all(b"reply").await.expect("write");
        write.flush().await.expect("flush");
        write.shutdown().await.expect("shutdown");
        query
    });
    let mut tls = connect(addr).await;
    tls.write_all(b"query").await.expect("client write");
    let mut reply = Vec::new();
    tls.read_to_end(&mut reply).await.expect("reply, then close_notify");
    assert_eq!(reply, b"reply");
    assert_eq!(server.await.expect("server"), b"query");
}

/// A rustls client's TLS connection to `addr` (as dns.test), handshake done.
async fn connect(addr: std::net::SocketAddr) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let name = ServerName::try_from("dns.test").expect("name");
    tokio_rustls::TlsConnector::from(client_config())
        .connect(name, tcp)
        .await
        .expect("client handshake")
}

#[tokio::test]
async fn a_reply_larger_than_the_socket_takes_waits_for_the_client_and_arrives_whole() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    // 8 MiB: more than loopback's send and receive buffers hold together.
    let big: Vec<u8> = (0..8 << 20).map(|i: u32| (i % 251) as u8).collect();
    let sent = big.clone();
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.expect("accept");
        let (_read, mut write) = super::handshake(tcp, server_config()).await.expect("handshake");
        for batch in sent.chunks(16 * 1024) {
            write.write_all(batch).await.expect("write");
        }
        write.flush().await.expect("flush");
        write.shutdown().await.expect("shutdown");
    });
    let mut tls = connect(addr).await;
    // The client reads late: the server's writes wait for it.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let mut got = Vec::new();
    tls.read_to_end(&mut got).await.expect("reply, then close_notify");
    assert!(got == big, "{} of {} bytes, or not the same", got.len(), big.len());
    server.await.expect("server");
}
