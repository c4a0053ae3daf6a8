//! HTTPS: the server's certificate and key, read from PEM files, as a
//! rustls configuration (ring as the crypto provider, no OpenSSL).

pub use rustls::ServerConfig;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::Arc;

/// Why a certificate or key cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The certificate file holds no PEM certificate, or a broken one.
    #[error("no usable certificate: {0}")]
    Certificate(String),
    /// The key file holds no PEM private key, or a broken one.
    #[error("no usable private key: {0}")]
    Key(String),
    /// rustls refuses the pair (a key that does not match, say).
    #[error("{0}")]
    Config(String),
}

/// A server configuration from a PEM certificate chain (the server's
/// certificate first) and a PEM private key (PKCS#8, PKCS#1 or SEC1).
pub fn server_config(cert_pem: &[u8], key_pem: &[u8]) -> Result<ServerConfig, TlsError> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Certificate(e.to_string()))?;
    if chain.is_empty() {
        return Err(TlsError::Certificate(
            "the file holds no 'BEGIN CERTIFICATE' block".to_owned(),
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| TlsError::Key(e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_without_pem_blocks_are_refused_with_what_is_missing() {
        let err = server_config(b"hello", b"").unwrap_err();
        assert!(matches!(err, TlsError::Certificate(_)), "{err}");
        assert!(err.to_string().contains("certificate"), "{err}");
    }
}
