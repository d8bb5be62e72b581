//! What each server was found to speak, kept between commands so the next
//! one skips the probe: `$XDG_CONFIG_HOME/toolwire/eras.json` (beside the
//! OAuth tokens), keyed by URL or by the stdio command line.

use std::collections::BTreeMap;
use std::path::PathBuf;

use toolwire::client::transport::Era;

use crate::connect::Target;

/// The verdict file.
#[derive(Debug, Clone)]
pub struct EraStore {
    path: PathBuf,
}

impl EraStore {
    /// The store in the user's config directory, if there is one.
    pub fn in_config_dir() -> Option<EraStore> {
        let tokens = crate::connect::token_file()?;
        Some(EraStore {
            path: tokens.with_file_name("eras.json"),
        })
    }

    /// A store in `path` (tests).
    #[cfg(test)]
    pub fn at(path: PathBuf) -> EraStore {
        EraStore { path }
    }

    /// The verdict kept for `target`.
    pub fn get(&self, target: &Target) -> Option<Era> {
        match self.read().get(&key(target))?.as_str() {
            "modern" => Some(Era::Modern),
            "legacy" => Some(Era::Legacy),
            _ => None,
        }
    }

    /// Keeps `era` for `target` (`None` forgets it). Failing to write is
    /// not worth failing a command for: the next one probes again.
    pub fn set(&self, target: &Target, era: Option<Era>) {
        let mut all = self.read();
        let key = key(target);
        let changed = match era {
            Some(era) => all.insert(key, era.as_str().to_owned()).as_deref() != Some(era.as_str()),
            None => all.remove(&key).is_some(),
        };
        if changed {
            if let Err(error) = self.write(&all) {
                tracing::debug!(path = %self.path.display(), %error, "cannot save the era verdict");
            }
        }
    }

    fn read(&self) -> BTreeMap<String, String> {
        std::fs::read(&self.path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    fn write(&self, all: &BTreeMap<String, String>) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let text = serde_json::to_vec_pretty(all).map_err(std::io::Error::other)?;
        let temporary = self.path.with_extension("json.tmp");
        std::fs::write(&temporary, text)?;
        std::fs::rename(&temporary, &self.path)
    }
}

/// `http <url>` or `stdio <argv as JSON>` (so arguments with spaces stay apart).
fn key(target: &Target) -> String {
    match target {
        Target::Http(url) => format!("http {url}"),
        Target::Stdio(command) => {
            format!(
                "stdio {}",
                serde_json::to_string(command).unwrap_or_default()
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_are_kept_per_server_and_forgotten_on_request() {
        let dir = std::env::temp_dir().join(format!("toolwire-eras-{}", std::process::id()));
        let store = EraStore::at(dir.join("eras.json"));
        let http = Target::Http("http://127.0.0.1:1/mcp".into());
        let stdio = Target::Stdio(vec!["srv".into(), "a b".into()]);
        assert_eq!(store.get(&http), None);
        store.set(&http, Some(Era::Legacy));
        store.set(&stdio, Some(Era::Modern));
        assert_eq!(store.get(&http), Some(Era::Legacy));
        assert_eq!(store.get(&stdio), Some(Era::Modern));
        assert_eq!(
            store.get(&Target::Stdio(vec!["srv".into(), "a".into(), "b".into()])),
            None
        );
        store.set(&http, None);
        assert_eq!(store.get(&http), None);
        let text = std::fs::read_to_string(dir.join("eras.json")).unwrap();
        assert_eq!(
            text,
            "{\n  \"stdio [\\\"srv\\\",\\\"a b\\\"]\": \"modern\"\n}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
