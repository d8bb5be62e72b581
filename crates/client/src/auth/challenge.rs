//! `WWW-Authenticate` parsing (RFC 9110 §11.6.1) and the `Bearer` challenge
//! parameters MCP relies on (RFC 6750 §3, RFC 9728 §5.1).

use std::collections::BTreeSet;

/// One challenge of a `WWW-Authenticate` header: a scheme and its
/// parameters (or a token68).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// The auth scheme as sent (compare case-insensitively).
    pub scheme: String,
    /// `name=value` parameters, names lowercased, values unquoted.
    pub params: Vec<(String, String)>,
    /// A token68 in place of parameters, if that is what was sent.
    pub token68: Option<String>,
}

impl Challenge {
    /// The value of parameter `name` (case-insensitive), the first one if repeated.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What a `Bearer` challenge tells an MCP client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BearerChallenge {
    /// `resource_metadata`: where the protected resource metadata is (RFC 9728 §5.1).
    pub resource_metadata: Option<String>,
    /// `scope`, split on spaces: the scopes the request needs.
    pub scope: Option<Vec<String>>,
    /// `error`, e.g. `invalid_token` or `insufficient_scope`.
    pub error: Option<String>,
    /// `error_description`, for diagnostics only.
    pub error_description: Option<String>,
}

impl BearerChallenge {
    /// The `Bearer` challenge among the `WWW-Authenticate` header values, if any.
    pub fn from_headers<'a>(values: impl IntoIterator<Item = &'a str>) -> Option<Self> {
        values
            .into_iter()
            .flat_map(parse)
            .find(|c| c.scheme.eq_ignore_ascii_case("bearer"))
            .map(|c| BearerChallenge::from_challenge(&c))
    }

    /// Reads the parameters of a `Bearer` challenge.
    pub fn from_challenge(challenge: &Challenge) -> Self {
        let nonempty = |name: &str| {
            challenge
                .param(name)
                .filter(|v| !v.trim().is_empty())
                .map(str::to_owned)
        };
        BearerChallenge {
            resource_metadata: nonempty("resource_metadata"),
            scope: nonempty("scope").map(|s| split_scope(&s)),
            error: nonempty("error"),
            error_description: challenge.param("error_description").map(str::to_owned),
        }
    }

    /// True for `error="insufficient_scope"` (RFC 6750 §3.1).
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// Splits a space-delimited scope string, dropping empties and duplicates
/// while keeping the first-seen order.
pub fn split_scope(scope: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    scope
        .split(' ')
        .filter(|s| !s.is_empty() && seen.insert(*s))
        .map(str::to_owned)
        .collect()
}

