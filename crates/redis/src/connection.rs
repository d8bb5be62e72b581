//! Connecting: [`RedisConfig`] turns a `redis://` or `rediss://` URL into a
//! [`RedisConnection`], which every store of this crate shares.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::{Client, FromRedisValue, ScriptInvocation, TlsCertificates};

use crate::backend::Backend;
use crate::keys::check_prefix;

/// The key prefix used unless [`RedisConfig::key_prefix`] sets another.
pub const DEFAULT_KEY_PREFIX: &str = "toolwire:";

/// How long one command may take unless [`RedisConfig::command_timeout`]
/// says otherwise: 1 s.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(1);

/// How long one connection attempt may take unless
/// [`RedisConfig::connect_timeout`] says otherwise: 1 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// Reconnection attempts per outage before a command fails (the next
/// command starts a new round).
const RECONNECT_RETRIES: usize = 2;

/// Where Redis is and how to talk to it.
///
/// ```
/// use std::time::Duration;
/// use toolwire_redis::RedisConfig;
/// let config = RedisConfig::new("rediss://:secret@redis.internal:6380/0")
///     .key_prefix("shop:")
///     .command_timeout(Duration::from_millis(500));
/// assert_eq!(config.get_key_prefix(), "shop:");
/// // The password stays out of debug output.
/// assert!(!format!("{config:?}").contains("secret"));
/// ```
#[derive(Clone)]
pub struct RedisConfig {
    url: String,
    prefix: String,
    command_timeout: Duration,
    connect_timeout: Duration,
    root_certificate: Option<Vec<u8>>,
    /// Seed nodes of a Redis Cluster; empty for one server at `url`.
    cluster_nodes: Vec<String>,
}

impl fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConfig")
            .field("address", &address_of(&self.url))
            .field("prefix", &self.prefix)
            .field("command_timeout", &self.command_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("root_certificate", &self.root_certificate.is_some())
            .field("cluster", &!self.cluster_nodes.is_empty())
            .finish()
    }
}

/// Why [`RedisConfig::connect`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The URL is not one the client understands.
    #[error("invalid Redis URL: {0}")]
    Url(String),
    /// The key prefix contains a brace (the stores place their own hash tags).
    #[error("invalid Redis key prefix: {0}")]
    Prefix(String),
    /// Redis did not answer.
    #[error("could not connect to Redis at {address}: {reason}")]
    Connect {
        /// Host and port (never the password).
        address: String,
        /// What went wrong.
        reason: String,
    },
}

impl RedisConfig {
    /// Redis at `url`: `redis://[user:password@]host[:port][/db]`, or
    /// `rediss://…` for TLS (server certificate checked against the
    /// system's roots, or [`RedisConfig::root_certificate`]).
    pub fn new(url: impl Into<String>) -> Self {
        RedisConfig {
            url: url.into(),
            prefix: DEFAULT_KEY_PREFIX.to_owned(),
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            root_certificate: None,
            cluster_nodes: Vec::new(),
        }
    }

    /// A Redis Cluster reached through `nodes` (any of its nodes; more
    /// than one in case some are down), each a `redis://` or `rediss://`
    /// URL. Commands go to the node holding their key's slot (every
    /// multi-key script of this crate keeps its keys in one slot). Pub/sub
    /// subscribes through the first node, since the cluster carries a
    /// PUBLISH to every node: while that node is down, list changes and
    /// session events from other instances are missed (and caught up as
    /// after any outage).
    ///
    /// ```
    /// use toolwire_redis::RedisConfig;
    /// let config = RedisConfig::cluster(["redis://10.0.0.1:7000", "redis://10.0.0.2:7000"]);
    /// assert!(config.is_cluster());
    /// ```
    pub fn cluster<I, S>(nodes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let nodes: Vec<String> = nodes.into_iter().map(Into::into).collect();
        let mut config = RedisConfig::new(nodes.first().cloned().unwrap_or_default());
        config.cluster_nodes = nodes;
        config
    }

    /// True for a [`RedisConfig::cluster`] configuration.
    pub fn is_cluster(&self) -> bool {
        !self.cluster_nodes.is_empty()
    }

