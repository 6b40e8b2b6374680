//! Mutual TLS for both planes: every node holds a certificate signed by the job's CA and checks
//! the peer's against that CA, whichever side opened the connection.
//!
//! A node runs with TLS when it is given three PEM files, `MXRS_TLS_CERT` (its certificate,
//! chain allowed), `MXRS_TLS_KEY` (its private key) and `MXRS_TLS_CA` (the job's CA
//! certificate); each value may also be the PEM text itself, its line breaks written `\n` where
//! it must fit on one line, which is how launchers without a shared file system hand them over.
//! TLS 1.3 only, AES-128-GCM first (ring's implementations, AES-NI where the CPU has it).
//!
//! Host names play no part: nodes are addressed by IP, and pods and cloud machines change
//! addresses between runs. A certificate is accepted when it chains to the job's CA, is within
//! its validity period and, for a node that accepts connections (the scheduler, a server),
//! names [`NODE_NAME`] among its DNS names (or the name `MXRS_TLS_NAME` gives, for certificates
//! of a CA of one's own); the job's CA is the authority on who belongs to the job. [`JobCa`] makes such a CA and its nodes' certificates.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio::net::TcpStream;
use tokio_rustls::{TlsAcceptor, TlsConnector, client, server};

use crate::error::{PsError, Result};

/// The DNS name every node certificate of a job carries, and the name a connecting node asks
/// the accepting one to prove.
pub const NODE_NAME: &str = "mxrs";

/// Where a node's TLS material comes from: a path to a PEM file, or the PEM text itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// `MXRS_TLS_CERT`: this node's certificate (and any intermediates after it).
    pub cert: String,
    /// `MXRS_TLS_KEY`: this node's private key (PKCS#8, PKCS#1 or SEC1).
    pub key: String,
    /// `MXRS_TLS_CA`: the job's CA certificate(s), against which peers are checked.
    pub ca: String,
    /// `MXRS_TLS_NAME`: the DNS name an accepting node's certificate must carry (default
    /// [`NODE_NAME`]).
    pub name: Option<String>,
}

/// A node's TLS settings, built once per process and shared by all its connections.
pub struct Tls {
    acceptor: TlsAcceptor,
    connector: TlsConnector,
    /// The name the accepting side's certificate must carry.
    name: ServerName<'static>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tls { .. }")
    }
}

/// ring's TLS 1.3 suites, AES-128-GCM first: as safe for a job's lifetime as AES-256 and the
/// fastest with AES-NI (ChaCha20-Poly1305 for peers whose CPUs lack it).
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    use rustls::crypto::ring::cipher_suite;
    Arc::new(rustls::crypto::CryptoProvider {
        cipher_suites: vec![
            cipher_suite::TLS13_AES_128_GCM_SHA256,
            cipher_suite::TLS13_AES_256_GCM_SHA384,
            cipher_suite::TLS13_CHACHA20_POLY1305_SHA256,
        ],
        ..rustls::crypto::ring::default_provider()
    })
}

/// The bytes of a `MXRS_TLS_*` value: the PEM text when it is one (its line breaks may be
/// written `\n`, so that it fits on one line of an environment), else the file it names.
fn material(var: &'static str, value: &str) -> Result<Vec<u8>> {
    if value.trim_start().starts_with("-----BEGIN") {
        return Ok(value.replace("\\n", "\n").into_bytes());
    }
    std::fs::read(Path::new(value)).map_err(|e| PsError::Config {
        var: var.into(),
        reason: format!("cannot read {value}: {e}"),
    })
}

fn bad(var: &'static str, reason: impl Into<String>) -> PsError {
    PsError::Config {
        var: var.into(),
        reason: reason.into(),
    }
}

fn certificates(var: &'static str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| bad(var, format!("not PEM certificates: {e}")))?;
    if certs.is_empty() {
        return Err(bad(
            var,
            "holds no certificate (expected PEM: BEGIN CERTIFICATE)",
        ));
    }
    Ok(certs)
}

