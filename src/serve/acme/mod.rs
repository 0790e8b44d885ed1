//! `tls { acme }` at run time: each distinct ACME configuration's
//! certificate obtained and renewed in a task of its own ([`Managers`]),
//! started once the listeners are bound. A task reads the stored
//! certificate ([`store`]); when there is none, it does not read, or a
//! third of its lifetime is left, it orders a new one with the DNS-01
//! challenge: the account (created once, kept in `storage`) asks for the
//! names, each authorization's `_acme-challenge` TXT value is presented
//! to every DNS listener of the process (`query::plugins::acme`), the
//! order is finalized with a fresh key, and chain and key are written to
//! one file. The listener reads that file as any `tls CERT KEY` (see
//! `certs.rs`): it serves from the first certificate on and takes each
//! renewal without a restart. A failed attempt is logged and tried again
//! after 30 s, doubling up to an hour.

pub mod client;
pub mod store;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use hickory_proto::rr::Name;
use instant_acme::{
    Account, AuthorizationStatus, ChallengeType, Identifier, NewAccount, NewOrder, Order, OrderStatus, RetryPolicy,
};

use crate::config::acme::Acme;
use crate::query::plugins::acme as challenges;

/// The first retry after a failure; doubled each time up to [`RETRY_MAX`].
const RETRY: Duration = Duration::from_secs(30);
const RETRY_MAX: Duration = Duration::from_secs(3600);
/// The longest sleep between two looks at the stored certificate.
const LOOK_AGAIN: Duration = Duration::from_secs(12 * 3600);

/// The running ACME tasks, one per configuration, each with its stop switch.
#[derive(Default)]
pub struct Managers(BTreeMap<Acme, Arc<AtomicBool>>);

impl Managers {
    /// Runs a task for each of `wanted` not running yet and stops those no
    /// longer wanted.
    pub fn keep<'a>(&mut self, wanted: impl IntoIterator<Item = &'a Acme>) {
        let wanted: Vec<&Acme> = wanted.into_iter().collect();
        self.0.retain(|acme, stop| {
            let keep = wanted.contains(&acme);
            if !keep {
                stop.store(true, Ordering::Relaxed);
            }
            keep
        });
        for acme in wanted {
            if !self.0.contains_key(acme) {
                let stop = Arc::new(AtomicBool::new(false));
                tokio::spawn(manage(acme.clone(), stop.clone()));
                self.0.insert(acme.clone(), stop);
            }
        }
    }
}

