//! The gateway's web console (`[gateway] ui = true`, pages under /ui) in a
//! real browser: Debian's chromium, driven by playwright-core from the node
//! script `tests/console/console.test.mjs`. Both are installed by
//! `bash .ci/install-services` (which runs `.ci/install-browser`); when they
//! are missing this test fails, it never skips.
//!
//! The gateway fronts two upstreams: the CLI's demo (`toolwire serve
//! --stdio`) and an in-process HTTP server "notes" whose `redescribe` tool
//! changes the description of its `search` tool, so that the gateway
//! withholds `search` as drifted until it is approved in the console.
//! Screenshots of every step land in `$CARGO_TARGET_TMPDIR/console-screenshots`.

mod support;

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use support::{Served, bin, fresh_dir};
use toolwire_server::http::{HttpConfig, HttpServer};
use toolwire_server::{RequestContext, Server, ToolBuilder};

/// The browser the script launches (Debian's package; never a download).
const CHROMIUM: &str = "/usr/bin/chromium";
/// Longest the node script may run.
const SCRIPT_LIMIT: Duration = Duration::from_secs(120);
const INSTALL_HINT: &str = "run `bash .ci/install-services` (it installs chromium and \
     the pinned playwright-core through .ci/install-browser)";

/// `notes`' search tool before it drifts.
const SEARCH_DESCRIPTION: &str = "Finds notes by words.";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Search {
    /// Words to look for.
    query: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Redescribe {
    /// The new description of `search`.
    description: String,
}

fn search_tool(description: &str) -> ToolBuilder {
    ToolBuilder::new("search")
        .description(description)
        .handler(|args: Search, _cx: RequestContext| async move {
            format!("no notes match {:?}", args.query)
        })
}

/// The "notes" server: `search`, and `redescribe`, which replaces `search`
/// by the same tool with another description (listeners are told).
fn notes_server() -> Server {
    let this: Arc<OnceLock<Server>> = Arc::new(OnceLock::new());
    let handle = Arc::clone(&this);
    let server = Server::builder("notes", "1.0.0")
        .tool(search_tool(SEARCH_DESCRIPTION))
        .tool(
            ToolBuilder::new("redescribe")
                .description("Changes the description of search.")
                .handler(move |args: Redescribe, _cx: RequestContext| {
                    let handle = Arc::clone(&handle);
                    async move {
                        let server = handle.get().expect("the notes server is built");
                        server
                            .replace_tool(search_tool(&args.description))
                            .expect("search is registered");
                        "search redescribed".to_owned()
                    }
                }),
        )
        .build()
        .expect("the notes server builds");
    assert!(this.set(server.clone()).is_ok(), "set once");
    server
}

/// A token nobody can guess from the test's source.
fn random_token(label: &str) -> String {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    );
    hasher.write_u32(std::process::id());
    let a = hasher.finish();
    hasher.write_u64(a);
    format!("{label}-{a:016x}{:016x}", hasher.finish())
}

/// The node script's folder, with its package.json and node_modules.
fn script_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/console")
}

/// Fails (never skips) when the browser or playwright-core is missing.
fn check_installed() {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: {INSTALL_HINT}"
    );
    let playwright = script_dir().join("node_modules/playwright-core/package.json");
    assert!(
        playwright.exists(),
        "{} is missing: {INSTALL_HINT}",
        playwright.display()
    );
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.as_ref().is_ok_and(|out| out.status.success()),
        "node does not run ({node:?}): install Node.js 20 or later, then {INSTALL_HINT}"
    );
}

/// A new empty folder for the screenshots, in the target directory.
fn screenshot_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-screenshots");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the screenshot folder");
    dir
}

/// How the node script ended.
struct ScriptRun {
    code: Option<i32>,
    timed_out: bool,
    stdout: String,
    stderr: String,
}

