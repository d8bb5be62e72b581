//! A real `redis-server` of the test's own on a free loopback port, killed
//! on drop. A missing `redis-server` fails the test: these tests never
//! skip. Every wait is bounded.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use toolwire_redis::{RedisConfig, RedisConnection};

/// Every wait in these tests is bounded by this.
pub const WAIT: Duration = Duration::from_secs(10);

/// One `redis-server` process.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    child: Option<Child>,
    /// Serves TLS only (the fixture certificate), no plain port.
    tls: bool,
}

/// A free port on 127.0.0.1 (bound, then released), never one this test
/// binary handed out before: the kernel may give a released port to the
/// next `bind(0)`, and tests running side by side must not share one.
pub fn free_port() -> u16 {
    static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    loop {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
        let port = listener.local_addr().unwrap().port();
        if HANDED_OUT.lock().unwrap().insert(port) {
            return port;
        }
    }
}

impl RedisServer {
    /// Starts `redis-server` on a free loopback port and waits for PONG.
    pub fn start() -> RedisServer {
        RedisServer::start_with(false)
    }

    /// Starts `redis-server` serving TLS only, with `tests/fixtures/server.pem`
    /// (issued for 127.0.0.1 by `tests/fixtures/ca.pem`).
    pub fn start_tls() -> RedisServer {
        RedisServer::start_with(true)
    }

    /// Starts `redis-server` on `port`.
    pub fn start_on(port: u16) -> RedisServer {
        let mut server = RedisServer {
            port,
            child: None,
            tls: false,
        };
        server.restart();
        server
    }

    /// Starts on a free port; a server that exits at once (the port was
    /// taken between `free_port` and its bind) is started again on another
    /// port, a bounded number of times.
    fn start_with(tls: bool) -> RedisServer {
        const ATTEMPTS: usize = 5;
        for _ in 0..ATTEMPTS {
            let port = free_port();
            let mut child = spawn(port, tls);
            if wait_until_serving(port, tls, &mut child) {
                let child = Some(child);
                return RedisServer { port, child, tls };
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("redis-server did not start on a free port in {ATTEMPTS} attempts");
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT` (`rediss://` for TLS).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "rediss" } else { "redis" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// Kills the server and waits for it to exit.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port (empty: nothing is saved).
    pub fn restart(&mut self) {
        self.kill();
        let mut child = spawn(self.port, self.tls);
        let serving = wait_until_serving(self.port, self.tls, &mut child);
        assert!(
            serving,
            "redis-server exited on restart on 127.0.0.1:{}",
            self.port
        );
        self.child = Some(child);
    }

    /// A connection through the crate, as one server instance would hold.
    pub async fn connect(&self) -> RedisConnection {
        RedisConfig::new(self.url())
            .connect()
            .await
            .expect("connect to the test redis-server")
    }

    /// A plain connection for looking at keys directly.
    pub async fn raw(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .expect("raw connection")
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn spawn(port: u16, tls: bool) -> Child {
    let mut command = Command::new("redis-server");
    let port = port.to_string();
    if tls {
        let file = |name: &str| fixtures().join(name).display().to_string();
        command
            .args(["--port", "0", "--tls-port", &port])
            .args(["--tls-cert-file", &file("server.pem")])
            .args(["--tls-key-file", &file("server.key")])
            .args(["--tls-ca-cert-file", &file("ca.pem")])
            .args(["--tls-auth-clients", "no"]);
    } else {
        command.args(["--port", &port]);
    }
    command
        .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    match command.spawn() {
        Ok(child) => child,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => panic!(
            "redis-server is not on PATH: these tests need a real Redis and never skip \
             (install it, e.g. apt-get install redis-server)"
        ),
        Err(error) => panic!("could not start redis-server: {error}"),
    }
}

/// Waits until the server on `port` serves (answers PING, or for TLS
/// accepts a connection); false when `child` exits first.
pub fn wait_until_serving(port: u16, tls: bool, child: &mut Child) -> bool {
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        let serving = if tls {
            TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok()
        } else {
            ping(port)
        };
        if serving {
            return true;
        }
        if child.try_wait().expect("poll redis-server").is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("redis-server on 127.0.0.1:{port} did not serve within {WAIT:?}");
}

fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let mut reply = [0u8; 7];
    stream.write_all(b"PING\r\n").is_ok()
        && stream.read_exact(&mut reply).is_ok()
        && &reply == b"+PONG\r\n"
}

/// The fixture directory (TLS certificates).
pub fn fixtures() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"))
}

/// Polls `check` every 50 ms until it is true, at most for [`WAIT`].
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if check().await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not within {WAIT:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
