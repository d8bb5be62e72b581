//! [`JwtVerifier`]: JWT access tokens checked against configured keys and
//! a JWKS document.

use super::*;

/// The default clock-skew allowance for `exp` and `nbf`: 30 seconds.
pub const DEFAULT_JWT_LEEWAY: Duration = Duration::from_secs(30);

pub(super) struct VerifyingKey {
    kid: Option<String>,
    alg: Algorithm,
    key: DecodingKey,
}

/// Verifies JWT access tokens (RFC 9068 style): the signature with a
/// configured key, `iss` equal to a configured issuer, `aud` containing
/// this resource's URI, `exp` (required) and `nbf` (when present) with a
/// small leeway, and a `sub`. Scopes come from `scope` (space-separated)
/// or `scp` (a string or an array).
///
/// HS256 uses a shared secret of at least 32 bytes; asymmetric algorithms
/// (RS256, ES256, and the others a JWKS key declares) use keys from a JWKS
/// document, chosen by `kid`. A token whose `alg` has no configured key is
/// refused, so an HMAC token can never be checked against a public key.
///
/// ```
/// use toolwire_server::auth::JwtVerifier;
/// let verifier = JwtVerifier::new("https://auth.example.com", "https://mcp.example.com/mcp")
///     .hs256_secret(b"a shared secret of at least 32 bytes!!")
///     .unwrap();
/// # drop(verifier);
/// ```
pub struct JwtVerifier {
    issuers: Vec<String>,
    audience: String,
    hmac: Option<DecodingKey>,
    keys: Vec<VerifyingKey>,
    leeway: Duration,
}

impl fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuers", &self.issuers)
            .field("audience", &self.audience)
            .field("hs256", &self.hmac.is_some())
            .field(
                "keys",
                &self
                    .keys
                    .iter()
                    .map(|k| (k.kid.clone(), k.alg))
                    .collect::<Vec<_>>(),
            )
            .field("leeway", &self.leeway)
            .finish()
    }
}

