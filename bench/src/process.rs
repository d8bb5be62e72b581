//! Server processes: started fresh on a free loopback port, killed after,
//! and their memory read from `/proc/<pid>/status`.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::LOOPBACK;

/// How long a server may take to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// The directory holding this workspace's binaries (next to the running one).
pub fn binary_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The path of a sibling binary, or an error saying how to build it.
pub fn binary(name: &str) -> Result<PathBuf, String> {
    let path = binary_dir().join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} not found: build the benchmark binaries first \
             (cargo build --release --manifest-path bench/Cargo.toml --bins, or use bench/run.sh)",
            path.display()
        ))
    }
}

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> std::io::Result<u16> {
    let listener = TcpListener::bind((LOOPBACK, 0))?;
    Ok(listener.local_addr()?.port())
}

/// A running server process, killed when dropped.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    /// What it is.
    pub name: String,
}

impl ServerProcess {
    /// Starts `binary <port> args...` on a free port and waits until it accepts
    /// connections.
    pub fn start(binary: &Path, args: &[String]) -> Result<ServerProcess, String> {
        let port = free_port().map_err(|e| format!("no free port: {e}"))?;
        let mut all = vec![port.to_string()];
        all.extend_from_slice(args);
        ServerProcess::start_at(binary, &all, port)
    }

    /// Starts `program args...`, which must listen on 127.0.0.1:`port` (set
    /// in its arguments or its configuration), and waits until it accepts
    /// connections.
    pub fn start_at(program: &Path, args: &[String], port: u16) -> Result<ServerProcess, String> {
        ServerProcess::start_with(program, args, port, &[], None)
    }

    /// [`ServerProcess::start_at`] with `env` added to its environment and
    /// its standard error sent to `stderr` (inherited when `None`).
    pub fn start_with(
        program: &Path,
        args: &[String],
        port: u16,
        env: &[(&str, &str)],
        stderr: Option<std::fs::File>,
    ) -> Result<ServerProcess, String> {
        let binary = program;
        let name = binary
            .file_name()
            .map_or_else(|| "server".to_owned(), |n| n.to_string_lossy().into_owned());
        let child = Command::new(binary)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr.map_or_else(Stdio::inherit, Stdio::from))
            .spawn()
            .map_err(|e| format!("could not start {}: {e}", binary.display()))?;
        let mut server = ServerProcess {
            child,
            addr: SocketAddr::new(LOOPBACK, port),
            name,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if TcpStream::connect_timeout(&server.addr, Duration::from_millis(200)).is_ok() {
                return Ok(server);
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!("{} exited at start-up: {status}", server.name));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "{} did not listen within {START_TIMEOUT:?}",
                    server.name
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its current memory.
    pub fn memory(&self) -> Memory {
        Memory::of(self.pid())
    }

    /// The CPU time it has used so far.
    pub fn cpu_time(&self) -> Duration {
        cpu_time(self.pid())
    }

    /// Kills it and waits for it.
    pub fn stop(mut self) {
        self.kill();
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// CPU time (user + system, all threads) a process has used so far, from
/// `/proc/<pid>/stat` (in USER_HZ ticks, 100 per second on Linux); zero when
/// it cannot be read.
pub fn cpu_time(pid: u32) -> Duration {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return Duration::ZERO;
    };
    // The command name is in parentheses and may hold spaces: skip past it.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return Duration::ZERO;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state); utime and stime are fields 14 and 15.
    let tick = |i: usize| {
        fields
            .get(i - 3)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Duration::from_millis((tick(14) + tick(15)) * 10)
}

/// Resident memory of a process, in bytes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Memory {
    /// `VmRSS`: resident now.
    pub rss: u64,
    /// `VmHWM`: the peak resident size so far.
    pub peak: u64,
    /// `RssAnon`: the resident part that is not file-backed (heap, stacks);
    /// the rest is mostly the binary's code pages.
    pub anon: u64,
}

impl Memory {
    /// Reads `/proc/<pid>/status`; zeros when it cannot be read.
    pub fn of(pid: u32) -> Memory {
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            return Memory::default();
        };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
                .map_or(0, |kib| kib * 1024)
        };
        Memory {
            rss: field("VmRSS:"),
            peak: field("VmHWM:"),
            anon: field("RssAnon:"),
        }
    }
}

/// A `redis-server` of the benchmark's own on a free 127.0.0.1 port (no
/// persistence), killed on drop.
#[derive(Debug)]
pub struct RedisProcess {
    child: std::process::Child,
    /// `redis://127.0.0.1:PORT`.
    pub url: String,
    /// Where callgrind writes its dumps, when it runs under callgrind.
    pub callgrind_dir: Option<PathBuf>,
}

impl RedisProcess {
    /// Starts `redis-server` and waits (at most 10 s) until it answers PING.
    pub fn start() -> Result<RedisProcess, String> {
        RedisProcess::launch(Command::new("redis-server"), None)
    }

    /// Starts `redis-server` under `valgrind --tool=callgrind`, its dumps in
    /// `dir` (which must exist), and waits (at most 60 s) for PING.
    pub fn start_under_callgrind(dir: &Path) -> Result<RedisProcess, String> {
        let mut command = Command::new("valgrind");
        command
            .arg("--tool=callgrind")
            .arg(format!(
                "--callgrind-out-file={}",
                dir.join("callgrind.out").display()
            ))
            .arg("redis-server")
            .stderr(Stdio::null());
        RedisProcess::launch(command, Some(dir.to_path_buf()))
    }

