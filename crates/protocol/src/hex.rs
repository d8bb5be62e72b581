//! Lowercase hex of bytes (digests, session ids), without a `format!` per byte.

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// `bytes` as lowercase hex digits, two per byte.
///
/// ```
/// assert_eq!(toolwire_protocol::hex::lower_hex(&[0x0f, 0xa5]), "0fa5");
/// ```
pub fn lower_hex(bytes: &[u8]) -> String {
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
    fn two_digits_per_byte() {
        assert_eq!(super::lower_hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(super::lower_hex(&[]), "");
    }
}
