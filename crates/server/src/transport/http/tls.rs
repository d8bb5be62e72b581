//! TLS for the HTTP transport, with rustls: a certificate chain and its
//! private key read from PEM files, offered with ALPN `h2` and `http/1.1`
//! (a client that picks `h2` gets HTTP/2 over TLS, any other HTTP/1.1),
//! and read again on [`TlsConfig::reload`] (e.g. on SIGHUP) without
//! dropping a connection: new handshakes use the new certificate.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// Why a certificate or key could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read or holds no PEM block of the kind needed.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// rustls refused the pair (e.g. the key does not match the certificate).
    #[error("the certificate and key cannot be used: {0}")]
    Refused(#[from] rustls::Error),
}

/// A certificate chain and key for the HTTP transport, kept current by
/// [`TlsConfig::reload`].
///
/// ```no_run
/// use std::sync::Arc;
/// use toolwire_server::http::{HttpConfig, TlsConfig};
/// let tls = Arc::new(TlsConfig::from_pem_files("cert.pem", "key.pem").unwrap());
/// let config = HttpConfig::new().tls(Arc::clone(&tls));
/// // later, on SIGHUP:
/// if let Err(error) = tls.reload() {
///     eprintln!("kept the old certificate: {error}");
/// }
/// # drop(config);
/// ```
#[derive(Debug)]
pub struct TlsConfig {
    cert: PathBuf,
    key: PathBuf,
    current: RwLock<Arc<rustls::ServerConfig>>,
}

impl TlsConfig {
    /// Reads the certificate chain (`cert`, PEM, leaf first) and its
    /// private key (`key`, PEM: PKCS#8, PKCS#1 or SEC1).
    pub fn from_pem_files(
        cert: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> Result<TlsConfig, TlsError> {
        let (cert, key) = (cert.into(), key.into());
        let config = server_config(&cert, &key)?;
        Ok(TlsConfig {
            cert,
            key,
            current: RwLock::new(Arc::new(config)),
        })
    }

    /// Reads both files again; on error the certificate in use stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let config = server_config(&self.cert, &self.key)?;
        *self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(config);
        Ok(())
    }

    /// What the next handshake is made with.
    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        let current = self
            .current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        TlsAcceptor::from(Arc::clone(&current))
    }
}

/// The rustls configuration of the pair, with ALPN `h2` then `http/1.1`.
fn server_config(cert: &Path, key: &Path) -> Result<rustls::ServerConfig, TlsError> {
    let chain = read_chain(cert)?;
    let key = read_key(key)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

fn read_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(path)?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<_, _>>()
        .map_err(|e| file_error(path, format!("not a PEM certificate chain: {e}")))?;
    if chain.is_empty() {
        return Err(file_error(path, "holds no CERTIFICATE block".into()));
    }
    Ok(chain)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = read(path)?;
    PrivateKeyDer::from_pem_slice(&bytes)
        .map_err(|e| file_error(path, format!("holds no usable PRIVATE KEY block: {e}")))
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e: io::Error| file_error(path, e.to_string()))
}

fn file_error(path: &Path, reason: String) -> TlsError {
    TlsError::File {
        path: path.to_owned(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_pair(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
        let generated = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let cert = dir.join(format!("{name}.crt"));
        let key = dir.join(format!("{name}.key"));
        std::fs::write(&cert, generated.cert.pem()).unwrap();
        std::fs::write(&key, generated.signing_key.serialize_pem()).unwrap();
        (cert, key)
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("toolwire-tls-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_pair_is_read_and_offers_h2_then_http1() {
        let dir = temp_dir("pair");
        let (cert, key) = write_pair(&dir, "a");
        let tls = TlsConfig::from_pem_files(&cert, &key).unwrap();
        let config = tls.current.read().unwrap().clone();
        assert_eq!(
            config.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn bad_files_are_named_and_a_failed_reload_keeps_the_pair() {
        let dir = temp_dir("bad");
        let (cert, key) = write_pair(&dir, "a");
        let missing = dir.join("missing.pem");
        let error = TlsConfig::from_pem_files(&missing, &key).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with(&format!("{}: ", missing.display())),
            "{error}"
        );
        let error = TlsConfig::from_pem_files(&key, &key).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("{}: holds no CERTIFICATE block", key.display())
        );
        let error = TlsConfig::from_pem_files(&cert, &cert).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("holds no usable PRIVATE KEY block"),
            "{error}"
        );
        let (_, other_key) = write_pair(&dir, "b");
        let error = TlsConfig::from_pem_files(&cert, &other_key).unwrap_err();
        assert!(matches!(error, TlsError::Refused(_)), "{error}");

        let tls = TlsConfig::from_pem_files(&cert, &key).unwrap();
        let before = Arc::as_ptr(&tls.current.read().unwrap());
        std::fs::write(&cert, "not a certificate").unwrap();
        assert!(tls.reload().is_err());
        assert_eq!(Arc::as_ptr(&tls.current.read().unwrap()), before);
        let _ = std::fs::remove_dir_all(dir);
    }
}