    /// The text every key starts with (default `toolwire:`): deployments
    /// sharing one Redis use different prefixes. It may not contain `{` or `}`.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The longest one command may take, reconnection included (default
    /// 1 s): past it the command counts as Redis being unreachable.
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// The longest one connection attempt may take (default 1 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// For `rediss://`: trusts this CA certificate (PEM) instead of the
    /// system's roots, as for a private CA.
    pub fn root_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.root_certificate = Some(pem.into());
        self
    }

    /// The key prefix.
    pub fn get_key_prefix(&self) -> &str {
        &self.prefix
    }

    /// Connects, waiting until Redis answers (or the attempts fail). The
    /// connection reconnects by itself whenever Redis goes away and comes back.
    pub async fn connect(&self) -> Result<RedisConnection, ConnectError> {
        if self.is_cluster() {
            return self.connect_cluster().await;
        }
        let (client, address) = self.client()?;
        let manager = ConnectionManager::new_with_config(client.clone(), self.manager_config())
            .await
            .map_err(|e| ConnectError::Connect {
                address: address.clone(),
                reason: e.to_string(),
            })?;
        Ok(self.connection(client, Backend::Single(manager), address))
    }

    async fn connect_cluster(&self) -> Result<RedisConnection, ConnectError> {
        let (client, _) = self.client()?;
        let address = self
            .cluster_nodes
            .iter()
            .map(|node| address_of(node))
            .collect::<Vec<_>>()
            .join(",");
        let failed = |e: redis::RedisError| ConnectError::Connect {
            address: address.clone(),
            reason: e.to_string(),
        };
        let mut builder = ClusterClientBuilder::new(self.cluster_nodes.clone())
            .connection_timeout(self.connect_timeout)
            .response_timeout(self.command_timeout)
            .retries(RECONNECT_RETRIES as u32);
        if let Some(pem) = &self.root_certificate {
            builder = builder.certs(TlsCertificates {
                client_tls: None,
                root_cert: Some(pem.clone()),
            });
        }
        let cluster = builder.build().map_err(failed)?;
        let connection = cluster.get_async_connection().await.map_err(failed)?;
        Ok(self.connection(client, Backend::Cluster(connection), address))
    }

    /// Like [`RedisConfig::connect`] but without waiting: the first command
    /// connects, so a server can start while Redis is still down. Call it
    /// within a Tokio runtime (the connection spawns a task).
    ///
    /// A cluster cannot be connected lazily: it fails with
    /// [`ConnectError::Connect`] saying so.
    pub fn connect_lazy(&self) -> Result<RedisConnection, ConnectError> {
        if self.is_cluster() {
            return Err(ConnectError::Connect {
                address: address_of(&self.url).to_owned(),
                reason: "a Redis Cluster is connected with connect(), not connect_lazy()".into(),
            });
        }
        let (client, address) = self.client()?;
        let manager =
            ConnectionManager::new_lazy_with_config(client.clone(), self.manager_config())
                .map_err(|e| ConnectError::Connect {
                    address: address.clone(),
                    reason: e.to_string(),
                })?;
        Ok(self.connection(client, Backend::Single(manager), address))
    }

    fn client(&self) -> Result<(Client, String), ConnectError> {
        check_prefix(&self.prefix).map_err(ConnectError::Prefix)?;
        let client = match &self.root_certificate {
            Some(pem) => {
                install_crypto_provider();
                let certificates = TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pem.clone()),
                };
                Client::build_with_tls(self.url.as_str(), certificates)
            }
            None => Client::open(self.url.as_str()),
        }
        .map_err(|e| ConnectError::Url(format!("{}: {e}", address_of(&self.url))))?;
        if self.url.starts_with("rediss") || self.url.starts_with("valkeys") {
            install_crypto_provider();
        }
        let address = client.get_connection_info().addr().to_string();
        Ok((client, address))
    }

    fn manager_config(&self) -> ConnectionManagerConfig {
        ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(Some(self.command_timeout))
            .set_number_of_retries(RECONNECT_RETRIES)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_millis(500))
    }

    fn connection(&self, client: Client, manager: Backend, address: String) -> RedisConnection {
        RedisConnection {
            client,
            manager,
            prefix: Arc::from(self.prefix.as_str()),
            address: Arc::from(address),
            timeout: self.command_timeout,
            connect_timeout: self.connect_timeout,
        }
    }
}

