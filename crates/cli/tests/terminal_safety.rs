//! Terminal safety: everything a hostile server sends (server info, names,
//! titles, descriptions, argument names, results, log lines, elicitation
//! forms, error messages) reaches the terminal with its control sequences
//! shown as visible escapes, and `--json` stays exact JSON.
//! The server is `support/hostile.py`, spoken to in the legacy era.

mod support;

use serde_json::{Value, json};
use support::{Ran, run_with_env};

/// What `hostile.py` puts in every text: CSI colour, erase and cursor up,
/// OSC 0 and 2 window titles, an OSC 52 clipboard write, 8-bit CSI, OSC and
/// ST, a lone carriage return, DEL, a bidi override and isolate, and two
/// tag characters.
const EVIL: &str = "\x1b[31mred\x1b[0m\x1b[2K\x1b[1A\x1b]0;title\x07\x1b]2;t\x1b\\\
    \x1b]52;c;cm0gLXJmIH4=\x07\u{9b}31m\u{9d}0;x\u{9c}safe\rEVIL\x7f\
    abc\u{202e}fed\u{2066}x\u{2069}\u{e0068}\u{e0069}";

/// How toolwire shows [`EVIL`].
const SHOWN: &str = r"\u{1b}[31mred\u{1b}[0m\u{1b}[2K\u{1b}[1A\u{1b}]0;title\u{7}\u{1b}]2;t\u{1b}\\u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{9b}31m\u{9d}0;x\u{9c}safe\u{d}EVIL\u{7f}abc\u{202e}fed\u{2066}x\u{2069}\u{e0068}\u{e0069}";

fn script() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/hostile.py").to_owned()
}

/// How toolwire names the server: its command line, in backticks.
fn server() -> String {
    format!("`python3 {}`", script())
}

/// `toolwire args... --protocol legacy -- python3 hostile.py`, answers on stdin.
fn run(args: &[&str], input: &str) -> Ran {
    let script = script();
    let mut all = args.to_vec();
    all.extend(["--protocol", "legacy", "--", "python3", &script]);
    let config = support::fresh_dir("terminal-safety");
    run_with_env(
        &all,
        input,
        &[("XDG_CONFIG_HOME", config.to_str().unwrap())],
    )
}

/// No character a terminal would act on: only `\n` and `\t` among the
/// controls, no ESC, C1, DEL, bidi control or tag character.
fn assert_inert(what: &str, text: &str) {
    for (at, c) in text.char_indices() {
        let bad = matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
            || matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
            || matches!(c, '\u{e0000}'..='\u{e007f}');
        assert!(
            !bad,
            "{what} holds {:?} at byte {at}:\n{text}",
            c.escape_unicode().to_string()
        );
    }
    assert!(!text.as_bytes().contains(&0x1b), "{what} holds ESC");
}

fn assert_both_inert(ran: &Ran) {
    assert_inert("stdout", &ran.stdout);
    assert_inert("stderr", &ran.stderr);
}

#[test]
fn discover_shows_server_info_and_instructions_escaped() {
    let ran = run(&["discover"], "");
    ran.expect_code(0);
    assert_both_inert(&ran);
    assert_eq!(
        ran.stdout,
        format!(
            "Server: hostile\\u{{1b}}]0;owned\\u{{7}} 1\\u{{1b}}[2J (T\\u{{202e}}) at {}\n\
             Protocol: 2025-06-18 (legacy era: initialize and a session)\n\
             Protocol versions: 2025-06-18\n\
             Capabilities: tools, resources, prompts, logging\n\
             Instructions:\n  Read {SHOWN}\n",
            server()
        )
    );
}

#[test]
fn list_shows_names_titles_descriptions_and_arguments_escaped() {
    let ran = run(&["list", "--all"], "");
    ran.expect_code(0);
    assert_both_inert(&ran);
    let server = server();
    assert_eq!(
        ran.stdout,
        format!(
            "4 tools on {server}:\n  \
             peek (Peek {SHOWN}) — Looks {SHOWN}\n      \
             arguments: arg\\u{{1b}}[8m (string)\n  \
             fail — Fails\n  \
             boom — Errors\n  \
             ask — Asks\n\
             1 resource on {server}:\n  \
             file:///r\\u{{1b}}[1A  r\\u{{9b}} — resource {SHOWN}\n\
             1 prompt on {server}:\n  \
             p\\u{{1b}}[1A — prompt {SHOWN}\n      \
             arguments: a\\u{{202e}} (required)\n"
        )
    );
}

#[test]
fn the_confirmation_shows_the_title_and_description_escaped() {
    let ran = run(&["call", "peek"], "n\n");
    ran.expect_code(3);
    assert_both_inert(&ran);
    assert_eq!(
        ran.stderr,
        format!(
            "Tool peek on {}\n  \
             title: Peek {SHOWN}\n  \
             Looks {SHOWN}\n  \
             second line\n  \
             no annotations: nothing is claimed about what it changes\n\
             Arguments (exactly as sent):\n  {{}}\n\
             Call peek? [y/N] n\n\
             toolwire: not called: you declined to call `peek`\n",
            server()
        )
    );
}

