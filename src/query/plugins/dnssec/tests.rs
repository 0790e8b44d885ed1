//! The keys as CoreDNS's tests hold them, and a signature checked by
//! `ring`'s verifier over the signed data (RFC 4034 3.1.8.1) built here
//! field by field, apart from `sign.rs`.

use std::sync::Arc;

use hickory_proto::rr::rdata::A;
use hickory_proto::rr::{Name, RData, Record};
use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};

use super::key::{self, Key};
use super::sign::{Signer, Window};

/// CoreDNS's dnssec_test.go `pubKey` and `privKey` (miek.nl., key tag 18512).
const PUBLIC: &str = "miek.nl. IN DNSKEY 257 3 13 0J8u0XJ9GNGFEBXuAmLu04taHG4BXPP3gwhetiOUMnGA+x09nqzgF5IY OyjWB7N3rXqQbnOSILhH1hnuyh7mmA==";
const PRIVATE: &str = "Private-key-format: v1.3\nAlgorithm: 13 (ECDSAP256SHA256)\nPrivateKey: /4BZk8AFvyW5hL3cOLSVxIp1RTqHSAEloWUxj86p3gs=\n";

fn miek() -> Key {
    let dir = std::env::temp_dir().join(format!("clusterdns-dnssec-unit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("Kmiek.nl.+013+18512.key"), PUBLIC).expect("write");
    std::fs::write(dir.join("Kmiek.nl.+013+18512.private"), PRIVATE).expect("write");
    key::read("Kmiek.nl.+013+18512.private", &dir).expect("the key reads")
}

#[test]
fn the_key_reads_with_its_tag_and_flags() {
    let k = miek();
    assert_eq!((k.tag, k.algorithm(), k.flags()), (18512, 13, 257));
    assert!(k.is_ksk() && !k.is_zsk());
    assert_eq!(k.owner, Name::from_ascii("miek.nl.").expect("name"));
}

#[test]
fn a_signature_verifies_over_the_canonical_set() {
    let key = miek();
    let public = [&[4u8][..], &key.rdata[4..]].concat();
    let signer = Signer::new(Arc::new(vec![key]), 10, "dns://:53");
    let owner = Name::from_ascii("WWW.Miek.nl.").expect("name");
    let set = [
        Record::from_rdata(owner.clone(), 1800, RData::A(A::new(192, 0, 2, 2))),
        Record::from_rdata(owner, 1800, RData::A(A::new(192, 0, 2, 1))),
    ];
    let zone = Name::from_ascii("miek.nl.").expect("name");
    let sigs = signer.sign(&set, &zone, 1800, Window::now());
    let RData::Unknown { rdata, .. } = &sigs[0].data else {
        panic!("an RRSIG");
    };
    let rdata = &rdata.anything;
    let signer_end = 18 + 9; // the signer name: 4 miek 2 nl 0
    let (fields, signature) = rdata.split_at(signer_end);
    assert_eq!(fields[..4], [0, 1, 13, 3], "covers A, algorithm 13, 3 labels");
    assert_eq!(fields[4..8], 3600u32.to_be_bytes(), "CoreDNS's original TTL");
    let mut data = fields.to_vec();
    for last in [1u8, 2] {
        // owner lowercased, A IN, the original TTL, RDATA sorted
        data.extend(b"\x03www\x04miek\x02nl\x00\x00\x01\x00\x01");
        data.extend(3600u32.to_be_bytes());
        data.extend([0, 4, 192, 0, 2, last]);
    }
    let verifier = UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &public);
    assert!(verifier.verify(&data, signature).is_ok(), "the signature holds");
    let again = signer.sign(&set, &zone, 1800, Window::now());
    assert_eq!(again, sigs, "the second time from the cache");
    let hits = signer.stats.hits.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(hits, 1);
}

/// CoreDNS's setup_test.go RSASHA1 key (cluster.local., 1024 bits, tag 45330).
const RSASHA1_PUBLIC: &str = "cluster.local. IN DNSKEY 256 3 5 AwEAAcFpDv+Cb23kFJowu+VU++b2N1uEHi6Ll9H0BzLasFOdJjEEclCO q/KlD4682vOMXxJNN8ZwOyiCa7Y0TEYqSwWvhHyn3bHCwuy4I6fss4Wd 7Y9dU+6QTgJ8LimGG40Iizjc9zqoU8Q+q81vIukpYWOHioHoY7hsWBvS RSlzDJk3";
const RSASHA1_PRIVATE: &str = "Private-key-format: v1.3
Algorithm: 5 (RSASHA1)
Modulus: wWkO/4JvbeQUmjC75VT75vY3W4QeLouX0fQHMtqwU50mMQRyUI6r8qUPjrza84xfEk03xnA7KIJrtjRMRipLBa+EfKfdscLC7Lgjp+yzhZ3tj11T7pBOAnwuKYYbjQiLONz3OqhTxD6rzW8i6SlhY4eKgehjuGxYG9JFKXMMmTc=
PublicExponent: AQAB
PrivateExponent: K5XyZFBPrjMVFX5gCZlyPyVDamNGrfSVXSIiMSqpS96BSdCXtmHAjCj4bZFPwkzi6+vs4tJN8p4ZifEVM0a6qwPZyENBrc2qbsweOXE6l8BaPVWFX30xvVRzGXuNtXxlBXE17zoHty5r5mRyRou1bc2HUS5otdkEjE30RiocQVk=
Prime1: 7RRFUxaZkVNVH1DaT/SV5Sb8kABB389qLwU++argeDCVf+Wm9BBlTrsz2U6bKlfpaUmYZKtCCd+CVxqzMyuu0w==
Prime2: 0NiY3d7Fa08IGY9L4TaFc02A721YcDNBBf95BP31qGvwnYsLFM/1xZwaEsIjohg8g+m/GpyIlvNMbK6pywIVjQ==
";

#[test]
fn an_rsasha1_key_signs_and_ring_verifies_it() {
    let dir = std::env::temp_dir().join(format!("clusterdns-dnssec-rsasha1-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("Kcluster.local.key"), RSASHA1_PUBLIC).expect("write");
    std::fs::write(dir.join("Kcluster.local.private"), RSASHA1_PRIVATE).expect("write");
    let key = key::read("Kcluster.local", &dir).expect("the key reads");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!((key.tag, key.algorithm(), key.flags()), (45330, 5, 256));
    let data = b"the signed data";
    let signature = key.sign(data).expect("signs");
    assert_eq!(signature.len(), 128, "1024 bits");
    let public = &key.rdata[4..]; // RFC 3110: exponent length 3, AQAB, then the modulus
    let (e, n) = (&public[1..4], &public[4..]);
    let verifier = ring::signature::RsaPublicKeyComponents { n, e };
    let sha1 = &ring::signature::RSA_PKCS1_1024_8192_SHA1_FOR_LEGACY_USE_ONLY;
    assert!(verifier.verify(sha1, data, &signature).is_ok(), "the signature holds");
    assert!(verifier.verify(sha1, b"other data", &signature).is_err());
}
