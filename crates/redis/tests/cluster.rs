//! Every store of the crate on a real three-node Redis Cluster of the
//! test's own (redis-server with cluster mode on, joined by
//! `redis-cli --cluster create`), through two connections as two instances
//! would hold: rate limits, handles of owners whose keys fall in different
//! slots, session records and events, the change feed, and tasks.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use support::free_port;
use toolwire_redis::{
    RedisChangeFeed, RedisConfig, RedisConnection, RedisHandles, RedisRateLimits,
    RedisSessionStore, RedisTaskStore,
};
use toolwire_server::protocol::{ClientCapabilities, Implementation, LoggingLevel, TaskStatus};
use toolwire_server::{
    Change, ChangeFeed, ChangeTopics, HandleStore, RateLimit, SessionEvent, SessionRecord,
    SessionStore, TaskLookup, TaskRecord, TaskStore, TaskStoreError,
};

const WAIT: Duration = Duration::from_secs(20);
const MINUTE: Duration = Duration::from_secs(60);

/// Three cluster-mode redis-servers holding every slot between them.
struct RedisCluster {
    ports: Vec<u16>,
    nodes: Vec<Child>,
    dir: PathBuf,
}

impl RedisCluster {
    fn start() -> RedisCluster {
        let dir = std::env::temp_dir().join(format!("toolwire-cluster-{}", free_port()));
        std::fs::create_dir_all(&dir).unwrap();
        let (ports, nodes) = (0..3).map(|_| start_node(&dir)).unzip();
        let cluster = RedisCluster { ports, nodes, dir };
        cluster.create();
        cluster
    }

