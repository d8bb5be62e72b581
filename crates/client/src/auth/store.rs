//! Where client registrations and tokens are kept: one record per
//! authorization server (keyed by its issuer identifier), so nothing issued
//! by one server is ever offered to another.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::AuthError;
use super::registration::ClientCredentials;
use super::token::TokenSet;
use crate::future::BoxFuture;

/// Everything kept for one authorization server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuerRecord {
    /// The client registered dynamically at this server, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientCredentials>,
    /// Tokens by resource identifier.
    #[serde(default)]
    pub tokens: BTreeMap<String, TokenSet>,
}

/// Keeps [`IssuerRecord`]s by issuer identifier.
///
/// Implementations may be shared by many servers and processes; each call
/// reads or replaces one whole record.
pub trait TokenStore: Send + Sync + fmt::Debug {
    /// The record for `issuer`, if any.
    fn load<'a>(
        &'a self,
        issuer: &'a str,
    ) -> BoxFuture<'a, Result<Option<IssuerRecord>, AuthError>>;

    /// Replaces the record for `issuer`.
    fn save<'a>(
        &'a self,
        issuer: &'a str,
        record: IssuerRecord,
    ) -> BoxFuture<'a, Result<(), AuthError>>;
}

/// Keeps records in memory for the life of the process (the default).
#[derive(Debug, Default, Clone)]
pub struct MemoryStore {
    records: Arc<Mutex<HashMap<String, IssuerRecord>>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl TokenStore for MemoryStore {
    fn load<'a>(
        &'a self,
        issuer: &'a str,
    ) -> BoxFuture<'a, Result<Option<IssuerRecord>, AuthError>> {
        let record = lock(&self.records).get(issuer).cloned();
        Box::pin(async move { Ok(record) })
    }

    fn save<'a>(
        &'a self,
        issuer: &'a str,
        record: IssuerRecord,
    ) -> BoxFuture<'a, Result<(), AuthError>> {
        lock(&self.records).insert(issuer.to_owned(), record);
        Box::pin(async { Ok(()) })
    }
}

/// Keeps records in one JSON file readable and writable by its owner only
/// (mode `0600` on Unix, in a directory created `0700`). Writes go to a
/// temporary file that replaces the old one, so a crash never leaves half a file.
#[derive(Debug, Clone)]
pub struct FileStore {
    path: Arc<PathBuf>,
    lock: Arc<Mutex<()>>,
}

impl FileStore {
    /// A store in the file at `path` (created on first save).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileStore {
            path: Arc::new(path.into()),
            lock: Arc::new(Mutex::new(())),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read_all(path: &Path) -> Result<HashMap<String, IssuerRecord>, AuthError> {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
            Err(e) => return Err(AuthError::Store(format!("reading {}: {e}", path.display()))),
        };
        restrict(path)?;
        serde_json::from_slice(&bytes)
            .map_err(|e| AuthError::Store(format!("{} is not a token store: {e}", path.display())))
    }

    fn write_all(path: &Path, records: &HashMap<String, IssuerRecord>) -> Result<(), AuthError> {
        let err = |what: &str, e: std::io::Error| {
            AuthError::Store(format!("{what} {}: {e}", path.display()))
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_private_dir(dir).map_err(|e| err("creating the directory of", e))?;
        }
        let bytes =
            serde_json::to_vec_pretty(records).map_err(|e| AuthError::Store(e.to_string()))?;
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(format!(".{}.tmp", super::pkce::random_token(8)?));
        let tmp = PathBuf::from(tmp);
        let result = (|| {
            use std::io::Write;
            let mut file = open_private(&tmp)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            std::fs::rename(&tmp, path)
        })();
        if let Err(e) = result {
            let _ = std::fs::remove_file(&tmp);
            return Err(err("writing", e));
        }
        Ok(())
    }
}

impl TokenStore for FileStore {
    fn load<'a>(
        &'a self,
        issuer: &'a str,
    ) -> BoxFuture<'a, Result<Option<IssuerRecord>, AuthError>> {
        let this = self.clone();
        let issuer = issuer.to_owned();
        Box::pin(async move {
            blocking(move || {
                let _guard = lock(&this.lock);
                Ok(FileStore::read_all(&this.path)?.remove(&issuer))
            })
            .await
        })
    }

    fn save<'a>(
        &'a self,
        issuer: &'a str,
        record: IssuerRecord,
    ) -> BoxFuture<'a, Result<(), AuthError>> {
        let this = self.clone();
        let issuer = issuer.to_owned();
        Box::pin(async move {
            blocking(move || {
                let _guard = lock(&this.lock);
                let mut all = FileStore::read_all(&this.path)?;
                all.insert(issuer, record);
                FileStore::write_all(&this.path, &all)
            })
            .await
        })
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, AuthError> + Send + 'static,
) -> Result<T, AuthError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| AuthError::Store(format!("store task failed: {e}")))?
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(unix)]
fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// A store file others can read is made owner-only before it is used.
#[cfg(unix)]
fn restrict(path: &Path) -> Result<(), AuthError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path)
        .map_err(|e| AuthError::Store(format!("{}: {e}", path.display())))?;
    if meta.permissions().mode() & 0o077 != 0 {
        tracing::warn!(path = %path.display(), "token store was readable by others; restricting it to its owner");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| AuthError::Store(format!("{}: {e}", path.display())))?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn restrict(_path: &Path) -> Result<(), AuthError> {
    Ok(())
}