impl Tls {
    /// Reads the three PEM files (or texts) of `files`.
    ///
    /// # Errors
    /// [`PsError::Config`] naming the variable whose value cannot be read or parsed, or when
    /// the key does not belong to the certificate.
    pub fn load(files: &TlsFiles) -> Result<Tls> {
        let tls = Tls::from_pem(
            &material("MXRS_TLS_CERT", &files.cert)?,
            &material("MXRS_TLS_KEY", &files.key)?,
            &material("MXRS_TLS_CA", &files.ca)?,
        )?;
        match &files.name {
            Some(name) => tls.expecting(name),
            None => Ok(tls),
        }
    }

    /// The same settings, asking accepting nodes for a certificate naming `name` instead of
    /// [`NODE_NAME`].
    ///
    /// # Errors
    /// [`PsError::Config`] (`MXRS_TLS_NAME`) when `name` is not a DNS name.
    pub fn expecting(mut self, name: &str) -> Result<Tls> {
        self.name = ServerName::try_from(name.to_string())
            .map_err(|e| bad("MXRS_TLS_NAME", format!("{name:?} is not a DNS name: {e}")))?;
        Ok(self)
    }

    /// TLS from PEM bytes: this node's certificate chain and key, and the job's CA.
    pub fn from_pem(cert: &[u8], key: &[u8], ca: &[u8]) -> Result<Tls> {
        let chain = certificates("MXRS_TLS_CERT", cert)?;
        let key = PrivateKeyDer::from_pem_slice(key)
            .map_err(|e| bad("MXRS_TLS_KEY", format!("no private key in it: {e}")))?;
        let mut roots = RootCertStore::empty();
        for c in certificates("MXRS_TLS_CA", ca)? {
            roots
                .add(c)
                .map_err(|e| bad("MXRS_TLS_CA", format!("not a usable CA certificate: {e}")))?;
        }
        let roots = Arc::new(roots);
        let provider = provider();
        let verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
            .build()
            .map_err(|e| bad("MXRS_TLS_CA", e.to_string()))?;
        let server = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| bad("MXRS_TLS_CERT", e.to_string()))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain.clone(), key.clone_key())
            .map_err(|e| bad("MXRS_TLS_KEY", format!("does not fit the certificate: {e}")))?;
        let client = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| bad("MXRS_TLS_CERT", e.to_string()))?
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)
            .map_err(|e| bad("MXRS_TLS_KEY", format!("does not fit the certificate: {e}")))?;
        Ok(Tls {
            acceptor: TlsAcceptor::from(Arc::new(server)),
            connector: TlsConnector::from(Arc::new(client)),
            name: ServerName::try_from(NODE_NAME).expect("NODE_NAME is a valid DNS name"),
        })
    }

    /// The accepting side's TLS handshake on `stream`; the peer must show a job certificate.
    pub(crate) async fn accept(&self, stream: TcpStream) -> Result<server::TlsStream<TcpStream>> {
        timed(self.acceptor.accept(stream)).await
    }

    /// The connecting side's TLS handshake on `stream`.
    pub(crate) async fn connect(&self, stream: TcpStream) -> Result<client::TlsStream<TcpStream>> {
        timed(self.connector.connect(self.name.clone(), stream)).await
    }
}

async fn timed<T>(handshake: impl Future<Output = std::io::Result<T>>) -> Result<T> {
    match tokio::time::timeout(super::auth::HANDSHAKE_TIMEOUT, handshake).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(PsError::Auth(format!(
            "TLS handshake failed: {}",
            reason(&e)
        ))),
        Err(_) => Err(PsError::Auth(format!(
            "the peer did not complete the TLS handshake within {:?}",
            super::auth::HANDSHAKE_TIMEOUT
        ))),
    }
}

/// What a failed TLS handshake says: rustls's own error where there is one (an unknown CA, an
/// expired certificate, a certificate the peer refused), else the I/O error.
fn reason(e: &std::io::Error) -> String {
    match refusal(e) {
        Some(why) => why,
        None if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            "the peer closed the connection (it refused this node's certificate?)".into()
        }
        None => e.to_string(),
    }
}

/// rustls's error inside `e`, in words, if `e` is one.
pub(crate) fn refusal(e: &std::io::Error) -> Option<String> {
    Some(match e.get_ref()?.downcast_ref::<rustls::Error>()? {
        rustls::Error::InvalidCertificate(c) => format!("the peer's certificate: {c:?}"),
        rustls::Error::AlertReceived(alert) => {
            format!("the peer refused this node's certificate ({alert:?})")
        }
        other => other.to_string(),
    })
}

