//! UUID text for the ids this engine mints (the reference's ids are TEXT UUIDs).

/// The canonical text of a UUID from 16 bytes, with the version nibble set to
/// `version` and the RFC 9562 variant bits set: use 4 for random bytes and 8 for
/// bytes derived some other way (a SHA-256 digest, say; version 5 would claim
/// SHA-1).
pub fn uuid_text(mut bytes: [u8; 16], version: u8) -> String {
    bytes[6] = (bytes[6] & 0x0f) | ((version & 0x0f) << 4);
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_and_variant_bits() {
        let text = uuid_text([0xff; 16], 8);
        assert_eq!(text, "ffffffff-ffff-8fff-bfff-ffffffffffff");
        let text = uuid_text([0; 16], 4);
        assert_eq!(text, "00000000-0000-4000-8000-000000000000");
    }
}
