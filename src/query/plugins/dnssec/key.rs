//! A signing key as BIND's `dnssec-keygen` writes it: `K<zone>+<alg>+<id>.key`
//! (the DNSKEY record, `;` comments before it) and `.private` (`Field: value`
//! lines, binary fields in base64). Algorithms signed with `ring`:
//! RSASHA256 (8), ECDSAP256SHA256 (13), ECDSAP384SHA384 (14) and ED25519 (15);
//! RSASHA1 (5) with the `rsa` crate, loaded with a warning (RFC 8624: MUST
//! NOT sign with it; CoreDNS does, so a zone whose DS names such a key
//! keeps validating until its keys are rolled).

use std::fmt;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use hickory_proto::rr::Name;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, RsaKeyPair};

use crate::zonefile::dnssec::dnskey;

/// The DNSKEY flags bit of a zone key (RFC 4034 2.1.1).
const ZONE: u16 = 1 << 8;
/// The DNSKEY flags bit of a secure entry point (a KSK).
const SEP: u16 = 1;

/// One key: its DNSKEY (owner and RDATA) and what signs with it.
pub struct Key {
    /// The `.key` file's owner name.
    pub owner: Name,
    /// The DNSKEY RDATA: flags, protocol 3, algorithm, public key.
    pub rdata: Vec<u8>,
    pub tag: u16,
    /// The base path the key was read from, beside the Corefile (`check` prints it).
    pub base: String,
    signer: Signer,
}

enum Signer {
    Rsa(RsaKeyPair),
    RsaSha1(Box<rsa::pkcs1v15::SigningKey<sha1::Sha1>>),
    Ecdsa(EcdsaKeyPair),
    Ed25519(Ed25519KeyPair),
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({} tag {} alg {})", self.owner, self.tag, self.algorithm())
    }
}

impl Key {
    pub fn flags(&self) -> u16 {
        u16::from_be_bytes([self.rdata[0], self.rdata[1]])
    }

    pub fn algorithm(&self) -> u8 {
        self.rdata[3]
    }

    /// A zone key with SEP set: signs the DNSKEY set in split mode.
    pub fn is_ksk(&self) -> bool {
        self.flags() & (ZONE | SEP) == ZONE | SEP
    }

    /// A zone key with SEP clear: signs every other set in split mode.
    pub fn is_zsk(&self) -> bool {
        self.flags() & (ZONE | SEP) == ZONE
    }

    /// The signature of `data` (RFC 4034 3.1.8.1), in DNSSEC's form.
    pub fn sign(&self, data: &[u8]) -> Result<Vec<u8>, String> {
        let rng = SystemRandom::new();
        match &self.signer {
            Signer::Ed25519(k) => Ok(k.sign(data).as_ref().to_vec()),
            Signer::Ecdsa(k) => k
                .sign(&rng, data)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| "ECDSA signing failed".into()),
            Signer::RsaSha1(k) => {
                use rsa::signature::{RandomizedSigner, SignatureEncoding};
                k.try_sign_with_rng(&mut rand::rng(), data)
                    .map(|s| s.to_vec())
                    .map_err(|e| format!("RSASHA1 signing failed: {e}"))
            }
            Signer::Rsa(k) => {
                let mut out = vec![0; k.public().modulus_len()];
                k.sign(&signature::RSA_PKCS1_SHA256, &rng, data, &mut out)
                    .map_err(|_| "RSA signing failed".to_string())?;
                Ok(out)
            }
        }
    }
}

/// The key at `word` (`Kexample.org.+013+45330`, with or without `.key`
/// or `.private`), relative to `dir`: both files read.
pub fn read(word: &str, dir: &Path) -> Result<Key, String> {
    let base = word
        .strip_suffix(".key")
        .or_else(|| word.strip_suffix(".private"))
        .unwrap_or(word);
    let path = dir.join(base);
    let file = |ext: &str| {
        let p = PathBuf::from(format!("{}.{ext}", path.display()));
        std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))
    };
    let (owner, rdata) = public(&file("key")?)?;
    let fields = private(&file("private")?);
    let signer = signer(&rdata, &fields).map_err(|e| format!("{}.private: {e}", path.display()))?;
    Ok(Key {
        owner,
        tag: key_tag(&rdata),
        rdata,
        base: path.display().to_string(),
        signer,
    })
}

/// The owner and RDATA of the `.key` file's DNSKEY record.
fn public(text: &str) -> Result<(Name, Vec<u8>), String> {
    let line = text
        .lines()
        .map(|l| l.split(';').next().unwrap_or_default().trim())
        .find(|l| !l.is_empty())
        .ok_or("no DNSKEY record in the .key file")?;
    let words: Vec<String> = line.split_whitespace().map(String::from).collect();
    let at = words
        .iter()
        .position(|w| w.eq_ignore_ascii_case("DNSKEY"))
        .ok_or("no DNSKEY record in the .key file")?;
    let owner = Name::from_ascii(&words[0]).map_err(|e| format!("bad key owner '{}': {e}", words[0]))?;
    let rdata = dnskey(&words[at + 1..])?;
    Ok((owner, rdata))
}

