//! `SigningKey`: a Standard Webhooks secret (`whsec_` and the base64 of 24
//! to 64 bytes) read strictly, as destinations.rs explains, and made anew
//! by `pointhook secret generate`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;

/// The prefix of a Standard Webhooks secret.
const PREFIX: &str = "whsec_";
/// What the Standard Webhooks specification asks of a key.
const MIN_KEY: usize = 24;
const MAX_KEY: usize = 64;
/// The size of the keys `pointhook secret generate` makes.
const NEW_KEY: usize = 32;

/// The HMAC key of a Standard Webhooks secret: the decoded bytes, never
/// printed.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKey(Vec<u8>);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(***)")
    }
}

impl SigningKey {
    /// Reads `whsec_` + base64 of 24 to 64 bytes; anything else is refused
    /// with what is wrong.
    pub fn parse(secret: &str) -> Result<SigningKey, String> {
        let Some(b64) = secret.strip_prefix(PREFIX) else {
            return Err(format!(
                "must be a Standard Webhooks secret ({PREFIX} and base64; `pointhook secret generate` makes one)"
            ));
        };
        let key = BASE64
            .decode(b64)
            .map_err(|_| format!("must be {PREFIX} and standard base64 with its padding"))?;
        if !(MIN_KEY..=MAX_KEY).contains(&key.len()) {
            return Err(format!(
                "the key is {} bytes; a Standard Webhooks key is {MIN_KEY} to {MAX_KEY}",
                key.len()
            ));
        }
        Ok(SigningKey(key))
    }

    /// A new secret, as text: `whsec_` and the base64 of 32 random bytes.
    pub fn generate() -> String {
        let key: [u8; NEW_KEY] = rand::random();
        format!("{PREFIX}{}", BASE64.encode(key))
    }

    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_whsec_and_canonical_base64_of_24_to_64_bytes() {
        let b64 = |n: usize| BASE64.encode(vec![7u8; n]);
        assert!(SigningKey::parse(&format!("whsec_{}", b64(24))).is_ok());
        assert!(SigningKey::parse(&format!("whsec_{}", b64(64))).is_ok());
        for bad in [
            format!("whsec_{}", b64(23)),
            format!("whsec_{}", b64(65)),
            // The example: 5 bytes.
            "whsec_aGVsbG8=".to_string(),
            // Raw bytes, no prefix: the libraries would base64-decode it.
            "your_secret_key_here_0123456789abcdef".to_string(),
            b64(32),
            // Unpadded, with a space, URL-safe, non-canonical last bits.
            format!("whsec_{}", b64(25).trim_end_matches('=')),
            format!("whsec_ {}", b64(24)),
            format!("whsec_{}", b64(24).replace('H', "-")),
            format!("whsec_{}", b64(25).replacen("w==", "x==", 1)),
        ] {
            assert!(SigningKey::parse(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_generated_secret_is_one_the_official_crate_reads() {
        let secret = SigningKey::generate();
        let key = SigningKey::parse(&secret).unwrap();
        assert_eq!(key.bytes().len(), NEW_KEY);
        assert!(standardwebhooks::Webhook::new(&secret).is_ok());
        assert_ne!(secret, SigningKey::generate());
    }
}