/// A job's certificate authority, made for one job and kept only in memory: it signs the
/// certificates of the job's nodes and is then dropped, so nothing can sign more.
pub struct JobCa {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
    not_before: time::OffsetDateTime,
    not_after: time::OffsetDateTime,
}

impl std::fmt::Debug for JobCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobCa")
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

/// A node certificate and its private key, in PEM.
#[derive(Debug, Clone)]
pub struct NodeCert {
    /// The certificate.
    pub cert: String,
    /// Its private key (PKCS#8).
    pub key: String,
}

fn rcgen_error(e: rcgen::Error) -> PsError {
    PsError::Config {
        var: "MXRS_TLS".into(),
        reason: format!("cannot make a certificate: {e}"),
    }
}

impl JobCa {
    /// A CA valid from five minutes ago (machines' clocks differ a little) for `valid`.
    pub fn new(job: &str, valid: Duration) -> Result<JobCa> {
        let now = time::OffsetDateTime::now_utc();
        let not_before = now - time::Duration::minutes(5);
        let not_after = now + time::Duration::try_from(valid).unwrap_or(time::Duration::MAX);
        JobCa::with_validity(job, not_before, not_after)
    }

    /// A CA valid from `not_before` to `not_after` (tests make expired ones with it).
    pub fn with_validity(
        job: &str,
        not_before: time::OffsetDateTime,
        not_after: time::OffsetDateTime,
    ) -> Result<JobCa> {
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, format!("mxrs job CA {job}"));
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        params.not_before = not_before;
        params.not_after = not_after;
        let key = rcgen::KeyPair::generate().map_err(rcgen_error)?;
        let issuer = rcgen::CertifiedIssuer::self_signed(params, key).map_err(rcgen_error)?;
        Ok(JobCa {
            issuer,
            not_before,
            not_after,
        })
    }

    /// The CA certificate, in PEM (what every node gets as `MXRS_TLS_CA`).
    pub fn cert_pem(&self) -> String {
        self.issuer.pem()
    }

    /// A certificate for the node `label` (e.g. `worker 1`), valid as long as the CA, naming
    /// [`NODE_NAME`] and any of `hosts`, good for both ends of a connection.
    pub fn node(&self, label: &str, hosts: &[String]) -> Result<NodeCert> {
        self.node_valid(label, hosts, self.not_before, self.not_after)
    }

    /// TLS settings for a node `label` of this job: a certificate made for it, and this CA.
    pub fn tls_for(&self, label: &str) -> Result<Tls> {
        let n = self.node(label, &[])?;
        Tls::from_pem(
            n.cert.as_bytes(),
            n.key.as_bytes(),
            self.cert_pem().as_bytes(),
        )
    }

    /// A certificate for `label` naming only `names` (not [`NODE_NAME`]), as a CA of one's own
    /// might make it.
    #[cfg(test)]
    fn node_named(&self, label: &str, names: &[String]) -> Result<NodeCert> {
        self.make_node(label, names.to_vec(), self.not_before, self.not_after)
    }

    fn node_valid(
        &self,
        label: &str,
        hosts: &[String],
        not_before: time::OffsetDateTime,
        not_after: time::OffsetDateTime,
    ) -> Result<NodeCert> {
        let names: Vec<String> = std::iter::once(NODE_NAME.to_string())
            .chain(hosts.iter().cloned())
            .collect();
        self.make_node(label, names, not_before, not_after)
    }

    fn make_node(
        &self,
        label: &str,
        names: Vec<String>,
        not_before: time::OffsetDateTime,
        not_after: time::OffsetDateTime,
    ) -> Result<NodeCert> {
        let mut params = rcgen::CertificateParams::new(names).map_err(rcgen_error)?;
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, format!("mxrs {label}"));
        params.extended_key_usages = vec![
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
            rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
        params.not_before = not_before;
        params.not_after = not_after;
        params.use_authority_key_identifier_extension = true;
        let key = rcgen::KeyPair::generate().map_err(rcgen_error)?;
        let cert = params.signed_by(&key, &self.issuer).map_err(rcgen_error)?;
        Ok(NodeCert {
            cert: cert.pem(),
            key: key.serialize_pem(),
        })
    }
}

#[cfg(test)]
mod tests;
