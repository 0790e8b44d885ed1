//! Test certificates, made by openssl at test time in a test's directory:
//! CAs and the certificates they sign (P-256 keys, two days' validity, or
//! a validity in the past for an expired one).

use std::path::Path;
use std::process::Command;

/// Runs `openssl ARGS` in `dir`; panics with its message on failure.
pub fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const EC: [&str; 5] = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];

/// A self-signed CA: `NAME.key` and `NAME.pem`, subject `CN`.
pub fn ca(dir: &Path, name: &str, cn: &str) {
    let (key, pem, subj) = (format!("{name}.key"), format!("{name}.pem"), format!("/CN={cn}"));
    let mut args = vec![
        "req", "-x509", "-days", "2", "-subj", &subj, "-keyout", &key, "-out", &pem,
    ];
    args.extend(EC);
    openssl(dir, &args);
}

/// What a signed certificate is for.
pub enum Usage {
    /// A server for `DNS:NAME` (the CN) and `IP:127.0.0.1`.
    Server,
    /// A client (`clientAuth`).
    Client,
}

/// A certificate for `cn` signed by the CA `ca`: `NAME.key` and
/// `NAME.pem`. `expired`: valid for one day in 2020 only.
pub fn signed(dir: &Path, name: &str, ca: &str, cn: &str, usage: Usage, expired: bool) {
    let (key, csr, ext, pem) = (
        format!("{name}.key"),
        format!("{name}.csr"),
        format!("{name}.ext"),
        format!("{name}.pem"),
    );
    let subj = format!("/CN={cn}");
    let mut args = vec!["req", "-subj", &subj, "-keyout", &key, "-out", &csr];
    args.extend(EC);
    openssl(dir, &args);
    let text = match usage {
        Usage::Server => {
            format!("subjectAltName=DNS:{cn},IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
        }
        Usage::Client => "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n".to_string(),
    };
    std::fs::write(dir.join(&ext), text).expect("write the extensions");
    let (ca_pem, ca_key) = (format!("{ca}.pem"), format!("{ca}.key"));
    if !expired {
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                &ca_pem,
                "-CAkey",
                &ca_key,
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                &ext,
                "-out",
                &pem,
            ],
        );
        return;
    }
    // `openssl x509` dates a certificate from now; `openssl ca` takes
    // any dates, with a minimal CA database of its own.
    let db = format!("{name}-ca");
    let conf = format!(
        "[ca]\ndefault_ca = d\n[d]\ndatabase = {db}/index.txt\nserial = {db}/serial\nnew_certs_dir = {db}\ndefault_md = sha256\npolicy = p\nunique_subject = no\n[p]\ncommonName = supplied\n"
    );
    std::fs::create_dir_all(dir.join(&db)).expect("ca dir");
    std::fs::write(dir.join(&db).join("index.txt"), "").expect("index");
    std::fs::write(dir.join(&db).join("serial"), "01\n").expect("serial");
    std::fs::write(dir.join(format!("{db}.cnf")), conf).expect("ca config");
    openssl(
        dir,
        &[
            "ca",
            "-batch",
            "-notext",
            "-config",
            &format!("{db}.cnf"),
            "-startdate",
            "20200101000000Z",
            "-enddate",
            "20200102000000Z",
            "-cert",
            &ca_pem,
            "-keyfile",
            &ca_key,
            "-in",
            &csr,
            "-extfile",
            &ext,
            "-out",
            &pem,
        ],
    );
}

/// A rustls client trusting `dir/ca.pem` only, offering `alpn`.
pub fn client_config(dir: &Path, alpn: &[u8]) -> std::sync::Arc<rustls::ClientConfig> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(dir.join("ca.pem")).expect("ca.pem") {
        roots.add(cert.expect("ca certificate")).expect("trusted CA");
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    std::sync::Arc::new(config)
}