#[derive(Deserialize)]
pub(super) struct Claims {
    /// Required by the validation; optional here so its absence is named.
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<ScopeClaim>,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum ScopeClaim {
    One(String),
    Many(Vec<String>),
}

impl JwtVerifier {
    /// Tokens issued by `issuer` for `audience` (this resource's canonical
    /// URI, the same as [`AuthConfig::new`]'s). Add keys before use.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        JwtVerifier {
            issuers: vec![issuer.into()],
            audience: audience.into(),
            hmac: None,
            keys: Vec::new(),
            leeway: DEFAULT_JWT_LEEWAY,
        }
    }

    /// Accepts another issuer too.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuers.push(issuer.into());
        self
    }

    /// Accepts HS256 tokens signed with `secret` (at least 32 bytes).
    pub fn hs256_secret(mut self, secret: &[u8]) -> Result<Self, AuthConfigError> {
        if secret.len() < 32 {
            return Err(AuthConfigError::Key(format!(
                "an HS256 secret must be at least 32 bytes, got {}",
                secret.len()
            )));
        }
        self.hmac = Some(DecodingKey::from_secret(secret));
        Ok(self)
    }

    /// Adds the signing keys of a JWKS document (RFC 7517). Keys marked for
    /// encryption and symmetric (`oct`) keys are skipped; a key without
    /// `alg` is RS256 (RSA) or ES256/ES384 (EC P-256/P-384) or EdDSA.
    pub fn jwks(mut self, json: &str) -> Result<Self, AuthConfigError> {
        let set: JwkSet = serde_json::from_str(json)
            .map_err(|e| AuthConfigError::Key(format!("not a JWKS document: {e}")))?;
        let before = self.keys.len();
        for jwk in &set.keys {
            if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
                continue;
            }
            let alg = match (&jwk.common.key_algorithm, &jwk.algorithm) {
                (_, AlgorithmParameters::OctetKey(_)) => continue,
                (Some(alg), _) => match key_algorithm(*alg) {
                    Some(alg) => alg,
                    None => continue,
                },
                (None, AlgorithmParameters::RSA(_)) => Algorithm::RS256,
                (None, AlgorithmParameters::EllipticCurve(ec)) => match ec.curve {
                    EllipticCurve::P256 => Algorithm::ES256,
                    EllipticCurve::P384 => Algorithm::ES384,
                    _ => continue,
                },
                (None, AlgorithmParameters::OctetKeyPair(_)) => Algorithm::EdDSA,
            };
            let key = DecodingKey::from_jwk(jwk).map_err(|e| {
                AuthConfigError::Key(format!(
                    "JWKS key {:?}: {e}",
                    jwk.common.key_id.as_deref().unwrap_or("(no kid)")
                ))
            })?;
            self.keys.push(VerifyingKey {
                kid: jwk.common.key_id.clone(),
                alg,
                key,
            });
        }
        if self.keys.len() == before {
            return Err(AuthConfigError::Key(
                "the JWKS document has no usable signing key".into(),
            ));
        }
        Ok(self)
    }

    /// Adds the keys of a JWKS file.
    pub fn jwks_file(self, path: impl AsRef<Path>) -> Result<Self, AuthConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| AuthConfigError::Io {
            path: path.display().to_string(),
            source,
        })?;
        self.jwks(&text)
    }

    /// Clock-skew allowance for `exp` and `nbf` (default 30 s).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// Verifies `token` and returns its principal.
    pub fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        let invalid = |why: &str| AuthError::InvalidToken(why.to_owned());
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| invalid("The access token is malformed"))?;
        let candidates: Vec<&DecodingKey> = if header.alg == Algorithm::HS256 {
            self.hmac.iter().collect()
        } else {
            self.keys
                .iter()
                .filter(|k| k.alg == header.alg)
                .filter(|k| header.kid.is_none() || k.kid == header.kid)
                .map(|k| &k.key)
                .collect()
        };
        if candidates.is_empty() {
            return Err(invalid(if header.kid.is_some() {
                "The access token was signed with an unknown key"
            } else {
                "The access token algorithm is not accepted"
            }));
        }
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&self.issuers);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = self.leeway.as_secs();
        let mut last = None;
        for key in candidates {
            match jsonwebtoken::decode::<Claims>(token, key, &validation) {
                Ok(data) => return Ok(principal_of(data.claims)),
                Err(error) => last = Some(error),
            }
        }
        let kind = last.map(|e| e.into_kind());
        use jsonwebtoken::errors::ErrorKind as K;
        Err(invalid(match kind {
            Some(K::ExpiredSignature) => "The access token expired",
            Some(K::ImmatureSignature) => "The access token is not valid yet",
            Some(K::InvalidAudience) => "The access token was not issued for this resource",
            Some(K::InvalidIssuer) => "The access token was not issued by a trusted issuer",
            Some(K::InvalidSignature) => "The access token signature is invalid",
            Some(K::MissingRequiredClaim(claim)) => {
                return Err(AuthError::InvalidToken(format!(
                    "The access token has no {claim} claim"
                )));
            }
            Some(K::InvalidAlgorithm) => "The access token algorithm is not accepted",
            _ => "The access token is malformed",
        }))
    }
}

pub(super) fn key_algorithm(alg: KeyAlgorithm) -> Option<Algorithm> {
    Some(match alg {
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        _ => return None,
    })
}

pub(super) fn principal_of(claims: Claims) -> Principal {
    let mut scopes: Vec<String> = claims
        .scope
        .iter()
        .flat_map(|s| s.split_whitespace().map(str::to_owned))
        .collect();
    match claims.scp {
        Some(ScopeClaim::One(s)) => scopes.extend(s.split_whitespace().map(str::to_owned)),
        Some(ScopeClaim::Many(list)) => scopes.extend(list),
        None => {}
    }
    Principal::new(claims.sub.unwrap_or_default()).with_scopes(scopes)
}

impl Authenticator for JwtVerifier {
    fn authenticate<'a>(
        &'a self,
        request: &'a Parts,
    ) -> BoxFuture<'a, Result<Principal, AuthError>> {
        let outcome = bearer_token(request).and_then(|token| self.verify(token));
        Box::pin(std::future::ready(outcome))
    }
}
