//! The configuration file: the documented example, defaults, and every
//! refusal with its exact message (file, line, key, what is expected).

use std::path::{Path, PathBuf};
use std::time::Duration;

use toolwire_gateway::Glob;
use toolwire_gateway::config::RedisTarget;
use toolwire_gateway::config::{
    AuditTarget, GatewayConfig, Listen, StartMode, TlsFiles, TokenConfig, UpstreamConfig,
    UpstreamTransport,
};
use toolwire_gateway::pin::PinMode;
use toolwire_server::RateLimit;

#[path = "config/upstreams.rs"]
mod upstreams;

/// The first ```toml block of CONFIG.md.
fn config_md_example() -> String {
    let doc = include_str!("../CONFIG.md");
    let start = doc.find("```toml\n").expect("a ```toml block") + "```toml\n".len();
    let end = start + doc[start..].find("```").expect("the block's end");
    doc[start..end].to_owned()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn globs(items: &[&str]) -> Vec<Glob> {
    items.iter().map(|s| Glob::new(*s)).collect()
}

#[test]
fn the_example_in_config_md_parses_into_the_expected_config() {
    let config = GatewayConfig::parse(&config_md_example(), "CONFIG.md").unwrap();
    let expected = GatewayConfig {
        listen: Listen::Http("127.0.0.1:8940".parse().unwrap()),
        name_separator: "__".into(),
        max_name_len: 64,
        audit: Some(AuditTarget::File(PathBuf::from("audit.jsonl"))),
        lock: Some(PathBuf::from("toolwire-gateway.lock")),
        pin: PinMode::TrustOnFirstUse,
        call_limit: None,
        redis: None,
        tokens: vec![
            TokenConfig {
                env: "GW_ADMIN_TOKEN".into(),
                scopes: strings(&["admin"]),
            },
            TokenConfig {
                env: "GW_READER_TOKEN".into(),
                scopes: vec![],
            },
        ],
        ui: false,
        health: false,
        drain_timeout: Duration::from_secs(30),
        tls: None,
        upstreams: vec![
            UpstreamConfig {
                name: "files".into(),
                prefix: "files".into(),
                transport: UpstreamTransport::Command(strings(&[
                    "npx",
                    "-y",
                    "@modelcontextprotocol/server-filesystem",
                    "/srv/docs",
                ])),
                allow: vec![],
                deny: globs(&["write_*", "move_*"]),
                timeout: None,
                rate_limit: None,
                scopes: vec![],
                start: StartMode::Boot,
            },
            UpstreamConfig {
                name: "crm".into(),
                prefix: "crm".into(),
                transport: UpstreamTransport::Url {
                    url: "https://crm.example.com/mcp".into(),
                    bearer_env: Some("CRM_TOKEN".into()),
                },
                allow: globs(&["search_*", "get_*", "delete_*"]),
                deny: vec![],
                timeout: Some(Duration::from_secs(30)),
                rate_limit: Some(RateLimit::new(30, Duration::from_secs(60))),
                scopes: vec![(Glob::new("delete_*"), "admin".into())],
                start: StartMode::Boot,
            },
        ],
    };
    assert_eq!(config, expected);
}

#[test]
fn every_toml_block_of_config_md_but_fragments_parses() {
    // The other blocks are fragments: each gets the example's other half.
    let doc = include_str!("../CONFIG.md");
    let example = config_md_example();
    let (gateway, upstreams) = example.split_at(example.find("[[upstream]]").unwrap());
    let blocks: Vec<&str> = doc.split("```toml\n").skip(2).collect();
    assert_eq!(blocks.len(), 2, "CONFIG.md's toml blocks changed");
    for block in blocks {
        let block = &block[..block.find("```").unwrap()];
        let text = if block.contains("[gateway]") {
            format!("{block}\n{upstreams}")
        } else {
            format!("{gateway}\n{block}")
        };
        if let Err(e) = GatewayConfig::parse(&text, "CONFIG.md") {
            panic!("{e}\n{text}");
        }
    }
}

#[test]
fn defaults_apply_when_keys_are_absent() {
    let text =
        "[gateway]\nstdio = true\n\n[[upstream]]\nname = \"echo\"\ncommand = [\"echo-server\"]\n";
    let config = GatewayConfig::parse(text, "gw.toml").unwrap();
    assert_eq!(
        config,
        GatewayConfig {
            listen: Listen::Stdio,
            name_separator: "__".into(),
            max_name_len: 64,
            audit: None,
            lock: None,
            pin: PinMode::TrustOnFirstUse,
            call_limit: None,
            redis: None,
            tokens: vec![],
            ui: false,
            health: false,
            drain_timeout: Duration::from_secs(30),
            tls: None,
            upstreams: vec![UpstreamConfig {
                name: "echo".into(),
                prefix: "echo".into(),
                transport: UpstreamTransport::Command(strings(&["echo-server"])),
                allow: vec![],
                deny: vec![],
                timeout: None,
                rate_limit: None,
                scopes: vec![],
                start: StartMode::Boot,
            }],
        }
    );
}

/// `[gateway]` on HTTP, with `extra` from line 3, and one upstream.
fn with_gateway(extra: &str) -> String {
    format!(
        "[gateway]\nhttp = \"127.0.0.1:8940\"\n{extra}\n\n[[upstream]]\nname = \"files\"\ncommand = [\"server\"]\n"
    )
}

/// A valid `[gateway]`, then an upstream `crm` over HTTP (lines 4 to 6)
/// with `extra` from line 7.
fn with_crm(extra: &str) -> String {
    format!(
        "[gateway]\nhttp = \"127.0.0.1:8940\"\n\n[[upstream]]\nname = \"crm\"\nurl = \"https://crm.example.com/mcp\"\n{extra}\n"
    )
}

/// A valid `[gateway]`, then an upstream `files` (lines 4 and 5) with a
/// command from line 6: `extra`.
fn with_files(extra: &str) -> String {
    format!("[gateway]\nhttp = \"127.0.0.1:8940\"\n\n[[upstream]]\nname = \"files\"\n{extra}\n")
}

fn parsed(text: &str) -> GatewayConfig {
    match GatewayConfig::parse(text, "gw.toml") {
        Ok(config) => config,
        Err(e) => panic!("{e}\n{text}"),
    }
}

fn refusal(text: &str) -> String {
    match GatewayConfig::parse(text, "gw.toml") {
        Ok(config) => panic!("accepted: {config:?}\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// Each (file, exact message) pair.
fn assert_refusals(cases: &[(String, &str)]) {
    for (text, expected) in cases {
        assert_eq!(refusal(text), *expected, "for:\n{text}");
    }
}

#[test]
fn the_errors_shown_in_config_md_are_the_ones_given() {
    let doc = include_str!("../CONFIG.md");
    let start = doc.find("```text\n").unwrap() + "```text\n".len();
    let shown = &doc[start..start + doc[start..].find("```").unwrap()];
    let given = [
        refusal(&with_crm("timeout_s = -1")),
        refusal(&with_gateway("listen = \"0.0.0.0:8940\"")),
        refusal(&with_crm("bearer = \"s3cret\"")),
    ];
    assert_eq!(shown, given.join("\n") + "\n");
}

#[test]
fn errors_carry_the_line_and_the_key_as_fields() {
    let e = GatewayConfig::parse(&with_crm("timeout_s = -1"), "gw.toml").unwrap_err();
    assert_eq!(e.source_name, "gw.toml");
    assert_eq!(e.line, Some(7));
    assert_eq!(e.key, "upstream \"crm\".timeout_s");
    assert_eq!(
        e.message,
        "expected a number of seconds from 0.001 to 86400, got -1"
    );
}

#[test]
fn invalid_toml_is_refused_with_its_line_and_column() {
    assert_refusals(&[
        (
            "[gateway]\nhttp = \"127.0.0.1:8940\nstdio = true\n".into(),
            "gw.toml:2: invalid TOML at column 23: invalid basic string, expected `\"`",
        ),
        (
            with_gateway("http = \"127.0.0.1:1\""),
            "gw.toml:3: http: appears twice in the same table; expected it once",
        ),
    ]);
}

#[test]
fn unknown_keys_are_refused_with_the_keys_expected() {
    assert_refusals(&[
        (
            "[gatway]\nhttp = \"127.0.0.1:8940\"\n".into(),
            "gw.toml:1: gatway: unknown key (did you mean gateway?); expected one of gateway, \
             upstream",
        ),
        (
            with_gateway("listen = \"127.0.0.1:1\""),
            "gw.toml:3: gateway.listen: unknown key; expected one of http, stdio, \
             name_separator, max_name_len, audit, lock, pin, call_limit, redis, redis_url_env, \
             tokens, ui, health, drain_timeout_s, tls_cert, tls_key",
        ),
        (
            with_gateway("tokens = [{ env = \"A\", scope = [\"admin\"] }]"),
            "gw.toml:3: gateway.tokens[0].scope: unknown key (did you mean scopes?); expected \
             one of env, scopes",
        ),
        (
            with_crm("timeout = 30"),
            "gw.toml:7: upstream \"crm\".timeout: unknown key (did you mean timeout_s?); \
             expected one of name, prefix, \
             command, url, bearer_env, allow, deny, timeout_s, rate_limit, scopes, start",
        ),
        (
            "[gateway]\nstdio = true\n\n[[upstream]]\nurl = \"https://x.example\"\nnmae = \"crm\"\n"
                .into(),
            "gw.toml:6: upstream[0].nmae: unknown key (did you mean name?); expected one of \
             name, prefix, command, \
             url, bearer_env, allow, deny, timeout_s, rate_limit, scopes, start",
        ),
    ]);
}

#[test]
fn secrets_in_the_file_are_refused_with_where_they_go() {
    let to_tokens = "refused: secrets are never read from the file; put it in an environment \
                     variable and name that variable in [gateway] tokens = [{ env = \"VAR\" }]";
    let to_bearer_env = "refused: secrets are never read from the file; put it in an environment \
                         variable and name that variable in bearer_env = \"VAR\"";
    assert_refusals(&[
        (
            with_gateway("token = \"s3cret\""),
            &format!("gw.toml:3: gateway.token: {to_tokens}"),
        ),
        (
            with_gateway("tokens = [{ env = \"A\", token = \"s3cret\" }]"),
            &format!("gw.toml:3: gateway.tokens[0].token: {to_tokens}"),
        ),
        (
            with_crm("bearer = \"s3cret\""),
            &format!("gw.toml:7: upstream \"crm\".bearer: {to_bearer_env}"),
        ),
        (
            with_crm("bearer_token = \"s3cret\""),
            &format!("gw.toml:7: upstream \"crm\".bearer_token: {to_bearer_env}"),
        ),
        (
            with_crm("").replace("https://crm", "https://me:s3cret@crm"),
            "gw.toml:6: upstream \"crm\".url: refused: a URL with user:password@ puts a secret \
             in the file (not repeated here); put it in an environment variable and name that \
             variable in bearer_env = \"VAR\"",
        ),
        (
            with_gateway("tokens = [\"s3cret\"]"),
            "gw.toml:3: gateway.tokens[0]: expected a table such as { env = \"VAR\", scopes = \
             [\"admin\"] }, got a string (not repeated here); a token is read from an \
             environment variable, never from the file",
        ),
        (
            with_crm("bearer_env = \"sk-live-s3cret\""),
            "gw.toml:7: upstream \"crm\".bearer_env: expected the name of an environment \
             variable (A-Z a-z 0-9 _, not starting with a digit) holding the secret, not the \
             secret itself; got a string that is not such a name (not repeated here)",
        ),
    ]);
}

#[test]
fn the_gateway_listens_on_exactly_one_of_http_and_stdio() {
    assert_refusals(&[
        (
            "upstream = [{ name = \"a\", command = [\"a\"] }]\n".into(),
            "gw.toml: gateway: missing; expected a [gateway] table with http = \"ADDR:PORT\" \
             or stdio = true",
        ),
        (
            "gateway = 1\n".into(),
            "gw.toml:1: gateway: expected a [gateway] table, got 1",
        ),
        (
            "[gateway]\nstdio = false\n\n[[upstream]]\nname = \"a\"\ncommand = [\"a\"]\n".into(),
            "gw.toml:1: gateway: expected http = \"ADDR:PORT\" or stdio = true, got neither",
        ),
        (
            with_gateway("stdio = true"),
            "gw.toml:3: gateway.stdio: expected exactly one of http = \"ADDR:PORT\" or stdio = \
             true, got both",
        ),
        (
            "[gateway]\nstdio = \"yes\"\n".into(),
            "gw.toml:2: gateway.stdio: expected true or false, got \"yes\"",
        ),
        (
            "[gateway]\nhttp = \"localhost:8940\"\n".into(),
            "gw.toml:2: gateway.http: expected an IP address and port such as \
             \"127.0.0.1:8940\" (host names are not resolved), got \"localhost:8940\"",
        ),
        (
            "[gateway]\nhttp = 8940\n".into(),
            "gw.toml:2: gateway.http: expected an IP address and port such as \
             \"127.0.0.1:8940\" (host names are not resolved), got 8940",
        ),
    ]);
    // Beyond loopback without tokens is refused by `toolwire gateway`, not here.
    let open =
        "[gateway]\nhttp = \"0.0.0.0:8940\"\n\n[[upstream]]\nname = \"a\"\ncommand = [\"a\"]\n";
    assert_eq!(
        parsed(open).listen,
        Listen::Http("0.0.0.0:8940".parse().unwrap())
    );
    let v6 = "[gateway]\nhttp = \"[::1]:8940\"\n\n[[upstream]]\nname = \"a\"\ncommand = [\"a\"]\n";
    assert_eq!(
        parsed(v6).listen,
        Listen::Http("[::1]:8940".parse().unwrap())
    );
}

#[test]
fn gateway_values_are_checked() {
    let separator = "expected only the characters A-Z a-z 0-9 _ - . (or \"\" for none)";
    let max_name_len = "expected a whole number from 16 to 128";
    assert_refusals(&[
        (
            with_gateway("name_separator = \"::\""),
            &format!("gw.toml:3: gateway.name_separator: {separator}, got \"::\""),
        ),
        (
            with_gateway("max_name_len = 200"),
            &format!("gw.toml:3: gateway.max_name_len: {max_name_len}, got 200"),
        ),
        (
            with_gateway("max_name_len = 129"),
            &format!("gw.toml:3: gateway.max_name_len: {max_name_len}, got 129"),
        ),
        (
            with_gateway("max_name_len = 15"),
            &format!("gw.toml:3: gateway.max_name_len: {max_name_len}, got 15"),
        ),
        (
            with_gateway("max_name_len = 64.0"),
            &format!("gw.toml:3: gateway.max_name_len: {max_name_len}, got 64.0"),
        ),
        (
            with_gateway("audit = \"\""),
            "gw.toml:3: gateway.audit: expected a file path, or \"-\" for standard error, got \"\"",
        ),
    ]);
    let config = parsed(&with_gateway(
        "name_separator = \"\"\nmax_name_len = 128\naudit = \"-\"",
    ));
    assert_eq!(config.name_separator, "");
    assert_eq!(config.max_name_len, 128);
    assert_eq!(config.audit, Some(AuditTarget::Stderr));
    assert_eq!(parsed(&with_gateway("max_name_len = 16")).max_name_len, 16);
}

#[test]
fn pinning_needs_a_lock_file() {
    assert_refusals(&[
        (
            with_gateway("lock = \"\""),
            "gw.toml:3: gateway.lock: expected a file path, got \"\"",
        ),
        (
            with_gateway("pin = \"strict\""),
            "gw.toml:3: gateway.pin: expected only with lock = \"FILE\": pins are kept in the \
             lock file",
        ),
        (
            with_gateway("lock = \"gw.lock\"\npin = \"always\""),
            "gw.toml:4: gateway.pin: expected \"first-use\" or \"strict\", got \"always\"",
        ),
    ]);
    let config = parsed(&with_gateway("lock = \"gw.lock\"\npin = \"strict\""));
    assert_eq!(config.lock, Some(PathBuf::from("gw.lock")));
    assert_eq!(config.pin, PinMode::Strict);
    let config = parsed(&with_gateway("lock = \"gw.lock\"\npin = \"first-use\""));
    assert_eq!(config.pin, PinMode::TrustOnFirstUse);
    let config = parsed(&with_gateway("lock = \"gw.lock\""));
    assert_eq!(config.pin, PinMode::TrustOnFirstUse);
}

#[test]
fn tokens_are_named_environment_variables() {
    let env = "expected the name of an environment variable (A-Z a-z 0-9 _, not starting with \
               a digit) holding the secret, not the secret itself; got a string that is not \
               such a name (not repeated here)";
    assert_refusals(&[
        (
            with_gateway("tokens = { env = \"A\" }"),
            "gw.toml:3: gateway.tokens: expected an array of tables such as [{ env = \"VAR\", \
             scopes = [\"admin\"] }], got a table",
        ),
        (
            with_gateway("tokens = [{ scopes = [\"admin\"] }]"),
            "gw.toml:3: gateway.tokens[0].env: missing; expected the name of an environment \
             variable (A-Z a-z 0-9 _, not starting with a digit)",
        ),
        (
            with_gateway("tokens = [{ env = \"\" }]"),
            &format!("gw.toml:3: gateway.tokens[0].env: {env}"),
        ),
        (
            with_gateway("tokens = [{ env = \"1TOKEN\" }]"),
            &format!("gw.toml:3: gateway.tokens[0].env: {env}"),
        ),
        (
            with_gateway("tokens = [{ env = 7 }]"),
            "gw.toml:3: gateway.tokens[0].env: expected the name of an environment variable \
             (A-Z a-z 0-9 _, not starting with a digit), got 7",
        ),
        (
            with_gateway("tokens = [{ env = \"A\" },\n  { env = \"A\", scopes = [\"admin\"] }]"),
            "gw.toml:4: gateway.tokens[1].env: expected each variable in one entry only, got \
             \"A\" also in tokens[0]",
        ),
        (
            with_gateway("tokens = [{ env = \"A\", scopes = [\"\"] }]"),
            "gw.toml:3: gateway.tokens[0].scopes[0]: expected a non-empty scope name, got \"\"",
        ),
        (
            with_gateway("tokens = [{ env = \"A\", scopes = \"admin\" }]"),
            "gw.toml:3: gateway.tokens[0].scopes: expected an array of scope names such as \
             [\"admin\"], got \"admin\"",
        ),
    ]);
}

#[test]
fn load_reads_the_file_and_names_it_in_errors() {
    let dir = std::env::temp_dir().join(format!("toolwire-gateway-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("gw.toml");
    std::fs::write(&path, with_crm("timeout_s = 0")).unwrap();
    let e = GatewayConfig::load(&path).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:7: upstream \"crm\".timeout_s: expected a number of seconds from 0.001 to \
             86400, got 0",
            path.display()
        )
    );
    std::fs::write(&path, config_md_example()).unwrap();
    assert_eq!(GatewayConfig::load(&path).unwrap().upstreams.len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();

    let missing = Path::new("/nonexistent/gw.toml");
    let e = GatewayConfig::load(missing).unwrap_err();
    assert_eq!(e.line, None);
    assert_eq!(e.key, "");
    assert!(
        e.to_string()
            .starts_with("/nonexistent/gw.toml: cannot read the file: "),
        "{e}"
    );
}

#[test]
fn redis_is_a_url_a_cluster_or_a_variable_never_a_password() {
    let url = parsed(&with_gateway("redis = \"redis://127.0.0.1:6379\""));
    assert_eq!(
        url.redis,
        Some(RedisTarget::Url("redis://127.0.0.1:6379".into()))
    );
    let cluster = parsed(&with_gateway(
        "redis = [\"redis://10.0.0.1:7000\", \"rediss://10.0.0.2:7000\"]",
    ));
    assert_eq!(
        cluster.redis,
        Some(RedisTarget::Cluster(strings(&[
            "redis://10.0.0.1:7000",
            "rediss://10.0.0.2:7000"
        ])))
    );
    let env = parsed(&with_gateway("redis_url_env = \"GW_REDIS_URL\""));
    assert_eq!(
        env.redis,
        Some(RedisTarget::UrlFromEnv("GW_REDIS_URL".into()))
    );
    assert_refusals(&[
        (
            with_gateway("redis = \"http://127.0.0.1:6379\""),
            "gw.toml:3: gateway.redis: expected a redis:// or rediss:// URL such as \
             \"redis://127.0.0.1:6379\", got \"http://127.0.0.1:6379\"",
        ),
        (
            with_gateway("redis = []"),
            "gw.toml:3: gateway.redis: expected a redis:// or rediss:// URL, or an array of \
             them (Redis Cluster seed nodes), got an empty array",
        ),
        (
            with_gateway("redis = \"redis://:hunter2@127.0.0.1:6379\""),
            "gw.toml:3: gateway.redis: refused: a URL with a password puts a secret in the \
             file (not repeated here); put the URL in an environment variable and name it in \
             redis_url_env = \"VAR\"",
        ),
        (
            with_gateway("redis = \"redis://127.0.0.1:6379\"\nredis_url_env = \"X\""),
            "gw.toml:4: gateway.redis_url_env: expected either redis or redis_url_env, not both",
        ),
    ]);
}

#[test]
fn call_limit_is_n_per_secs() {
    let config = parsed(&with_gateway("call_limit = \"1000/1\""));
    assert_eq!(
        config.call_limit,
        Some(RateLimit::new(1000, Duration::from_secs(1)))
    );
    assert_refusals(&[(
        with_gateway("call_limit = \"fast\""),
        "gw.toml:3: gateway.call_limit: expected \"N/SECS\" with whole numbers N and SECS \
         greater than 0, such as \"30/60\" (30 calls in 60 s), got \"fast\"",
    )]);
}

#[test]
fn the_console_is_off_by_default() {
    assert!(!parsed(&with_gateway("")).ui);
    assert!(!parsed(&with_gateway("ui = false")).ui);
    let on = parsed(&with_gateway(
        "tokens = [{ env = \"GW_READER\" }, { env = \"GW_ADMIN\", scopes = [\"read\", \"admin\"] }]\n\
         ui = true",
    ));
    assert!(on.ui);
}

#[test]
fn the_console_needs_http_and_an_admin_token() {
    let admin = "tokens = [{ env = \"GW_ADMIN\", scopes = [\"admin\"] }]";
    assert_refusals(&[
        (
            format!(
                "[gateway]\nstdio = true\n{admin}\nui = true\n\n\
                 [[upstream]]\nname = \"files\"\ncommand = [\"server\"]\n"
            ),
            "gw.toml:4: gateway.ui: expected only with http = \"ADDR:PORT\": the console \
             needs http",
        ),
        (
            with_gateway("ui = true"),
            "gw.toml:3: gateway.ui: the console admits only tokens with the admin scope: \
             add scopes = [\"admin\"] to one of tokens",
        ),
        (
            with_gateway("tokens = [{ env = \"GW_READER\", scopes = [\"read\"] }]\nui = true"),
            "gw.toml:4: gateway.ui: the console admits only tokens with the admin scope: \
             add scopes = [\"admin\"] to one of tokens",
        ),
        (
            with_gateway("ui = \"yes\""),
            "gw.toml:3: gateway.ui: expected true or false, got \"yes\"",
        ),
    ]);
}

#[test]
fn health_checks_are_off_by_default_and_need_http() {
    assert!(!parsed(&with_gateway("")).health);
    assert!(!parsed(&with_gateway("health = false")).health);
    assert!(parsed(&with_gateway("health = true")).health);
    assert_refusals(&[
        (
            "[gateway]\nstdio = true\nhealth = true\n\n\
             [[upstream]]\nname = \"files\"\ncommand = [\"server\"]\n"
                .into(),
            "gw.toml:3: gateway.health: expected only with http = \"ADDR:PORT\": /healthz and \
             /readyz are served over HTTP",
        ),
        (
            with_gateway("health = 1"),
            "gw.toml:3: gateway.health: expected true or false, got 1",
        ),
    ]);
}

#[test]
fn the_drain_timeout_is_30_seconds_unless_set() {
    assert_eq!(
        parsed(&with_gateway("")).drain_timeout,
        Duration::from_secs(30)
    );
    assert_eq!(
        parsed(&with_gateway("drain_timeout_s = 2.5")).drain_timeout,
        Duration::from_millis(2500)
    );
    assert_eq!(
        parsed(&with_gateway("drain_timeout_s = 0")).drain_timeout,
        Duration::ZERO
    );
    assert_refusals(&[
        (
            with_gateway("drain_timeout_s = -1"),
            "gw.toml:3: gateway.drain_timeout_s: expected a number of seconds from 0 to 86400, \
             got -1",
        ),
        (
            with_gateway("drain_timeout_s = \"30s\""),
            "gw.toml:3: gateway.drain_timeout_s: expected a number of seconds from 0 to 86400, \
             got \"30s\"",
        ),
    ]);
}

#[test]
fn tls_takes_a_certificate_and_its_key_with_http_only() {
    assert_eq!(parsed(&with_gateway("")).tls, None);
    assert_eq!(
        parsed(&with_gateway("tls_cert = \"gw.crt\"\ntls_key = \"gw.key\"")).tls,
        Some(TlsFiles {
            cert: "gw.crt".into(),
            key: "gw.key".into()
        })
    );
    assert_refusals(&[
        (
            with_gateway("tls_cert = \"gw.crt\""),
            "gw.toml:3: gateway.tls_cert: expected with tls_key = \"FILE\" (its private key)",
        ),
        (
            with_gateway("tls_key = \"gw.key\""),
            "gw.toml:3: gateway.tls_key: expected with tls_cert = \"FILE\" (its certificate chain)",
        ),
        (
            with_gateway("tls_cert = \"\"\ntls_key = \"gw.key\""),
            "gw.toml:3: gateway.tls_cert: expected a PEM file's path, got \"\"",
        ),
        (
            "[gateway]\nstdio = true\ntls_cert = \"gw.crt\"\ntls_key = \"gw.key\"\n\n\
             [[upstream]]\nname = \"files\"\ncommand = [\"server\"]\n"
                .into(),
            "gw.toml:3: gateway.tls_cert: expected only with http = \"ADDR:PORT\": TLS is for \
             the HTTP listener",
        ),
    ]);
}
