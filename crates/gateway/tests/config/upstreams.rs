//! The `[[upstream]]` tables: names, prefixes, transports, limits,
//! patterns and `start`, each refusal with its exact message.

use super::*;

#[test]
fn at_least_one_upstream_is_required() {
    assert_refusals(&[
        (
            "[gateway]\nstdio = true\n".into(),
            "gw.toml: upstream: missing; expected at least one [[upstream]] table (a gateway \
             with no server behind it serves nothing)",
        ),
        (
            "upstream = []\n[gateway]\nstdio = true\n".into(),
            "gw.toml:1: upstream: expected at least one [[upstream]] table (a gateway with no \
             server behind it serves nothing), got an empty array",
        ),
        (
            "[gateway]\nstdio = true\n\n[upstream]\nname = \"a\"\ncommand = [\"a\"]\n".into(),
            "gw.toml:4: upstream: expected [[upstream]] tables (an array of tables: double \
             brackets), got a table",
        ),
        (
            "upstream = [\"files\"]\n[gateway]\nstdio = true\n".into(),
            "gw.toml:1: upstream[0]: expected an [[upstream]] table, got \"files\"",
        ),
    ]);
}

#[test]
fn upstream_names_are_present_unique_and_a_valid_default_prefix() {
    let name = "expected a non-empty name without / or control characters";
    assert_refusals(&[
        (
            with_files("").replace("name = \"files\"\n", "command = [\"server\"]"),
            "gw.toml:4: upstream[0].name: missing; expected a name such as \"files\"",
        ),
        (
            with_crm("").replace("\"crm\"", "\"\""),
            &format!("gw.toml:5: upstream[0].name: {name}, got \"\""),
        ),
        (
            with_crm("").replace("\"crm\"", "\"crm/eu\""),
            &format!("gw.toml:5: upstream[0].name: {name}, got \"crm/eu\""),
        ),
        (
            with_crm("").replace("\"crm\"", "\"my crm\""),
            "gw.toml:5: upstream[0].name: expected only the characters A-Z a-z 0-9 _ - . (the \
             name is the prefix while prefix is not set), got \"my crm\"",
        ),
        (
            with_crm("\n[[upstream]]\nname = \"crm\"\ncommand = [\"crm-local\"]"),
            "gw.toml:9: upstream[1].name: expected a name no other upstream has, got \"crm\", \
             already upstream[0]'s",
        ),
    ]);
    let config = parsed(&with_crm("prefix = \"crm_eu\"").replace("\"crm\"", "\"my crm\""));
    assert_eq!(config.upstreams[0].name, "my crm");
    assert_eq!(config.upstreams[0].prefix, "crm_eu");
}

#[test]
fn prefixes_are_made_of_tool_name_characters_or_empty() {
    assert_refusals(&[
        (
            with_crm("prefix = \"c r m\""),
            "gw.toml:7: upstream \"crm\".prefix: expected only the characters A-Z a-z 0-9 _ - . \
             (or \"\" for no prefix), got \"c r m\"",
        ),
        (
            with_crm("prefix = \"crm:\""),
            "gw.toml:7: upstream \"crm\".prefix: expected only the characters A-Z a-z 0-9 _ - . \
             (or \"\" for no prefix), got \"crm:\"",
        ),
    ]);
    assert_eq!(parsed(&with_crm("prefix = \"\"")).upstreams[0].prefix, "");
    assert_eq!(
        parsed(&with_crm("prefix = \"CRM.v2-eu_1\"")).upstreams[0].prefix,
        "CRM.v2-eu_1"
    );
}

#[test]
fn an_upstream_has_exactly_one_of_command_and_url() {
    let program = "expected a program and its arguments such as [\"npx\", \"-y\", \"server\"]";
    let url = "expected an http:// or https:// URL such as \"https://crm.example.com/mcp\"";
    assert_refusals(&[
        (
            with_crm("command = [\"crm-local\"]"),
            "gw.toml:6: upstream \"crm\".url: expected exactly one of command or url, got both",
        ),
        (
            with_files(""),
            "gw.toml:4: upstream \"files\": expected command = [\"PROGRAM\", \"ARG\", ...] or \
             url = \"https://...\", got neither",
        ),
        (
            with_files("command = []"),
            &format!("gw.toml:6: upstream \"files\".command: {program}, got an empty array"),
        ),
        (
            with_files("command = \"npx -y server\""),
            &format!("gw.toml:6: upstream \"files\".command: {program}, got \"npx -y server\""),
        ),
        (
            with_files("command = [\"\", \"-y\"]"),
            "gw.toml:6: upstream \"files\".command[0]: expected a program name, got \"\"",
        ),
        (
            with_files("command = [\"npx\", 1]"),
            "gw.toml:6: upstream \"files\".command[1]: expected a string, got 1",
        ),
        (
            with_files("url = \"ftp://files.example.com\""),
            &format!("gw.toml:6: upstream \"files\".url: {url}, got \"ftp://files.example.com\""),
        ),
        (
            with_files("url = \"https://\""),
            &format!("gw.toml:6: upstream \"files\".url: {url}, got \"https://\""),
        ),
        (
            with_files("command = [\"server\"]\nbearer_env = \"FILES_TOKEN\""),
            "gw.toml:7: upstream \"files\".bearer_env: expected only with url: a command \
             upstream is reached over stdio, where no bearer token is sent",
        ),
    ]);
    let config = parsed(&with_files("url = \"https://files.example.com/@docs/mcp\""));
    assert_eq!(
        config.upstreams[0].transport,
        UpstreamTransport::Url {
            url: "https://files.example.com/@docs/mcp".into(),
            bearer_env: None
        },
        "an @ after the host is no credential"
    );
    let config = parsed(&with_files("url = \"http://127.0.0.1:9000/mcp\""));
    assert_eq!(
        config.upstreams[0].transport,
        UpstreamTransport::Url {
            url: "http://127.0.0.1:9000/mcp".into(),
            bearer_env: None
        }
    );
}