    fn launch(
        mut command: Command,
        callgrind_dir: Option<PathBuf>,
    ) -> Result<RedisProcess, String> {
        let port = free_port().map_err(|e| format!("no free port: {e}"))?;
        let child = command
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| {
                format!("cannot start redis-server (install it: apt-get install redis-server): {e}")
            })?;
        let wait = if callgrind_dir.is_some() { 60 } else { 10 };
        let process = RedisProcess {
            child,
            url: format!("redis://127.0.0.1:{port}"),
            callgrind_dir,
        };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(wait) {
            if pong(port) {
                return Ok(process);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!(
            "redis-server on port {port} did not answer PING within {wait} s"
        ))
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The CPU time it has used so far.
    pub fn cpu_time(&self) -> Duration {
        cpu_time(self.pid())
    }

    /// What clients have sent it so far, from `INFO commandstats` (one
    /// short-lived connection of its own, 2 s timeout).
    pub fn stats(&self) -> Result<RedisStats, String> {
        use std::io::{BufRead, BufReader, Read, Write};
        let port = self
            .url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse::<u16>().ok());
        let port = port.ok_or("no port in the Redis URL")?;
        let failed = |e: std::io::Error| format!("INFO commandstats: {e}");
        let mut stream = TcpStream::connect((LOOPBACK, port)).map_err(failed)?;
        stream
            .set_read_timeout(Some(Duration::from_secs(2)))
            .map_err(failed)?;
        stream.write_all(b"INFO commandstats\r\n").map_err(failed)?;
        let mut reader = BufReader::new(stream);
        let mut header = String::new();
        reader.read_line(&mut header).map_err(failed)?;
        let length = header
            .trim_end()
            .strip_prefix('$')
            .and_then(|n| n.parse().ok());
        let mut text = vec![0u8; length.ok_or_else(|| format!("INFO answered {header:?}"))?];
        reader.read_exact(&mut text).map_err(failed)?;
        Ok(RedisStats::parse(&String::from_utf8_lossy(&text)))
    }
}

/// Commands a redis-server has run, from `INFO commandstats`. Redis 7
/// also lists there the commands Lua scripts run inside it; those are not
/// round trips and are counted apart: what a client sent is a script call
/// (`EVALSHA`, `EVAL`, `SCRIPT LOAD`; a script cannot run these) or a
/// connection set-up command (`HELLO`, `CLIENT ...`, `SELECT`, `AUTH`), as in
/// `crates/redis/tests/round_trips.rs`. The `INFO` reads themselves are left
/// out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RedisStats {
    /// Commands clients sent: round trips.
    pub round_trips: u64,
    /// Of them, script calls (`EVALSHA`, `EVAL`).
    pub scripts: u64,
    /// Commands the scripts ran inside Redis.
    pub inner: u64,
    /// Microseconds redis-server spent running what clients sent (its own
    /// measure: the scripts' inner commands included, network I/O not).
    pub usec: u64,
}

impl RedisStats {
    /// Reads lines such as `cmdstat_evalsha:calls=2,usec=35,usec_per_call=17.50,...`.
    pub fn parse(info: &str) -> RedisStats {
        let mut stats = RedisStats::default();
        for line in info.lines() {
            let Some((name, fields)) = line
                .strip_prefix("cmdstat_")
                .and_then(|rest| rest.split_once(':'))
            else {
                continue;
            };
            let field = |key: &str| {
                fields
                    .split(',')
                    .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            let calls = field("calls");
            let script = name.starts_with("eval");
            let sent = script
                || name.starts_with("script")
                || name.starts_with("client")
                || ["hello", "select", "auth"].contains(&name);
            if name == "info" {
                continue;
            } else if sent {
                stats.round_trips += calls;
                stats.usec += field("usec");
                stats.scripts += if script { calls } else { 0 };
            } else {
                stats.inner += calls;
            }
        }
        stats
    }

    /// What was sent between `before` and `self`.
    pub fn since(self, before: RedisStats) -> RedisStats {
        RedisStats {
            round_trips: self.round_trips.saturating_sub(before.round_trips),
            scripts: self.scripts.saturating_sub(before.scripts),
            inner: self.inner.saturating_sub(before.inner),
            usec: self.usec.saturating_sub(before.usec),
        }
    }

    /// `self` plus `other`.
    pub fn plus(self, other: RedisStats) -> RedisStats {
        RedisStats {
            round_trips: self.round_trips + other.round_trips,
            scripts: self.scripts + other.scripts,
            inner: self.inner + other.inner,
            usec: self.usec + other.usec,
        }
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn pong(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect((LOOPBACK, port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_millis(500)));
    let mut reply = [0u8; 7];
    stream.write_all(b"PING\r\n").is_ok()
        && stream.read_exact(&mut reply).is_ok()
        && &reply == b"+PONG\r\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commandstats_split_round_trips_from_script_commands() {
        let info = "# Commandstats\r\n\
            cmdstat_evalsha:calls=5,usec=50,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n\
            cmdstat_script|load:calls=2,usec=8,usec_per_call=4.00,rejected_calls=0,failed_calls=0\r\n\
            cmdstat_hset:calls=10,usec=5,usec_per_call=0.50,rejected_calls=0,failed_calls=0\r\n\
            cmdstat_info:calls=9,usec=900,usec_per_call=100.00,rejected_calls=0,failed_calls=0\r\n";
        let stats = RedisStats::parse(info);
        assert_eq!(
            stats,
            RedisStats {
                round_trips: 7,
                scripts: 5,
                inner: 10,
                usec: 58
            }
        );
        assert_eq!(stats.plus(stats).since(stats), stats);
        assert_eq!(stats.since(RedisStats::default()), stats);
    }
}
