//! The TLS settings of the lean sending path: the trust and protocol
//! versions reqwest 0.12 gives the client the transport builds with rustls
//! (`builder.rs`), made by hand for hyper-rustls.

use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::transport::TransportError;

/// A rustls client configuration trusting the `ca_pem` certificates,
/// Mozilla's roots (webpki-roots) and the platform's, for TLS 1.2 and 1.3,
/// with the process's default crypto provider or else ring. Its ALPN list is
/// empty: hyper-rustls sets it.
pub(super) fn client_config(ca_pem: &[u8]) -> Result<rustls::ClientConfig, TransportError> {
    let mut roots = rustls::RootCertStore::empty();
    add_pem_certificates(&mut roots, ca_pem)?;
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    add_native_roots(&mut roots)?;
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .map_err(|e| cannot_build(&e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

/// Adds the `CERTIFICATE` blocks of `pem` (already checked by `builder.rs`).
fn add_pem_certificates(
    roots: &mut rustls::RootCertStore,
    pem: &[u8],
) -> Result<(), TransportError> {
    for certificate in CertificateDer::pem_slice_iter(pem) {
        let certificate = certificate.map_err(|e| cannot_build(&e))?;
        roots.add(certificate).map_err(|e| cannot_build(&e))?;
    }
    Ok(())
}

/// Adds the platform's roots. Like reqwest, certificates the store cannot
/// parse are skipped, and finding only such certificates is an error.
fn add_native_roots(roots: &mut rustls::RootCertStore) -> Result<(), TransportError> {
    let loaded = rustls_native_certs::load_native_certs();
    let (mut valid, mut invalid) = (0_usize, 0_usize);
    for certificate in loaded.certs {
        match roots.add(certificate) {
            Ok(()) => valid += 1,
            Err(error) => {
                invalid += 1;
                tracing::debug!(%error, "a platform root certificate could not be parsed");
            }
        }
    }
    if valid == 0 && invalid > 0 {
        let reasons: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
        return Err(TransportError::Io(format!(
            "cannot build HTTP client: no valid certificate in the platform's root store ({})",
            reasons.join("; ")
        )));
    }
    Ok(())
}

fn cannot_build(error: &dyn std::fmt::Display) -> TransportError {
    TransportError::Io(format!("cannot build HTTP client: {error}"))
}
