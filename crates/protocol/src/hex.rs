//! Lowercase hex of bytes (digests, session ids), without a `format!` per byte.

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// `bytes` as lowercase hex digits, two per byte.
///
/// ```
/// assert_eq!(toolwire_protocol::hex::lower_hex(&[0x0f, 0xa5]), "0fa5");
/// ```
pub fn lower_hex(bytes: &[u8]) -> String {
    let mut out = vec![0; bytes.len() * 2];
    let written = write_lower_hex(bytes, &mut out);
    debug_assert_eq!(written.len(), out.len());
    String::from_utf8(out).expect("hex digits are ASCII")
}

/// Writes `bytes` as lowercase hex digits into the start of `out` (a
/// buffer on the stack, say) and returns them.
///
/// ```
/// let mut out = [0u8; 8];
/// assert_eq!(toolwire_protocol::hex::write_lower_hex(&[0x0f, 0xa5], &mut out), "0fa5");
/// ```
///
/// # Panics
///
/// When `out` is shorter than two bytes per byte of `bytes`.
pub fn write_lower_hex<'a>(bytes: &[u8], out: &'a mut [u8]) -> &'a str {
    let out = &mut out[..bytes.len() * 2];
    // Two digits at a time into a buffer of known size: a `push` per digit
    // checks the capacity each time (about 1.3 times the instructions).
    for (pair, &byte) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(byte >> 4)];
        pair[1] = DIGITS[usize::from(byte & 0x0f)];
    }
    std::str::from_utf8(out).expect("hex digits are ASCII")
}

#[cfg(test)]
mod tests {
    #[test]
    fn two_digits_per_byte() {
        assert_eq!(super::lower_hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(super::lower_hex(&[]), "");
    }

    #[test]
    fn written_into_the_start_of_a_longer_buffer() {
        let mut out = [b'x'; 6];
        assert_eq!(super::write_lower_hex(&[0xa5, 0x01], &mut out), "a501");
        assert_eq!(&out, b"a501xx");
    }
}
