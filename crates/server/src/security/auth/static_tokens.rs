//! [`StaticTokens`]: bearer tokens from configuration, kept as digests.

use super::*;

/// Bearer tokens from configuration, each standing for a principal. Tokens
/// are kept only as SHA-256 digests and looked up by digest.
///
/// ```
/// use toolwire_server::auth::StaticTokens;
/// let tokens = StaticTokens::parse(
///     "# token  subject  scopes...\n\
///      tok-alice-0123456789abcdef  alice  tools:read tools:write\n",
/// ).unwrap();
/// assert_eq!(tokens.len(), 1);
/// ```
#[derive(Clone, Default)]
pub struct StaticTokens {
    tokens: HashMap<[u8; 32], Principal>,
}

impl fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticTokens")
            .field("tokens", &self.tokens.len())
            .finish()
    }
}

impl StaticTokens {
    /// No tokens.
    pub fn new() -> Self {
        StaticTokens::default()
    }

    /// Adds `token` standing for `principal`.
    pub fn token(mut self, token: impl AsRef<str>, principal: Principal) -> Self {
        self.tokens
            .insert(Sha256::digest(token.as_ref().as_bytes()).into(), principal);
        self
    }

    /// Reads a table: one `TOKEN SUBJECT [SCOPE...]` per line, separated by
    /// whitespace; blank lines and lines starting with `#` are skipped.
    pub fn parse(text: &str) -> Result<Self, AuthConfigError> {
        let mut tokens = StaticTokens::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut fields = line.split_whitespace();
            let (Some(token), Some(subject)) = (fields.next(), fields.next()) else {
                return Err(AuthConfigError::Tokens {
                    line: index + 1,
                    reason: "expected TOKEN SUBJECT [SCOPE...]".into(),
                });
            };
            tokens = tokens.token(token, Principal::new(subject).with_scopes(fields));
        }
        Ok(tokens)
    }

    /// Reads a table from a file (see [`StaticTokens::parse`]).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, AuthConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| AuthConfigError::Io {
            path: path.display().to_string(),
            source,
        })?;
        StaticTokens::parse(&text)
    }

    /// Tokens known.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// True when no token is known.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

impl Authenticator for StaticTokens {
    fn authenticate<'a>(
        &'a self,
        request: &'a Parts,
    ) -> BoxFuture<'a, Result<Principal, AuthError>> {
        let outcome = bearer_token(request).and_then(|token| {
            let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
            self.tokens
                .get(&digest)
                .cloned()
                .ok_or_else(|| AuthError::InvalidToken("The access token is not valid".into()))
        });
        Box::pin(std::future::ready(outcome))
    }
}
