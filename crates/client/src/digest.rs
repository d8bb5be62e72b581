//! SHA-256 digests for cache partitions, audit records and name suffixes.

use sha2::{Digest, Sha256};

/// The full SHA-256 of `bytes` as lowercase hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The first 16 bytes of the SHA-256 of `bytes` as lowercase hex.
pub(crate) fn short_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes)[..16])
}

/// Lowercase hex, two digits per byte (no `format!` per byte: audit
/// records take one digest per tool call).
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn sha256_of_abc() {
        assert_eq!(
            super::sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(super::short_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223");
    }
}