/// Runs `node console.test.mjs` with `env`; killed after [`SCRIPT_LIMIT`].
fn run_script(env: &[(&str, &str)]) -> ScriptRun {
    let mut child = Command::new("node")
        .arg(script_dir().join("console.test.mjs"))
        .current_dir(script_dir())
        .envs(env.iter().copied())
        .env("XDG_CONFIG_HOME", fresh_dir("console-config"))
        .env_remove("TOOLWIRE_BEARER")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn node");
    let stdout = drain(child.stdout.take().expect("piped stdout"));
    let stderr = drain(child.stderr.take().expect("piped stderr"));
    let deadline = Instant::now() + SCRIPT_LIMIT;
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if Instant::now() > deadline {
            timed_out = true;
            let _ = child.kill();
            break child.wait().expect("wait");
        }
        thread::sleep(Duration::from_millis(50));
    };
    ScriptRun {
        code: status.code(),
        timed_out,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

fn drain(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

#[test]
fn the_console_works_in_a_real_browser() {
    check_installed();

    // "notes": an in-process HTTP server on a free loopback port.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let notes_url = runtime.block_on(async {
        let http = HttpServer::bind(
            "127.0.0.1:0".parse().unwrap(),
            notes_server(),
            HttpConfig::new(),
        )
        .await
        .expect("bind the notes server");
        let url = format!("http://{}/mcp", http.local_addr());
        tokio::spawn(http.run());
        url
    });

    let dir = fresh_dir("console-browser");
    let config = dir.join("gateway.toml");
    let text = format!(
        "[gateway]\n\
         http = \"127.0.0.1:0\"\n\
         ui = true\n\
         lock = {lock:?}\n\
         audit = {audit:?}\n\
         tokens = [{{ env = \"GW_ADMIN_TOKEN\", scopes = [\"admin\"] }}, {{ env = \"GW_READER_TOKEN\" }}]\n\n\
         [[upstream]]\nname = \"demo\"\ncommand = [{bin:?}, \"serve\", \"--stdio\"]\n\n\
         [[upstream]]\nname = \"notes\"\nurl = {notes_url:?}\nrate_limit = \"5/60\"\n",
        lock = dir.join("gw.lock").display().to_string(),
        audit = dir.join("audit.jsonl").display().to_string(),
        bin = bin(),
    );
    std::fs::write(&config, text).unwrap();

    let admin = random_token("admin");
    let reader = random_token("reader");
    // Killed when dropped, a failed assertion included.
    let gateway = Served::command_with_env(
        &["gateway", "--config", config.to_str().unwrap()],
        &[("GW_ADMIN_TOKEN", &admin), ("GW_READER_TOKEN", &reader)],
    );
    // `Served` takes the first line with a URL, which with `ui = true` is the
    // console's (`toolwire: gateway console at http://ADDR/ui ...`): the
    // endpoint's own line says where the MCP endpoint is.
    let serving = gateway.wait_for_log("toolwire: gateway serving ");
    let base = serving
        .split(" at ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|url| url.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("no http://ADDR/mcp in {serving:?}"))
        .to_owned();
    assert!(base.starts_with("http://"), "{serving:?}");

    let screenshots = screenshot_dir();
    println!("console screenshots: {}", screenshots.display());
    let ran = run_script(&[
        ("GW_URL", &base),
        ("ADMIN_TOKEN", &admin),
        ("READER_TOKEN", &reader),
        ("TOOLWIRE_BIN", bin()),
        ("SCREENSHOT_DIR", screenshots.to_str().unwrap()),
        ("CHROMIUM", CHROMIUM),
    ]);
    println!("--- node stdout\n{}", ran.stdout);
    println!("--- node stderr\n{}", ran.stderr);
    println!("console screenshots: {}", screenshots.display());
    let log = gateway.log().join("\n");
    drop(gateway);
    drop(runtime);
    assert!(
        !ran.timed_out,
        "the browser test did not finish within {SCRIPT_LIMIT:?}; gateway stderr:\n{log}"
    );
    assert_eq!(
        ran.code,
        Some(0),
        "the browser test failed (its output is above; screenshots in {}); gateway stderr:\n{log}",
        screenshots.display()
    );
}