    fn create(&self) {
        let deadline = Instant::now() + WAIT;
        let addresses: Vec<String> = self
            .ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        loop {
            let created = Command::new("redis-cli")
                .arg("--cluster")
                .arg("create")
                .args(&addresses)
                .args(["--cluster-replicas", "0", "--cluster-yes"])
                .stdin(Stdio::null())
                .output()
                .expect("redis-cli (from redis-tools, installed with redis-server) runs");
            if created.status.success() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "redis-cli --cluster create failed: {}{}",
                String::from_utf8_lossy(&created.stdout),
                String::from_utf8_lossy(&created.stderr)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        for port in &self.ports {
            wait_until_ok(*port, deadline);
        }
    }

    fn urls(&self) -> Vec<String> {
        self.ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect()
    }

    async fn connect(&self) -> RedisConnection {
        RedisConfig::cluster(self.urls())
            .connect()
            .await
            .expect("connect to the test cluster")
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            let _ = node.kill();
            let _ = node.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A cluster-mode node answering PING on a port of its own. A node that
/// exits at once (its port or bus port was taken between `free_port` and
/// its bind) is started again on new ports, a bounded number of times.
fn start_node(dir: &Path) -> (u16, Child) {
    const ATTEMPTS: usize = 5;
    for _ in 0..ATTEMPTS {
        let port = free_port();
        let mut node = spawn_node(port, dir);
        if support::wait_until_serving(port, false, &mut node) {
            return (port, node);
        }
        let _ = node.kill();
        let _ = node.wait();
    }
    let log = std::fs::read_to_string(dir.join("node.log")).unwrap_or_default();
    panic!("no cluster node answered PING in {ATTEMPTS} attempts; redis-server printed:\n{log}")
}

fn spawn_node(port: u16, dir: &Path) -> Child {
    let (port, bus) = (port.to_string(), free_port().to_string());
    let config = dir.join(format!("nodes-{port}.conf"));
    Command::new("redis-server")
        .args(["--port", &port, "--cluster-port", &bus])
        .args(["--cluster-enabled", "yes"])
        .arg("--cluster-config-file")
        .arg(&config)
        .arg("--dir")
        .arg(dir)
        .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .arg("--logfile")
        .arg(dir.join("node.log"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server is on PATH: these tests need a real Redis and never skip")
}

fn wait_until_ok(port: u16, deadline: Instant) {
    loop {
        let info = Command::new("redis-cli")
            .args(["-p", &port.to_string(), "cluster", "info"])
            .output()
            .expect("redis-cli runs");
        if String::from_utf8_lossy(&info.stdout).contains("cluster_state:ok") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the cluster node on {port} is not ok"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test]
async fn rate_limits_hold_across_two_instances_on_a_cluster() {
    let cluster = RedisCluster::start();
    let a = RedisRateLimits::new(cluster.connect().await);
    let b = RedisRateLimits::new(cluster.connect().await);
    let limit = RateLimit::per_minute(3);
    for store in [&a, &b, &a] {
        assert_eq!(store.check_key("p:alice", &limit).await, Ok(()));
    }
    let refused = b.check_key("p:alice", &limit).await;
    assert!(refused.is_err(), "the fourth call in a minute is refused");
    assert_eq!(a.check_key("p:bob", &limit).await, Ok(()), "another key");
}

#[tokio::test]
async fn handles_of_owners_in_different_slots_work_across_instances() {
    let cluster = RedisCluster::start();
    let a: RedisHandles<Vec<String>> = RedisHandles::new(cluster.connect().await, "baskets");
    let b: RedisHandles<Vec<String>> = RedisHandles::new(cluster.connect().await, "baskets");
    for n in 0..12 {
        let owner = format!("owner-{n}");
        let id = format!("bsk_{n}");
        a.insert(&id, &owner, Vec::new(), MINUTE, 10).await.unwrap();
        let item = format!("item-{n}");
        let pushed = b
            .modify(&id, &owner, Box::new(move |items| items.push(item)))
            .await
            .unwrap();
        assert!(pushed, "{owner}'s handle is found on the other instance");
        let mut seen = Vec::new();
        assert!(
            a.modify(&id, &owner, Box::new(|items| seen = items.clone()))
                .await
                .unwrap()
        );
        assert_eq!(seen, vec![format!("item-{n}")]);
        assert!(!b.remove(&id, "someone-else").await.unwrap());
        assert!(b.remove(&id, &owner).await.unwrap());
    }
}

#[tokio::test]
async fn session_records_and_events_reach_the_other_instance() {
    let cluster = RedisCluster::start();
    let a = RedisSessionStore::new(&cluster.connect().await);
    let b = RedisSessionStore::new(&cluster.connect().await);
    let record = SessionRecord {
        principal: "anonymous".into(),
        protocol_version: "2025-11-25".into(),
        client_capabilities: ClientCapabilities::default(),
        client_info: Implementation::new("cluster-test", "1"),
        log_level: LoggingLevel::Info,
        subscriptions: vec!["test://watched".into()],
    };
    for n in 0..6 {
        let id = format!("session{n}");
        a.create(&id, &record, MINUTE).await.unwrap();
        assert_eq!(b.load(&id, MINUTE).await, Ok(Some(record.clone())));
        assert_eq!(b.remove(&id).await, Ok(true));
        assert_eq!(a.load(&id, MINUTE).await, Ok(None));
    }
    let mut heard = b.events();
    let ended = SessionEvent::Ended {
        session: "session0".into(),
    };
    let deadline = Instant::now() + WAIT;
    // Until b's subscription is in place, a's events do not reach it.
    loop {
        a.publish(ended.clone());
        match tokio::time::timeout(Duration::from_millis(200), heard.next()).await {
            Ok(event) => {
                assert_eq!(event, Some(ended));
                break;
            }
            Err(_) => assert!(Instant::now() < deadline, "no event within {WAIT:?}"),
        }
    }
}

#[tokio::test]
async fn list_changes_reach_the_other_instance() {
    let cluster = RedisCluster::start();
    let a = RedisChangeFeed::new(&cluster.connect().await);
    let b = RedisChangeFeed::new(&cluster.connect().await);
    let topics = ChangeTopics {
        tools: true,
        ..ChangeTopics::default()
    };
    let mut on_b = b.subscribe(topics);
    let deadline = Instant::now() + WAIT;
    loop {
        a.publish(Change::ToolsListChanged);
        match tokio::time::timeout(Duration::from_millis(200), on_b.next()).await {
            Ok(change) => {
                assert_eq!(change, Some(Change::ToolsListChanged));
                break;
            }
            Err(_) => assert!(Instant::now() < deadline, "no change within {WAIT:?}"),
        }
    }
}

#[tokio::test]
async fn tasks_of_owners_in_different_slots_work_across_instances() {
    let cluster = RedisCluster::start();
    let a = RedisTaskStore::new(&cluster.connect().await);
    let b = RedisTaskStore::new(&cluster.connect().await);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    for n in 0..12 {
        let owner = format!("owner-{n}");
        let task =
            |id: &str| TaskRecord::new(id, owner.as_str(), "x", now, Some(60_000), 100, 30_000);
        a.create(task(&format!("t{n}")), 1).await.unwrap();
        assert_eq!(
            b.create(task(&format!("u{n}")), 1).await,
            Err(TaskStoreError::Full { limit: 1 })
        );
        let done = b
            .update(
                &format!("t{n}"),
                &owner,
                Box::new(move |r| r.finish(TaskStatus::Completed, None, now)),
            )
            .await
            .unwrap();
        assert!(matches!(done, TaskLookup::Found(r) if r.status == TaskStatus::Completed));
        match a.get(&format!("t{n}"), &owner).await.unwrap() {
            TaskLookup::Found(r) => assert_eq!(r.status, TaskStatus::Completed),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            a.get(&format!("t{n}"), "someone-else").await.unwrap(),
            TaskLookup::Missing
        );
        b.create(task(&format!("u{n}")), 1).await.unwrap();
    }
}