/// Parses one `WWW-Authenticate` field value into its challenges. Malformed
/// input yields what could be read (never a panic).
pub fn parse(value: &str) -> Vec<Challenge> {
    let mut p = Parser {
        s: value.as_bytes(),
        i: 0,
    };
    let mut out = Vec::new();
    loop {
        p.skip_separators();
        let Some(scheme) = p.token() else { break };
        let mut challenge = Challenge {
            scheme,
            params: Vec::new(),
            token68: None,
        };
        p.skip_ws();
        if let Some(token68) = p.token68() {
            challenge.token68 = Some(token68);
        } else {
            p.auth_params(&mut challenge.params);
        }
        out.push(challenge);
    }
    out
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    fn skip_separators(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b',')) {
            self.i += 1;
        }
    }

    /// A token68 (`abc+/==`) standing alone up to the end or the next comma;
    /// otherwise nothing is consumed.
    fn token68(&mut self) -> Option<String> {
        let start = self.i;
        while matches!(self.peek(), Some(b) if b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
        {
            self.i += 1;
        }
        if self.i == start {
            return None;
        }
        while self.peek() == Some(b'=') {
            self.i += 1;
        }
        let end = self.i;
        self.skip_ws();
        if matches!(self.peek(), None | Some(b',')) {
            Some(String::from_utf8_lossy(&self.s[start..end]).into_owned())
        } else {
            self.i = start;
            None
        }
    }

    /// `name=value` pairs separated by commas, up to the next challenge.
    fn auth_params(&mut self, params: &mut Vec<(String, String)>) {
        loop {
            self.skip_separators();
            let start = self.i;
            let Some(name) = self.token() else { return };
            self.skip_ws();
            if self.peek() != Some(b'=') {
                // `name` is the scheme of the next challenge.
                self.i = start;
                return;
            }
            self.i += 1;
            self.skip_ws();
            let value = if self.peek() == Some(b'"') {
                self.quoted()
            } else {
                // Lenient: an unquoted value runs to the next comma or space.
                let start = self.i;
                while !matches!(self.peek(), None | Some(b',' | b' ' | b'\t')) {
                    self.i += 1;
                }
                String::from_utf8_lossy(&self.s[start..self.i]).into_owned()
            };
            params.push((name.to_ascii_lowercase(), value));
            self.skip_ws();
            if self.peek() != Some(b',') {
                // Junk: skip to the next comma so parsing can go on.
                while !matches!(self.peek(), None | Some(b',')) {
                    self.i += 1;
                }
            }
        }
    }

    fn token(&mut self) -> Option<String> {
        let start = self.i;
        while matches!(self.peek(), Some(b) if is_tchar(b)) {
            self.i += 1;
        }
        (self.i > start).then(|| String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }

    /// A quoted-string starting at `"`; backslash escapes the next byte.
    fn quoted(&mut self) -> String {
        self.i += 1;
        let mut out = Vec::new();
        while let Some(b) = self.peek() {
            self.i += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    if let Some(next) = self.peek() {
                        out.push(next);
                        self.i += 1;
                    }
                }
                _ => out.push(b),
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_with_quoted_params() {
        let v = r#"Bearer error="invalid_token", error_description="Missing Authorization header", resource_metadata="http://localhost:1/.well-known/oauth-protected-resource/mcp""#;
        let c = BearerChallenge::from_headers([v]).unwrap();
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://localhost:1/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.scope, None);
    }

    #[test]
    fn scope_is_split_on_spaces() {
        let v = r#"Bearer scope="mcp:basic  mcp:write", error="insufficient_scope""#;
        let c = BearerChallenge::from_headers([v]).unwrap();
        assert_eq!(c.scope.unwrap(), ["mcp:basic", "mcp:write"]);
        assert!(
            BearerChallenge::from_headers([v])
                .unwrap()
                .is_insufficient_scope()
        );
    }

    #[test]
    fn several_challenges_in_one_value() {
        let cs = parse(r#"Basic realm="x", Bearer realm="y", scope=a, DPoP algs="ES256 PS256""#);
        let schemes: Vec<_> = cs.iter().map(|c| c.scheme.as_str()).collect();
        assert_eq!(schemes, ["Basic", "Bearer", "DPoP"]);
        assert_eq!(cs[1].param("scope"), Some("a"));
        assert_eq!(cs[1].param("REALM"), Some("y"));
        assert_eq!(cs[2].param("algs"), Some("ES256 PS256"));
    }

    #[test]
    fn token68_and_bare_schemes() {
        let cs = parse("Negotiate abc123==, Bearer");
        assert_eq!(cs.len(), 2);
        assert_eq!(cs[0].token68.as_deref(), Some("abc123=="));
        assert_eq!(cs[1].scheme, "Bearer");
        assert!(cs[1].params.is_empty());
        let cs = parse("Negotiate abc123");
        assert_eq!(cs[0].token68.as_deref(), Some("abc123"));
    }

    #[test]
    fn escapes_and_garbage_never_panic() {
        let cs = parse(r#"Bearer error_description="say \"hi\"", scope="#);
        assert_eq!(cs[0].param("error_description"), Some(r#"say "hi""#));
        for junk in [
            "",
            ",,,",
            "=",
            "\"",
            "Bearer ,=,",
            "Bearer a=\"unterminated",
            "é",
        ] {
            let _ = parse(junk);
        }
        assert!(BearerChallenge::from_headers(["Basic realm=x"]).is_none());
    }

    #[test]
    fn empty_scope_counts_as_absent() {
        let c = BearerChallenge::from_headers([r#"Bearer scope="""#]).unwrap();
        assert_eq!(c.scope, None);
    }
}
