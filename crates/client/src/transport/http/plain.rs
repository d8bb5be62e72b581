//! A pool of HTTP/1.1 connections to one plain-`http` origin, over hyper's
//! connection API. It does what hyper-util's pooled client did for such an
//! endpoint, without a task per request: a connection goes back to the pool
//! when its reply's body has been read to the end ([`Lease`]), and the next
//! request waits for it to be ready there, in the caller's task.
//!
//! Idle connections are kept for up to 90 s and at most [`MAX_IDLE`] of
//! them; one the server closed is noticed and dropped when it is taken,
//! and a request that could not be written on a reused connection is sent
//! again on another.
//!
//! A connection's task runs where it was spawned. On a single-threaded
//! runtime (a server's connection threads) that is one thread, and a
//! request made there takes only connections whose task runs on it, so that
//! the call wakes no other thread; requests made on a multi-thread runtime
//! share the connections spawned on one.

use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{HOST, HeaderValue};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

type Sender = SendRequest<Full<Bytes>>;

/// How long an idle connection is kept (reqwest's default; hyper-util's
/// pool in `lean.rs` keeps the same).
pub(super) const POOL_IDLE: Duration = Duration::from_secs(90);
/// TCP keep-alive: first probe, interval and count (reqwest's defaults).
pub(super) const TCP_KEEPALIVE: Duration = Duration::from_secs(15);
pub(super) const TCP_KEEPALIVE_RETRIES: u32 = 3;
/// The most idle connections kept; more are closed when they come back.
const MAX_IDLE: usize = 64;

/// Connections to one origin, `http://host:port`.
#[derive(Debug, Clone)]
pub(super) struct PlainPool {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// The host as a socket address takes it (an IPv6 address unbracketed).
    host: String,
    port: u16,
    /// The `Host` header of every request.
    host_header: HeaderValue,
    /// Idle connections, the most recently used last.
    idle: Mutex<Vec<Idle>>,
}

#[derive(Debug)]
struct Idle {
    connection: Connection,
    since: Instant,
}

/// An open connection: how to send on it, and where its task runs.
#[derive(Debug)]
struct Connection {
    sender: Sender,
    home: Home,
}

/// Where a connection's task runs, as far as the pool tells them apart:
/// the thread of a single-threaded runtime, or any worker of a multi-thread
/// one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Home {
    Thread(ThreadId),
    Workers,
}

impl Home {
    /// Where a task spawned now would run.
    fn here() -> Home {
        match tokio::runtime::Handle::try_current().map(|r| r.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::CurrentThread) => {
                Home::Thread(thread::current().id())
            }
            _ => Home::Workers,
        }
    }
}

/// A connection in use: it goes back to the pool when released, else it
/// is closed when dropped.
#[derive(Debug)]
pub(super) struct Lease {
    connection: Connection,
    pool: PlainPool,
}

/// Why a request could not be sent: the connection could not be opened,
/// or the request failed on it. Worded as hyper-util's client words them.
#[derive(Debug)]
pub(super) enum PlainError {
    Connect(std::io::Error),
    Handshake(hyper::Error),
    Send(hyper::Error),
}

impl std::fmt::Display for PlainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlainError::Connect(_) => f.write_str("client error (Connect)"),
            PlainError::Handshake(_) | PlainError::Send(_) => {
                f.write_str("client error (SendRequest)")
            }
        }
    }
}

impl std::error::Error for PlainError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PlainError::Connect(error) => Some(error),
            PlainError::Handshake(error) | PlainError::Send(error) => Some(error),
        }
    }
}

impl PlainPool {
    /// A pool for `endpoint`'s origin when it is a plain `http` URI with a
    /// host; `None` otherwise.
    pub(super) fn for_endpoint(endpoint: &http::Uri) -> Option<PlainPool> {
        if endpoint.scheme_str() != Some("http") {
            return None;
        }
        let host = endpoint.host()?;
        let port = endpoint.port_u16().unwrap_or(80);
        let header = match endpoint.port_u16() {
            Some(port) if port != 80 => format!("{host}:{port}"),
            _ => host.to_owned(),
        };
        let shared = Shared {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port,
            host_header: HeaderValue::from_str(&header).ok()?,
            idle: Mutex::new(Vec::new()),
        };
        Some(PlainPool {
            shared: Arc::new(shared),
        })
    }

