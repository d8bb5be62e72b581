//! SHA-256 digests for cache partitions, audit records and name suffixes.

use sha2::{Digest, Sha256};
use toolwire_protocol::hex::lower_hex as hex;

/// The full SHA-256 of `bytes` as lowercase hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The first 16 bytes of the SHA-256 of `bytes` as lowercase hex.
pub(crate) fn short_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes)[..16])
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