#[test]
fn timeouts_are_positive_finite_seconds() {
    let expected = "expected a number of seconds from 0.001 to 86400";
    let at = "gw.toml:7: upstream \"crm\".timeout_s";
    let cases: Vec<(String, String)> = ["-1", "0", "0.0001", "nan", "inf", "86401", "\"30\""]
        .iter()
        .map(|v| {
            let text = with_crm(&format!("timeout_s = {v}"));
            (text, format!("{at}: {expected}, got {v}"))
        })
        .collect();
    for (text, message) in &cases {
        assert_eq!(refusal(text), *message);
    }
    let timeout = |v: &str| parsed(&with_crm(&format!("timeout_s = {v}"))).upstreams[0].timeout;
    assert_eq!(timeout("2.5"), Some(Duration::from_millis(2500)));
    assert_eq!(timeout("0.001"), Some(Duration::from_millis(1)));
    assert_eq!(timeout("86400"), Some(Duration::from_secs(86_400)));
}

#[test]
fn rate_limits_are_n_per_secs() {
    let expected = "expected \"N/SECS\" with whole numbers N and SECS greater than 0, such as \
                    \"30/60\" (30 calls in 60 s)";
    let at = "gw.toml:7: upstream \"crm\".rate_limit";
    for v in [
        "\"30/0\"",
        "\"0/60\"",
        "\"30\"",
        "\"30/1.5\"",
        "\"-1/60\"",
        "30",
    ] {
        let text = with_crm(&format!("rate_limit = {v}"));
        assert_eq!(refusal(&text), format!("{at}: {expected}, got {v}"));
    }
    let config = parsed(&with_crm("rate_limit = \"5 / 1\""));
    assert_eq!(
        config.upstreams[0].rate_limit,
        Some(RateLimit::new(5, Duration::from_secs(1)))
    );
}

#[test]
fn patterns_and_scopes_are_not_empty() {
    assert_refusals(&[
        (
            with_crm("allow = [\"search_*\", \"\"]"),
            "gw.toml:7: upstream \"crm\".allow[1]: expected a non-empty pattern such as \
             \"search_*\", got \"\"",
        ),
        (
            with_crm("deny = \"write_*\""),
            "gw.toml:7: upstream \"crm\".deny: expected an array of tool-name patterns such as \
             [\"search_*\", \"get_*\"], got \"write_*\"",
        ),
        (
            with_crm("scopes = { \"\" = \"admin\" }"),
            "gw.toml:7: upstream \"crm\".scopes.\"\": expected a non-empty pattern such as \
             \"delete_*\"",
        ),
        (
            with_crm("scopes = { \"delete_*\" = \"\" }"),
            "gw.toml:7: upstream \"crm\".scopes.\"delete_*\": expected a non-empty scope name \
             such as \"admin\", got \"\"",
        ),
        (
            with_crm("scopes = [\"admin\"]"),
            "gw.toml:7: upstream \"crm\".scopes: expected a table of pattern = scope such as { \
             \"delete_*\" = \"admin\" }, got an array",
        ),
    ]);
    let config = parsed(&with_crm(
        "[upstream.scopes]\nwrite_file = \"writer\"\n\"delete_*\" = \"admin\"",
    ));
    assert_eq!(
        config.upstreams[0].scopes,
        vec![
            (Glob::new("write_file"), "writer".into()),
            (Glob::new("delete_*"), "admin".into()),
        ],
        "in the file's order"
    );
}

#[test]
fn start_is_boot_or_lazy_and_lazy_needs_a_lock_file() {
    assert_eq!(parsed(&with_crm("")).upstreams[0].start, StartMode::Boot);
    assert_eq!(
        parsed(&with_crm("start = \"boot\"")).upstreams[0].start,
        StartMode::Boot
    );
    let lazy = with_gateway("lock = \"gw.lock\"").replace(
        "command = [\"server\"]",
        "command = [\"server\"]\nstart = \"lazy\"",
    );
    assert_eq!(parsed(&lazy).upstreams[0].start, StartMode::Lazy);
    assert_refusals(&[
        (
            with_crm("start = \"later\""),
            "gw.toml:7: upstream \"crm\".start: expected \"boot\" or \"lazy\", got \"later\"",
        ),
        (
            with_crm("start = true"),
            "gw.toml:7: upstream \"crm\".start: expected \"boot\" or \"lazy\", got true",
        ),
        (
            with_crm("start = \"lazy\""),
            "gw.toml:7: upstream \"crm\".start: expected only with lock = \"FILE\" in \
             [gateway]: until a lazy upstream is first used, the gateway serves the tools \
             pinned for it in the lock file",
        ),
    ]);
}
