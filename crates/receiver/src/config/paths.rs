//! Where a configuration's files are: a relative path in a configuration
//! file is relative to that file's directory (so `--config sub/x.toml`
//! means the same from any directory), except a relative `*_file` secret
//! when `$CREDENTIALS_DIRECTORY` is set (systemd's `LoadCredential=` puts
//! them there). Each secret file is read once, when first needed: the
//! operator's reads never need the platform's token.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{ConfigError, Secret};

/// The directory relative paths start from, and the secret files read so
/// far. Clones share what was read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Files {
    /// `None`: the current directory (a configuration given as text).
    base: Option<PathBuf>,
    read: Arc<Mutex<HashMap<PathBuf, Result<Secret, String>>>>,
}

impl Files {
    /// Paths relative to the directory of the configuration file `config`.
    pub(crate) fn beside(config: &Path) -> Files {
        let dir = config.parent().unwrap_or(Path::new(""));
        let base = if dir.is_absolute() {
            dir.to_path_buf()
        } else {
            // Made absolute now, so a later change of directory (none
            // today) could not move it.
            std::env::current_dir()
                .map(|cwd| cwd.join(dir))
                .unwrap_or_else(|_| dir.to_path_buf())
        };
        Files {
            base: Some(base),
            read: Arc::default(),
        }
    }

    /// `path` as the configuration means it.
    pub(crate) fn resolve(&self, path: &Path) -> PathBuf {
        match &self.base {
            Some(base) if path.is_relative() => base.join(path),
            _ => path.to_path_buf(),
        }
    }

    /// A secret file's path: a relative one from `$CREDENTIALS_DIRECTORY`
    /// when set, else as any other path.
    pub(crate) fn secret_path(&self, path: &Path) -> PathBuf {
        match std::env::var_os("CREDENTIALS_DIRECTORY") {
            Some(dir) if path.is_relative() => Path::new(&dir).join(path),
            _ => self.resolve(path),
        }
    }

    /// One of `value` or `file` (read once, trimmed), for the key `key`.
    pub(crate) fn pick(
        &self,
        key: &str,
        value: Option<&Secret>,
        file: Option<&Path>,
    ) -> Result<Option<Secret>, ConfigError> {
        match (value, file) {
            (Some(_), Some(_)) => Err(ConfigError::new(
                key,
                format!("set either {key} or {key}_file, not both"),
            )),
            (Some(v), None) if v.is_empty() => Err(ConfigError::new(key, "must not be empty")),
            (Some(v), None) => Ok(Some(v.clone())),
            (None, Some(path)) => self
                .read(path)
                .map(Some)
                .map_err(|message| ConfigError::new(format!("{key}_file"), message)),
            (None, None) => Ok(None),
        }
    }

    fn read(&self, path: &Path) -> Result<Secret, String> {
        let full = self.secret_path(path);
        // A poisoned lock only means a reader panicked: what it held is whole.
        let mut read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        read.entry(full.clone())
            .or_insert_with(|| {
                let text = std::fs::read_to_string(&full)
                    .map_err(|e| format!("cannot read {}: {e}", full.display()))?;
                match text.trim() {
                    "" => Err(format!("{} is empty", full.display())),
                    text => Ok(Secret::new(text)),
                }
            })
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_start_at_the_configuration_files_directory() {
        let files = Files::beside(Path::new("/etc/pointhook/pointhook.toml"));
        assert_eq!(
            files.resolve(Path::new("data/p.db")),
            Path::new("/etc/pointhook/data/p.db")
        );
        assert_eq!(
            files.resolve(Path::new("/var/p.db")),
            Path::new("/var/p.db")
        );
        let here = Files::default();
        assert_eq!(here.resolve(Path::new("p.db")), Path::new("p.db"));
    }

    #[test]
    fn a_secret_file_is_read_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), "first\n").unwrap();
        let files = Files::beside(&dir.path().join("c.toml"));
        let read = |f: &Files| f.pick("t", None, Some(Path::new("token"))).unwrap();
        assert_eq!(read(&files).unwrap().expose(), "first");
        std::fs::write(dir.path().join("token"), "second\n").unwrap();
        assert_eq!(read(&files.clone()).unwrap().expose(), "first");
        std::fs::remove_file(dir.path().join("token")).unwrap();
        assert_eq!(read(&files).unwrap().expose(), "first");
    }
}
