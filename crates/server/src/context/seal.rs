//! Sealing `requestState`: XChaCha20-Poly1305 with key rotation.
//!
//! A sealed state is `base64url(key id ‖ nonce ‖ ciphertext)`; the first key
//! seals, every key opens. Tampering with any byte makes opening fail.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use sha2::{Digest, Sha256};

const AAD: &[u8] = b"toolwire requestState v1";
const NONCE_LEN: usize = 24;
const KEY_ID_LEN: usize = 4;

/// A 256-bit key for sealing `requestState`.
#[derive(Clone)]
pub struct StateKey([u8; 32]);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(..)")
    }
}

impl StateKey {
    /// A key from 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        StateKey(bytes)
    }

    /// A fresh random key.
    pub fn random() -> Self {
        StateKey(XChaCha20Poly1305::generate_key(&mut OsRng).into())
    }

    /// A key from base64 (standard or URL-safe, padded or not) or 64 hex digits.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let bytes = if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            (0..32)
                .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|e| e.to_string()))
                .collect::<Result<Vec<u8>, String>>()?
        } else {
            decode_any_base64(text)
                .ok_or("a state key must be 32 bytes as base64 or 64 hex digits")?
        };
        let array: [u8; 32] = bytes
            .try_into()
            .map_err(|b: Vec<u8>| format!("a state key must be 32 bytes, got {}", b.len()))?;
        Ok(StateKey(array))
    }

    /// A short public identifier, so the right key is tried first.
    fn id(&self) -> [u8; KEY_ID_LEN] {
        let digest = Sha256::digest(self.0);
        [digest[0], digest[1], digest[2], digest[3]]
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new((&self.0).into())
    }
}

fn aad_for(key_id: &[u8]) -> Vec<u8> {
    [AAD, key_id].concat()
}

fn decode_any_base64(text: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE};
    [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
        .iter()
        .find_map(|engine| engine.decode(text).ok())
}

/// Seals and opens byte strings with a list of keys.
#[derive(Debug, Clone)]
pub(crate) struct Sealer {
    keys: Vec<StateKey>,
}

impl Sealer {
    /// The first key seals; all open. At least one key is required.
    pub fn new(keys: Vec<StateKey>) -> Self {
        assert!(!keys.is_empty(), "a sealer needs at least one key");
        Sealer { keys }
    }

    pub fn seal(&self, plaintext: &[u8]) -> String {
        let key = &self.keys[0];
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let aad = aad_for(&key.id());
        let ciphertext = key
            .cipher()
            .encrypt(
                &nonce,
                Payload {
                    msg: plaintext,
                    aad: &aad,
                },
            )
            .expect("XChaCha20-Poly1305 encryption cannot fail for in-memory buffers");
        let mut out = Vec::with_capacity(KEY_ID_LEN + NONCE_LEN + ciphertext.len());
        out.extend_from_slice(&key.id());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&ciphertext);
        URL_SAFE_NO_PAD.encode(out)
    }

    /// The plaintext, or `None` when the text was not sealed by one of our keys
    /// or was changed in any way.
    pub fn open(&self, sealed: &str) -> Option<Vec<u8>> {
        let bytes = URL_SAFE_NO_PAD.decode(sealed).ok()?;
        if bytes.len() < KEY_ID_LEN + NONCE_LEN {
            return None;
        }
        let (id, rest) = bytes.split_at(KEY_ID_LEN);
        let (nonce, ciphertext) = rest.split_at(NONCE_LEN);
        let nonce = XNonce::from_slice(nonce);
        // The key id is authenticated too, so changing any byte fails.
        let aad = aad_for(id);
        let payload = || Payload {
            msg: ciphertext,
            aad: &aad,
        };
        let (matching, others): (Vec<&StateKey>, Vec<&StateKey>) =
            self.keys.iter().partition(|k| k.id() == id);
        matching
            .into_iter()
            .chain(others)
            .find_map(|key| key.cipher().decrypt(nonce, payload()).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_and_opens() {
        let sealer = Sealer::new(vec![StateKey::random()]);
        let sealed = sealer.seal(b"hello");
        assert_eq!(sealer.open(&sealed).unwrap(), b"hello");
    }

    #[test]
    fn any_changed_byte_fails() {
        let sealer = Sealer::new(vec![StateKey::random()]);
        let sealed = URL_SAFE_NO_PAD.decode(sealer.seal(b"payload")).unwrap();
        for i in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 0x01;
            assert!(
                sealer.open(&URL_SAFE_NO_PAD.encode(&bad)).is_none(),
                "byte {i}"
            );
        }
        assert!(sealer.open("not base64 !").is_none());
        assert!(sealer.open("").is_none());
    }

    #[test]
    fn rotation_first_seals_all_open() {
        let old = StateKey::random();
        let new = StateKey::random();
        let before = Sealer::new(vec![old.clone()]).seal(b"x");
        let rotated = Sealer::new(vec![new.clone(), old]);
        assert_eq!(rotated.open(&before).unwrap(), b"x");
        let after = rotated.seal(b"y");
        assert_eq!(Sealer::new(vec![new]).open(&after).unwrap(), b"y");
        assert!(Sealer::new(vec![StateKey::random()]).open(&after).is_none());
    }

    #[test]
    fn parses_hex_and_base64_keys() {
        let hex = "00".repeat(32);
        assert!(StateKey::parse(&hex).is_ok());
        let b64 = URL_SAFE_NO_PAD.encode([7u8; 32]);
        assert!(StateKey::parse(&b64).is_ok());
        assert_eq!(
            StateKey::parse("abc").unwrap_err(),
            "a state key must be 32 bytes, got 2"
        );
    }
}