/// Keeps `acme`'s certificate current until `stop` is set.
async fn manage(acme: Acme, stop: Arc<AtomicBool>) {
    let mut retry = RETRY;
    while !stop.load(Ordering::Relaxed) {
        let wait = match step(&acme).await {
            Ok(renew) => {
                retry = RETRY;
                let until = renew.duration_since(SystemTime::now()).unwrap_or_default();
                until.clamp(Duration::from_secs(1), LOOK_AGAIN)
            }
            Err(e) => {
                tracing::error!(target: "tls", "acme {}: {e}; trying again in {}s", acme.domains.join(" "), retry.as_secs());
                let wait = retry;
                retry = (retry * 2).min(RETRY_MAX);
                wait
            }
        };
        let deadline = tokio::time::Instant::now() + wait;
        while !stop.load(Ordering::Relaxed) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

/// Obtains a certificate when the stored one is missing, unreadable or
/// due; the time the (new) certificate is due for renewal.
async fn step(acme: &Acme) -> Result<SystemTime, String> {
    let file = acme.cert_file();
    match store::validity(&file) {
        Ok(Some((_, renew))) if renew > SystemTime::now() => return Ok(renew),
        Ok(Some(_)) => tracing::info!(target: "tls", "acme: renewing {}", file.display()),
        Ok(None) => tracing::info!(target: "tls", "acme: obtaining a certificate for {}", acme.domains.join(" ")),
        Err(e) => tracing::error!(target: "tls", "acme: {e}; obtaining a new certificate"),
    }
    let account = account(acme).await?;
    let pem = obtain(&account, &acme.domains).await?;
    store::write(&file, pem.as_bytes())?;
    tracing::info!(target: "tls", "acme: certificate for {} stored in {}", acme.domains.join(" "), file.display());
    match store::validity(&file)? {
        Some((_, renew)) => Ok(renew),
        None => Err(format!("{}: gone right after it was written", file.display())),
    }
}

/// The account kept in `storage`, created (and stored) the first time.
async fn account(acme: &Acme) -> Result<Account, String> {
    let dir = acme.ca_dir();
    let http = client::http(acme.ca_root.as_deref(), acme.resolver)?;
    let builder = Account::builder_with_http(http);
    if let Some(credentials) = store::read_account(&dir)? {
        return builder
            .from_credentials(credentials)
            .await
            .map_err(|e| format!("{}: {e}", acme.ca));
    }
    let contact = acme.email.as_ref().map(|e| format!("mailto:{e}"));
    let contact: Vec<&str> = contact.iter().map(String::as_str).collect();
    let new = NewAccount {
        contact: &contact,
        terms_of_service_agreed: true,
        only_return_existing: false,
    };
    let (account, credentials) = builder
        .create(&new, acme.ca.clone(), None)
        .await
        .map_err(|e| format!("{}: creating the account: {e}", acme.ca))?;
    store::write_account(&dir, &credentials)?;
    tracing::info!(target: "tls", "acme: account created at {}", acme.ca);
    Ok(account)
}

/// Orders a certificate for `domains`: chain then private key, as PEM.
async fn obtain(account: &Account, domains: &[String]) -> Result<String, String> {
    let ids: Vec<Identifier> = domains.iter().map(|d| Identifier::Dns(d.clone())).collect();
    let mut order = account
        .new_order(&NewOrder::new(&ids))
        .await
        .map_err(|e| format!("new order: {e}"))?;
    let mut presented = Vec::new();
    let result = validate(&mut order, &mut presented).await;
    for (name, value) in &presented {
        challenges::clean_up(name, value);
    }
    result?;
    let key = order.finalize().await.map_err(|e| format!("finalize: {e}"))?;
    let retry = RetryPolicy::new().timeout(Duration::from_secs(120));
    let mut chain = order
        .poll_certificate(&retry)
        .await
        .map_err(|e| format!("certificate: {e}"))?;
    if !chain.ends_with('\n') {
        chain.push('\n');
    }
    Ok(chain + &key)
}

/// Presents each pending authorization's DNS-01 value (noted in
/// `presented`, for the caller to clean up), tells the server, and waits
/// for the order to be ready.
async fn validate(order: &mut Order, presented: &mut Vec<(Name, String)>) -> Result<(), String> {
    let mut authorizations = order.authorizations();
    while let Some(next) = authorizations.next().await {
        let mut authz = next.map_err(|e| format!("authorization: {e}"))?;
        match authz.status {
            AuthorizationStatus::Pending => {}
            AuthorizationStatus::Valid => continue,
            other => return Err(format!("authorization is {other:?}")),
        }
        let mut challenge = authz
            .challenge(ChallengeType::Dns01)
            .ok_or("the ACME server offers no dns-01 challenge")?;
        let Identifier::Dns(base) = challenge.identifier().identifier else {
            return Err("an identifier that is not a DNS name".into());
        };
        let name = Name::from_ascii(format!("_acme-challenge.{base}.")).map_err(|e| e.to_string())?;
        let value = challenge.key_authorization().dns_value();
        challenges::present(&name, &value);
        presented.push((name, value));
        challenge
            .set_ready()
            .await
            .map_err(|e| format!("challenge ready: {e}"))?;
    }
    let retry = RetryPolicy::new().timeout(Duration::from_secs(120));
    match order.poll_ready(&retry).await.map_err(|e| format!("validation: {e}"))? {
        OrderStatus::Ready => Ok(()),
        other => Err(format!("order is {other:?} after validation")),
    }
}
