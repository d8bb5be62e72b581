//! PKCE (RFC 7636) with the `S256` method, and the random `state` value.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use super::AuthError;

/// A code verifier and its `S256` challenge.
#[derive(Clone, PartialEq, Eq)]
pub struct Pkce {
    verifier: String,
    challenge: String,
}

impl fmt::Debug for Pkce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pkce")
            .field("challenge", &self.challenge)
            .finish_non_exhaustive()
    }
}

impl Pkce {
    /// A fresh verifier: 32 random bytes, base64url (43 characters).
    pub fn generate() -> Result<Self, AuthError> {
        Ok(Self::from_verifier(random_token(32)?))
    }

    /// The pair for a given verifier (for tests and interop checks).
    pub fn from_verifier(verifier: String) -> Self {
        let challenge = s256(&verifier);
        Pkce {
            verifier,
            challenge,
        }
    }

    /// The secret sent to the token endpoint.
    pub fn verifier(&self) -> &str {
        &self.verifier
    }

    /// `BASE64URL(SHA256(verifier))`, sent in the authorization request.
    pub fn challenge(&self) -> &str {
        &self.challenge
    }

    /// Always `S256`.
    pub fn method(&self) -> &'static str {
        "S256"
    }
}

/// `BASE64URL-ENCODE(SHA256(ASCII(verifier)))` (RFC 7636 §4.2).
pub fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// `bytes` random bytes from the OS, base64url without padding.
pub fn random_token(bytes: usize) -> Result<String, AuthError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| AuthError::Randomness(e.to_string()))?;
    Ok(URL_SAFE_NO_PAD.encode(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7636_appendix_b() {
        let p = Pkce::from_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".into());
        assert_eq!(p.challenge(), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        assert_eq!(p.method(), "S256");
    }

    #[test]
    fn verifiers_are_fresh_and_well_formed() {
        let a = Pkce::generate().unwrap();
        let b = Pkce::generate().unwrap();
        assert_ne!(a.verifier(), b.verifier());
        assert_eq!(a.verifier().len(), 43);
        assert!(
            a.verifier()
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
        assert_eq!(a.challenge(), s256(a.verifier()));
        assert!(!format!("{a:?}").contains(a.verifier()));
    }
}
