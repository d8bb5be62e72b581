//! Running the real `toolwire` binary: a `toolwire serve` child on a free
//! port, and client commands with piped stdin. Every wait is bounded and
//! every child is killed when its guard drops.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_toolwire")
}

/// Longest any single command may run before the test fails.
pub const COMMAND_LIMIT: Duration = Duration::from_secs(60);

/// A `toolwire serve --http 127.0.0.1:0` child; killed on drop.
pub struct Served {
    child: Child,
    pub url: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Served {
    /// Starts the demo server with extra `serve` flags and waits (bounded)
    /// for the line that says where it listens.
    pub fn start(extra: &[&str]) -> Served {
        let mut args = vec!["serve", "--http", "127.0.0.1:0"];
        args.extend(extra);
        Served::command(&args)
    }

    /// Starts `toolwire args...` (a `serve` or `gateway` that listens on
    /// HTTP) and waits (bounded) for the line that says where.
    pub fn command(args: &[&str]) -> Served {
        Served::command_with_env(args, &[])
    }

    /// Like [`Served::command`], with extra environment variables.
    pub fn command_with_env(args: &[&str], env: &[(&str, &str)]) -> Served {
        let mut child = Command::new(bin())
            .args(args)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn toolwire serve");
        let stderr = child.stderr.take().expect("piped stderr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let lines = Arc::clone(&log);
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = listening_url(&line) {
                    let _ = tx.send(url);
                }
                lines.lock().unwrap().push(line);
            }
        });
        let url = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(url) => url,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "toolwire {} did not say where it listens within 30 s; stderr:\n{}",
                    args.join(" "),
                    log.lock().unwrap().join("\n")
                );
            }
        };
        Served { child, url, log }
    }

    /// Everything the server wrote on stderr so far.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Waits (bounded) until a stderr line contains `needle`.
    pub fn wait_for_log(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(line) = self.log().into_iter().find(|l| l.contains(needle)) {
                return line;
            }
            assert!(
                Instant::now() < deadline,
                "the server never logged {needle:?}; its stderr:\n{}",
                self.log().join("\n")
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the server as an operator would (SIGTERM) and waits (bounded)
    /// for it to exit.
    pub fn terminate(&mut self) -> ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .stdout(Stdio::null())
            .status()
            .expect("run kill");
        assert!(status.success());
        self.wait_exit()
    }

    /// Waits (bounded) for the server to exit by itself.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the server did not exit within 30 s");
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The URL in `toolwire: serving the demo MCP server at URL (...)` or
/// `toolwire: gateway serving N tools at URL (...)`.
fn listening_url(line: &str) -> Option<String> {
    let line = line.strip_prefix("toolwire: ")?;
    ["http", "https"].into_iter().find_map(|scheme| {
        let rest = line.split(&format!(" at {scheme}://")).nth(1)?;
        Some(format!("{scheme}://{}", rest.split_whitespace().next()?))
    })
}

/// What a finished command printed, and how it ended.
#[derive(Debug)]
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    /// Stdout parsed as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// Asserts the exit code, showing the output when it differs.
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "exit code; stdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

/// Runs `toolwire args...` with `input` on stdin; killed after [`COMMAND_LIMIT`].
pub fn toolwire(args: &[&str], input: &str) -> Ran {
    run_with_env(args, input, &[])
}

/// Like [`toolwire`], with extra environment variables.
pub fn run_with_env(args: &[&str], input: &str, env: &[(&str, &str)]) -> Ran {
    // A config directory of its own (eras.json, tokens.json), unless `env`
    // sets one; removed once the command has ended.
    let config = fresh_dir("config");
    let mut command = Command::new(bin());
    command
        .args(args)
        .env("XDG_CONFIG_HOME", &config)
        .env_remove("RUST_LOG")
        .env_remove("TOOLWIRE_BEARER")
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("spawn toolwire");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = input.to_owned();
    // The command may exit without reading everything: ignore broken pipes.
    let writer = thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let stdout = drain(child.stdout.take().expect("piped stdout"));
    let stderr = drain(child.stderr.take().expect("piped stderr"));
    let deadline = Instant::now() + COMMAND_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`toolwire {}` did not finish within {COMMAND_LIMIT:?}",
                args.join(" ")
            );
        }
        thread::sleep(Duration::from_millis(10));
    };
    let _ = writer.join();
    let _ = std::fs::remove_dir_all(&config);
    Ran {
        code: status.code(),
        stdout: stdout
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_default(),
        stderr: stderr
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_default(),
    }
}

/// What every [`fresh_dir`] name starts with.
const FRESH_DIR_PREFIX: &str = "toolwire-cli-test-";

/// A new empty directory under the system's temp dir, named after
/// `purpose` and this process. A test may still need it when its process
/// ends, so it is left there; the first call of a later test process
/// removes those of processes that have ended ([`sweep_ended_processes_dirs`]).
pub fn fresh_dir(purpose: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(sweep_ended_processes_dirs);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!(
        "{FRESH_DIR_PREFIX}{purpose}-{}-{n}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Removes the [`fresh_dir`]s of test processes that are no longer
/// running (their names end `-PID-N`; a process runs while `/proc/PID`
/// exists). Only on Linux, where `/proc` says so.
fn sweep_ended_processes_dirs() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(FRESH_DIR_PREFIX)) else {
            continue;
        };
        let pid = rest.rsplit('-').nth(1).and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid
            && !std::path::Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The strictly legacy stdio server (`strict_legacy.py`), as a command.
pub fn strict_legacy_server() -> Vec<String> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/support/strict_legacy.py"
    );
    vec!["python3".into(), script.into()]
}

fn drain(mut pipe: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        let _ = tx.send(text);
    });
    rx
}

/// A loopback port nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// `GET path` on the server of `url` (`http://127.0.0.1:PORT/mcp`): the
/// status and the body.
pub fn http_get(url: &str, path: &str) -> (u16, String) {
    let authority = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("an authority");
    let mut stream = std::net::TcpStream::connect(authority).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("a response");
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    (status, body.to_owned())
}