/// The `.private` file's fields, binary ones decoded (others kept as bytes).
fn private(text: &str) -> Vec<(String, Vec<u8>)> {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| {
            let v = v.trim();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(v)
                .unwrap_or_else(|_| v.as_bytes().to_vec());
            (k.trim().to_string(), bytes)
        })
        .collect()
}

/// The signer of a key of `rdata`'s algorithm from its private `fields`.
fn signer(rdata: &[u8], fields: &[(String, Vec<u8>)]) -> Result<Signer, String> {
    let get = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| &v[..])
            .ok_or(format!("no {name} field"))
    };
    let public = &rdata[4..];
    let rejected = |e: ring::error::KeyRejected| format!("key rejected: {e}");
    match rdata[3] {
        8 => {
            let components = ring::rsa::KeyPairComponents {
                public_key: rsa_public(public)?,
                d: get("PrivateExponent")?,
                p: get("Prime1")?,
                q: get("Prime2")?,
                dP: get("Exponent1")?,
                dQ: get("Exponent2")?,
                qInv: get("Coefficient")?,
            };
            RsaKeyPair::from_components(&components)
                .map(Signer::Rsa)
                .map_err(rejected)
        }
        alg @ (13 | 14) => {
            let how = match alg {
                13 => &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                _ => &signature::ECDSA_P384_SHA384_FIXED_SIGNING,
            };
            let point = [&[4u8][..], public].concat(); // uncompressed: 0x04 X Y
            EcdsaKeyPair::from_private_key_and_public_key(how, get("PrivateKey")?, &point, &SystemRandom::new())
                .map(Signer::Ecdsa)
                .map_err(rejected)
        }
        15 => Ed25519KeyPair::from_seed_and_public_key(get("PrivateKey")?, public)
            .map(Signer::Ed25519)
            .map_err(rejected),
        5 => rsasha1(public, &get),
        alg => Err(format!("algorithm {alg} is not supported (5, 8, 13, 14 and 15 are)")),
    }
}

/// An RSASHA1 signer from the DNSKEY's public key and the private fields
/// (`get`), with RFC 8624's warning.
fn rsasha1<'f>(public: &[u8], get: &dyn Fn(&str) -> Result<&'f [u8], String>) -> Result<Signer, String> {
    let pk = rsa_public(public)?;
    let bits = u32::try_from(pk.n.len() * 8).map_err(|_| "RSA modulus too long")?;
    let int = |b: &[u8]| rsa::BoxedUint::from_be_slice(b, bits).map_err(|e| format!("RSA field: {e}"));
    let primes = vec![int(get("Prime1")?)?, int(get("Prime2")?)?];
    let key = rsa::PrivateKey::from_components(int(pk.n)?, int(pk.e)?, int(get("PrivateExponent")?)?, primes)
        .map_err(|e| format!("key rejected: {e}"))?;
    tracing::warn!(
        target: "dnssec",
        "an RSASHA1 key (algorithm 5, {bits} bits) signs: RFC 8624 says MUST NOT sign with RSASHA1; roll the \
         zone to ECDSAP256SHA256 (13) or RSASHA256 (8)"
    );
    Ok(Signer::RsaSha1(Box::new(rsa::pkcs1v15::SigningKey::new(key))))
}

/// The modulus and exponent of an RSA DNSKEY's key (RFC 3110 2).
fn rsa_public(key: &[u8]) -> Result<ring::rsa::PublicKeyComponents<&[u8]>, String> {
    let short = || "RSA public key too short".to_string();
    let (len, rest) = match key.split_first().ok_or_else(short)? {
        (0, rest) if rest.len() >= 2 => (usize::from(u16::from_be_bytes([rest[0], rest[1]])), &rest[2..]),
        (n, rest) => (usize::from(*n), rest),
    };
    if rest.len() <= len {
        return Err(short());
    }
    let (e, n) = rest.split_at(len);
    Ok(ring::rsa::PublicKeyComponents { n, e })
}

/// The key tag of a DNSKEY RDATA (RFC 4034 appendix B).
pub fn key_tag(rdata: &[u8]) -> u16 {
    let mut ac: u32 = 0;
    for (i, b) in rdata.iter().enumerate() {
        ac += if i & 1 == 0 { u32::from(*b) << 8 } else { u32::from(*b) };
    }
    ac += (ac >> 16) & 0xffff;
    (ac & 0xffff) as u16
}
