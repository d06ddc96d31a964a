//! The people who sign in to the console: their names and how their
//! passwords are kept (argon2id, RustCrypto's `argon2` crate with its
//! default parameters, the OWASP recommendation: 19 MiB, 2 passes), and
//! who an action is recorded as (`Actor`).
//!
//! Hashing is slow on purpose (tens of milliseconds): call it off the
//! async runtime.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

use crate::domain::Via;

/// Longest password taken (argon2 takes more; nobody types more).
pub const PASSWORD_MAX: usize = 1024;
/// Shortest password taken.
pub const PASSWORD_MIN: usize = 12;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OperatorError {
    #[error("an operator name is 1 to 64 letters, digits, '.', '_', '-' or '@', not {0:?}")]
    BadName(String),
    #[error("a password is {PASSWORD_MIN} to {PASSWORD_MAX} characters")]
    BadPassword,
    #[error("cannot hash the password: {0}")]
    Hash(String),
}

/// A name as typed, if it is one.
pub fn check_name(name: &str) -> Result<&str, OperatorError> {
    let ok = (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'));
    if ok {
        Ok(name)
    } else {
        Err(OperatorError::BadName(
            pointhook_common::text::printable(name).into_owned(),
        ))
    }
}

fn argon2() -> Argon2<'static> {
    Argon2::new(Algorithm::Argon2id, Version::V0x13, Params::default())
}

/// The PHC string of `password` (argon2id, a random salt).
pub fn hash(password: &str) -> Result<String, OperatorError> {
    let n = password.chars().count();
    if !(PASSWORD_MIN..=PASSWORD_MAX).contains(&n) {
        return Err(OperatorError::BadPassword);
    }
    let salt_bytes: [u8; 16] = {
        use rand::RngExt;
        rand::rng().random()
    };
    let salt =
        SaltString::encode_b64(&salt_bytes).map_err(|e| OperatorError::Hash(e.to_string()))?;
    argon2()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| OperatorError::Hash(e.to_string()))
}

/// Whether `password` is the one `stored` was made from. A stored value
/// that is not a PHC string matches nothing.
pub fn verify(password: &str, stored: &str) -> bool {
    if password.len() > PASSWORD_MAX * 4 {
        return false;
    }
    match PasswordHash::new(stored) {
        Ok(parsed) => argon2()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(_) => false,
    }
}

/// A hash to check against when the name is unknown, so that an unknown
/// name takes as long to refuse as a wrong password.
pub fn decoy() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash("not a password anyone has").unwrap_or_default())
}

/// Who an action is recorded as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub name: String,
    pub via: Via,
}

impl Actor {
    /// A signed-in operator.
    pub fn operator(name: &str) -> Actor {
        Actor {
            name: name.to_string(),
            via: Via::Console,
        }
    }

    /// The admin API's token.
    pub fn api() -> Actor {
        Actor {
            name: "api".into(),
            via: Via::Api,
        }
    }

    /// The command line: the OS user running it, by name (`$USER`,
    /// `$LOGNAME`, else the uid's name in /etc/passwd, else the uid); under
    /// sudo, the person who ran it (`ana (sudo)`).
    pub fn cli() -> Actor {
        let env = |v: &str| std::env::var(v).ok().filter(|s| !s.is_empty());
        let name = match (env("SUDO_USER"), uid()) {
            (Some(person), Some(0)) => format!("{person} (sudo)"),
            (_, uid) => env("USER")
                .or_else(|| env("LOGNAME"))
                .or_else(|| uid.and_then(user_name))
                .unwrap_or_else(|| uid.map_or("unknown".into(), |u| format!("uid {u}"))),
        };
        Actor {
            name: pointhook_common::text::printable(&name).into_owned(),
            via: Via::Cli,
        }
    }
}

#[cfg(unix)]
fn uid() -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map(|m| m.uid()).ok()
}

#[cfg(not(unix))]
fn uid() -> Option<u32> {
    None
}

/// The name of user `uid` in /etc/passwd (`name:x:uid:…`).
fn user_name(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    name_in_passwd(&passwd, uid)
}

fn name_in_passwd(passwd: &str, uid: u32) -> Option<String> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id = fields.nth(1)?.parse::<u32>().ok()?;
        (id == uid && !name.is_empty()).then(|| name.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uid_is_named_from_passwd() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\nana:x:1000:1000::/home/ana:/bin/sh\n";
        assert_eq!(name_in_passwd(passwd, 0).as_deref(), Some("root"));
        assert_eq!(name_in_passwd(passwd, 1000).as_deref(), Some("ana"));
        assert_eq!(name_in_passwd(passwd, 7), None);
    }

    #[test]
    fn a_hash_verifies_its_password_only() {
        let h = hash("correct horse battery").unwrap();
        assert!(h.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{h}");
        assert!(verify("correct horse battery", &h));
        assert!(!verify("correct horse batterz", &h));
        assert!(!verify("correct horse battery", "not a hash"));
        assert_ne!(h, hash("correct horse battery").unwrap(), "salted");
    }

    #[test]
    fn names_and_passwords_are_checked() {
        assert!(check_name("ana.ops@shop").is_ok());
        assert!(check_name("").is_err());
        assert!(check_name("a b").is_err());
        assert!(check_name("\u{202e}x").is_err());
        assert_eq!(hash("short"), Err(OperatorError::BadPassword));
    }
}
