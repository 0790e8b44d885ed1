//! The web configuration file read as the exporter toolkit reads it, and
//! what clusterdns refuses of it.

use super::*;

/// Reads `text` written to a file of its own.
fn parse(text: &str) -> Result<WebConfig, String> {
    let dir = std::env::temp_dir().join(format!("clusterdns-web-{}-{}", std::process::id(), fastrand::u64(..)));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("web.yml");
    std::fs::write(&file, text).expect("write");
    let out = read(&file);
    let _ = std::fs::remove_dir_all(&dir);
    out.map(|w| WebConfig {
        file: PathBuf::from("web.yml"),
        tls: w.tls.map(|t| MetricsTls {
            cert: t.cert.strip_prefix(&dir).map(Path::to_path_buf).unwrap_or(t.cert),
            key: t.key.strip_prefix(&dir).map(Path::to_path_buf).unwrap_or(t.key),
            client_ca: t
                .client_ca
                .map(|c| c.strip_prefix(&dir).map(Path::to_path_buf).unwrap_or(c)),
            ..t
        }),
    })
}

#[test]
fn an_empty_file_or_section_is_plain_http() {
    for text in [
        "",
        "\n",
        "# nothing\n",
        "tls_server_config:\n",
        "tls_server_config: {}\n",
    ] {
        assert_eq!(parse(text).expect(text).tls, None, "{text:?}");
    }
}

#[test]
fn the_supported_keys_are_read_beside_the_file() {
    let text = "tls_server_config:\n  cert_file: server.crt\n  key_file: /abs/server.key\n  \
                client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n  min_version: TLS13\n";
    let tls = parse(text).expect("read").tls.expect("tls");
    assert_eq!(tls.cert, PathBuf::from("server.crt"));
    assert_eq!(tls.key, PathBuf::from("/abs/server.key"));
    assert_eq!(tls.client_ca, Some(PathBuf::from("ca.pem")));
    assert_eq!(tls.client_auth, ClientCerts::RequireAndVerifyClientCert);
    assert_eq!(
        (tls.min_version, tls.max_version),
        (TlsVersion::Tls13, TlsVersion::Tls13)
    );
    let old = "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireClientCert\n";
    assert_eq!(
        parse(old).expect("read").tls.expect("tls").client_auth,
        ClientCerts::RequireAnyClientCert
    );
}

/// Each text fails with a message containing the words given.
#[test]
fn errors_say_what_is_wrong() {
    let pair = "tls_server_config:\n  cert_file: a\n  key_file: b\n";
    let cases = [
        ("hWkNKCp3fvIx3jKnsaBI\n", "not a web configuration"),
        (
            "tls_server_config:\n  cert_file: a\n  key_file: \"\"\n",
            "missing key_file",
        ),
        (
            "tls_server_config:\n  cert_file: \"\"\n  key_file: b\n",
            "missing cert_file",
        ),
        ("tls_server_config:\n  cert_flie: a\n", "cert_flie"),
        ("tls_config:\n  cert_file: a\n", "tls_config"),
        (
            &format!("{pair}  cipher_suites: [TLS_AES_128_GCM_SHA256]\n"),
            "cipher_suites is not supported",
        ),
        (
            &format!("{pair}  curve_preferences: [X25519]\n"),
            "curve_preferences is not supported",
        ),
        (
            &format!("{pair}  client_allowed_sans: [a]\n"),
            "client_allowed_sans is not supported",
        ),
        (
            &format!("{pair}  cert: PEM\n"),
            "tls_server_config.cert is not supported",
        ),
        (&format!("{pair}  min_version: TLS10\n"), "TLS10 is not supported"),
        (&format!("{pair}  max_version: TLS11\n"), "TLS11 is not supported"),
        (&format!("{pair}  min_version: TLS14\n"), "'TLS14'"),
        (
            &format!("{pair}  min_version: TLS13\n  max_version: TLS12\n"),
            "above max_version",
        ),
        (&format!("{pair}  client_auth_type: Sometimes\n"), "'Sometimes'"),
        (
            &format!("{pair}  client_ca_file: ca.pem\n"),
            "without a client_auth_type",
        ),
        ("tls_server_config:\n  min_version: TLS13\n", "no cert_file"),
        (
            &format!("{pair}http_server_config:\n  http2: false\n"),
            "http_server_config is not supported",
        ),
        (
            &format!("{pair}basic_auth_users:\n  a: b\n"),
            "basic_auth_users is not supported",
        ),
        (
            &format!("{pair}rate_limit:\n  burst: 1\n"),
            "rate_limit is not supported",
        ),
    ];
    for (text, want) in cases {
        let e = parse(text).expect_err(text);
        assert!(e.contains(want), "{text:?}: want '{want}' in '{e}'");
    }
}

#[test]
fn a_missing_file_is_an_error() {
    let e = read(Path::new("/nonexistent/web.yml")).expect_err("missing");
    assert!(e.contains("cannot read it"), "{e}");
}