#[test]
fn results_and_log_lines_are_escaped() {
    let ran = run(&["call", "--yes", "peek"], "");
    ran.expect_code(0);
    assert_both_inert(&ran);
    assert_eq!(ran.stdout, format!("result {SHOWN}\n"));
    assert_eq!(
        ran.stderr,
        format!(
            "calling `peek` on {} with {{}}\n\
             [server warning] lg\\u{{1b}}[5m: log {SHOWN}\n",
            server()
        )
    );
}

#[test]
fn a_tool_error_is_escaped() {
    let ran = run(&["call", "--yes", "fail"], "");
    ran.expect_code(1);
    assert_both_inert(&ran);
    assert_eq!(ran.stdout, "");
    assert!(
        ran.stderr.ends_with(&format!(
            "toolwire: tool `fail` reported an error: failed {SHOWN}\n"
        )),
        "{}",
        ran.stderr
    );
}

/// A JSON-RPC error message is one line: a line break in it cannot forge
/// a `hint:` line of toolwire's own.
#[test]
fn a_protocol_error_message_is_escaped() {
    let ran = run(&["call", "--yes", "boom"], "");
    ran.expect_code(2);
    assert_both_inert(&ran);
    assert!(
        ran.stderr.ends_with(&format!(
            "toolwire: {} answered error -32000: boom {SHOWN}\\u{{a}}hint: a forged line\n",
            server()
        )),
        "{}",
        ran.stderr
    );
}

#[test]
fn prompts_and_resources_are_escaped() {
    let ran = run(&["prompt", "p"], "");
    ran.expect_code(0);
    assert_both_inert(&ran);
    assert_eq!(ran.stdout, format!("# got {SHOWN}\n[user] msg {SHOWN}\n"));

    let ran = run(&["read", "file:///x"], "");
    ran.expect_code(0);
    assert_both_inert(&ran);
    assert_eq!(ran.stdout, format!("read {SHOWN}\n"));
}

#[test]
fn an_elicitation_form_is_escaped() {
    let ran = run(&["call", "--yes", "ask"], "1\n");
    ran.expect_code(0);
    assert_both_inert(&ran);
    assert_eq!(
        ran.stdout,
        "answered {\"action\": \"accept\", \"content\": {\"colour\": \"r\"}}\n"
    );
    let expected = format!(
        "Form {SHOWN}\n\
         Answer each field (an empty line keeps the default or skips an optional field; \
         type !decline to decline or !cancel to cancel).\n  \
         Pick \\u{{1b}}]52;c;QQ==\\u{{7}}\n    \
         1) Red\\u{{202e}} (r)\n    \
         2) Green\\u{{9b}} (g)\n  \
         Colour\\u{{1b}}[8m [colour] (a number or a value from the list, required): 1\n"
    );
    assert!(ran.stderr.ends_with(&expected), "{}", ran.stderr);
}

/// `--json` is the exact JSON value the server sent, with every character
/// that could drive a terminal written as a JSON escape: ESC as `\u001b`
/// (serde_json does that already), DEL, C1 controls, bidi controls and tag
/// characters too (serde_json would write those raw).
#[test]
fn json_output_is_exact_json() {
    let ran = run(&["call", "--yes", "--json", "peek"], "");
    ran.expect_code(0);
    let expected = json!({"content": [{"type": "text", "text": format!("result {EVIL}")}]});
    assert_eq!(ran.json(), expected);
    assert_inert("stdout", &ran.stdout);
    assert!(
        ran.stdout
            .contains(r"\u001b]52;c;cm0gLXJmIH4=\u0007\u009b31m\u009d0;x\u009csafe")
    );
    assert!(
        ran.stdout
            .contains(r"EVIL\u007fabc\u202efed\u2066x\u2069\udb40\udc68\udb40\udc69")
    );

    let ran = run(&["list", "--json"], "");
    ran.expect_code(0);
    let listed = ran.json();
    let peek = &listed["tools"][0];
    assert_eq!(peek["title"], Value::String(format!("Peek {EVIL}")));
    assert_eq!(
        peek["description"],
        Value::String(format!("Looks {EVIL}\nsecond line"))
    );
    assert_inert("stdout", &ran.stdout);
}

/// Log lines (here the server's stderr, which the client logs at debug
/// level) go through the same escaping, without colours.
#[test]
fn log_lines_are_escaped() {
    let script = script();
    let config = support::fresh_dir("terminal-safety-logs");
    let ran = run_with_env(
        &["list", "--protocol", "legacy", "--", "python3", &script],
        "",
        &[
            ("XDG_CONFIG_HOME", config.to_str().unwrap()),
            ("RUST_LOG", "toolwire::stderr=debug"),
        ],
    );
    ran.expect_code(0);
    assert_both_inert(&ran);
    // tracing writes its own escapes (`\x1b`, `\u{9b}`) before ours see
    // the line; either way nothing raw is left.
    assert!(
        ran.stderr.contains(
            r"DEBUG toolwire::stderr: stderr \x1b[31mred\x1b[0m\x1b[2K\x1b[1A\x1b]0;title\x07"
        ),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr
            .contains(r"\u{202e}fed\u{2066}x\u{2069}\u{e0068}\u{e0069}")
    );
}