/// rustls needs a process-wide crypto provider; ring is the one built in.
/// Installing fails harmlessly when the process already chose one.
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The host part of a URL, without scheme, user or password.
fn address_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    rest.split(['/', '?', '#']).next().unwrap_or(rest)
}

/// A connection to Redis shared by the stores (cheap to clone: clones
/// share one multiplexed connection, which reconnects by itself).
#[derive(Clone)]
pub struct RedisConnection {
    /// For dedicated connections (pub/sub); the manager has its own copy.
    client: Client,
    manager: Backend,
    prefix: Arc<str>,
    address: Arc<str>,
    timeout: Duration,
    connect_timeout: Duration,
}

impl fmt::Debug for RedisConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConnection")
            .field("address", &self.address)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// A command that failed or timed out, as text naming Redis and its address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure(pub String);

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl RedisConnection {
    /// The key prefix.
    pub fn key_prefix(&self) -> &str {
        &self.prefix
    }

    /// Host and port of the server (never the password).
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Sends PING: `Ok` when Redis answers within the command timeout.
    pub async fn ping(&self) -> Result<(), String> {
        let mut manager = self.manager.clone();
        let command = redis::cmd("PING");
        let ping = command.query_async::<String>(&mut manager);
        self.bounded(ping).await.map(drop).map_err(|f| f.0)
    }

    /// Runs a script (EVALSHA, loading it on NOSCRIPT) within the command timeout.
    pub(crate) async fn invoke<T: FromRedisValue>(
        &self,
        invocation: &ScriptInvocation<'_>,
    ) -> Result<T, Failure> {
        let mut manager = self.manager.clone();
        self.bounded(invocation.invoke_async(&mut manager)).await
    }

    /// Runs one command within the command timeout.
    pub(crate) async fn query<T: FromRedisValue>(
        &self,
        command: &redis::Cmd,
    ) -> Result<T, Failure> {
        let mut manager = self.manager.clone();
        self.bounded(command.query_async::<T>(&mut manager)).await
    }

    /// PUBLISH `message` on `channel` within the command timeout.
    pub(crate) async fn publish(&self, channel: &str, message: &str) -> Result<(), Failure> {
        let mut manager = self.manager.clone();
        let mut command = redis::cmd("PUBLISH");
        command.arg(channel).arg(message);
        let publish = command.query_async::<i64>(&mut manager);
        self.bounded(publish).await.map(drop)
    }

    /// The client, for connections of their own (pub/sub).
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// The longest one command may take.
    pub(crate) fn command_timeout(&self) -> Duration {
        self.timeout
    }

    /// The longest one connection attempt may take.
    pub(crate) fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    async fn bounded<T>(
        &self,
        command: impl Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, Failure> {
        match tokio::time::timeout(self.timeout, command).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(self.failure(&error)),
            Err(_) => Err(self.failure(&format!("no answer within {:?}", self.timeout))),
        }
    }

    pub(crate) fn failure(&self, detail: &dyn fmt::Display) -> Failure {
        Failure(format!("Redis at {}: {detail}", self.address))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_leave_out_secrets() {
        assert_eq!(address_of("redis://:pw@host:6379/0"), "host:6379");
        assert_eq!(address_of("rediss://user:p@ss@h"), "h");
        assert_eq!(
            address_of("redis://127.0.0.1:1?protocol=resp3"),
            "127.0.0.1:1"
        );
        assert_eq!(address_of("host"), "host");
    }

    #[test]
    fn bad_urls_and_prefixes_are_refused() {
        let url = RedisConfig::new("http://x").connect_lazy().unwrap_err();
        assert!(matches!(url, ConnectError::Url(_)), "{url}");
        let prefix = RedisConfig::new("redis://127.0.0.1:1")
            .key_prefix("a{b}")
            .connect_lazy()
            .unwrap_err();
        assert!(matches!(prefix, ConnectError::Prefix(_)), "{prefix}");
    }
}