    /// Whether `uri` is of this pool's origin.
    pub(super) fn serves(&self, uri: &http::Uri) -> bool {
        uri.scheme_str() == Some("http")
            && uri.port_u16().unwrap_or(80) == self.shared.port
            && uri.host().is_some_and(|h| {
                h.trim_start_matches('[').trim_end_matches(']') == self.shared.host
            })
    }

    /// Sends `request` (an absolute URI of this origin) on an idle
    /// connection, or a new one; the reply comes with the connection's
    /// lease.
    pub(super) async fn send(
        &self,
        mut request: http::Request<Full<Bytes>>,
    ) -> Result<(http::Response<Incoming>, Lease), PlainError> {
        self.to_origin_form(&mut request);
        while let Some(mut connection) = self.take_ready().await {
            match connection.sender.try_send_request(request).await {
                Ok(response) => return Ok((response, self.lease(connection))),
                Err(mut error) => match error.take_message() {
                    // Not written: the connection closed while idle.
                    Some(unsent) => request = unsent,
                    None => return Err(PlainError::Send(error.into_error())),
                },
            }
        }
        let mut connection = self.connect().await?;
        let response = connection
            .sender
            .send_request(request)
            .await
            .map_err(PlainError::Send)?;
        Ok((response, self.lease(connection)))
    }

    fn lease(&self, connection: Connection) -> Lease {
        Lease {
            connection,
            pool: self.clone(),
        }
    }

    /// The request as sent on the connection: path and query only, and the
    /// origin's `Host` unless the caller set one.
    fn to_origin_form(&self, request: &mut http::Request<Full<Bytes>>) {
        let path = request
            .uri()
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| http::uri::PathAndQuery::from_static("/"));
        *request.uri_mut() = http::Uri::from(path);
        request
            .headers_mut()
            .entry(HOST)
            .or_insert_with(|| self.shared.host_header.clone());
    }

    /// The most recently used idle connection whose task runs where this
    /// request does ([`Home`]) and that is still open and ready; expired and
    /// closed ones are dropped on the way.
    async fn take_ready(&self) -> Option<Connection> {
        let here = Home::here();
        loop {
            let mut idle = self.pop_unexpired(here)?;
            if idle.connection.sender.ready().await.is_ok() {
                return Some(idle.connection);
            }
        }
    }

    fn pop_unexpired(&self, home: Home) -> Option<Idle> {
        let mut idle = self.shared.idle.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        // The oldest come first: drop every expired one at once.
        let expired = idle
            .iter()
            .take_while(|i| now.duration_since(i.since) >= POOL_IDLE)
            .count();
        idle.drain(..expired);
        let position = idle.iter().rposition(|i| i.connection.home == home)?;
        Some(idle.remove(position))
    }

    async fn connect(&self) -> Result<Connection, PlainError> {
        let stream = TcpStream::connect((self.shared.host.as_str(), self.shared.port))
            .await
            .map_err(PlainError::Connect)?;
        // Best effort, as hyper-util's connector does.
        let _ = stream.set_nodelay(true);
        let keepalive = socket2::TcpKeepalive::new()
            .with_time(TCP_KEEPALIVE)
            .with_interval(TCP_KEEPALIVE)
            .with_retries(TCP_KEEPALIVE_RETRIES);
        let _ = socket2::SockRef::from(&stream).set_tcp_keepalive(&keepalive);
        let (sender, connection) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(PlainError::Handshake)?;
        tokio::spawn(async move {
            // Its errors reach the request or the body being read.
            let _ = connection.await;
        });
        Ok(Connection {
            sender,
            home: Home::here(),
        })
    }

    fn put_back(&self, connection: Connection) {
        if connection.sender.is_closed() {
            return;
        }
        let mut idle = self.shared.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(Idle {
                connection,
                since: Instant::now(),
            });
        }
    }
}

impl Lease {
    /// The reply's body has been read to its end: the connection can serve
    /// the next request.
    pub(super) fn release(self) {
        self.pool.put_back(self.connection);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_plain_http_endpoint_with_a_host_gets_a_pool() {
        let pool = |uri: &str| PlainPool::for_endpoint(&uri.parse().unwrap());
        assert!(pool("https://example.com/mcp").is_none());
        assert!(pool("/mcp").is_none());
        let plain = pool("http://127.0.0.1:8931/mcp").unwrap();
        assert_eq!(plain.shared.host_header, "127.0.0.1:8931");
        assert_eq!(
            pool("http://example.com/mcp").unwrap().shared.host_header,
            "example.com"
        );
        assert_eq!(
            pool("http://example.com:80/mcp")
                .unwrap()
                .shared
                .host_header,
            "example.com"
        );
        let v6 = pool("http://[::1]:9000/mcp").unwrap();
        assert_eq!((v6.shared.host.as_str(), v6.shared.port), ("::1", 9000));
        assert_eq!(v6.shared.host_header, "[::1]:9000");
    }

    /// A connection (to nothing: the test never sends on it) at `home`.
    async fn connection_at(home: Home) -> Connection {
        let (ours, _theirs) = tokio::io::duplex(64);
        let (sender, _connection) = http1::handshake(TokioIo::new(ours)).await.unwrap();
        Connection { sender, home }
    }

    #[tokio::test]
    async fn a_request_takes_only_connections_whose_task_runs_where_it_does() {
        let pool = PlainPool::for_endpoint(&"http://127.0.0.1:8931/mcp".parse().unwrap()).unwrap();
        // `tokio::test` runs on a single-threaded runtime.
        let here = Home::here();
        assert_eq!(here, Home::Thread(thread::current().id()));
        let elsewhere = Home::Thread(
            std::thread::spawn(|| thread::current().id())
                .join()
                .unwrap(),
        );
        let since = Instant::now();
        for home in [here, elsewhere, Home::Workers] {
            let connection = connection_at(home).await;
            pool.shared
                .idle
                .lock()
                .unwrap()
                .push(Idle { connection, since });
        }
        let taken = pool.pop_unexpired(here).unwrap();
        assert_eq!(taken.connection.home, here);
        assert!(pool.pop_unexpired(here).is_none());
        let taken = pool.pop_unexpired(Home::Workers).unwrap();
        assert_eq!(taken.connection.home, Home::Workers);
        assert_eq!(pool.shared.idle.lock().unwrap().len(), 1);
    }

    #[test]
    fn a_multi_thread_runtime_is_one_home() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        assert_eq!(runtime.block_on(async { Home::here() }), Home::Workers);
    }

    #[test]
    fn a_pool_serves_only_its_own_origin() {
        let pool = PlainPool::for_endpoint(&"http://[::1]:9000/mcp".parse().unwrap()).unwrap();
        let serves = |uri: &str| pool.serves(&uri.parse().unwrap());
        assert!(serves("http://[::1]:9000/other?x=1"));
        assert!(!serves("http://[::1]:9001/mcp"));
        assert!(!serves("https://[::1]:9000/mcp"));
        assert!(!serves("http://127.0.0.1:9000/mcp"));
    }

    #[test]
    fn a_request_goes_out_in_origin_form_with_the_origins_host() {
        let pool = PlainPool::for_endpoint(&"http://127.0.0.1:8931/mcp".parse().unwrap()).unwrap();
        let mut request = http::Request::new(Full::new(Bytes::new()));
        *request.uri_mut() = "http://127.0.0.1:8931/mcp?a=b".parse().unwrap();
        pool.to_origin_form(&mut request);
        assert_eq!(request.uri(), "/mcp?a=b");
        assert_eq!(request.headers()[HOST], "127.0.0.1:8931");
    }
}
