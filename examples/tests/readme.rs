//! The README's first server is `examples/src/bin/hello.rs`, word for word,
//! so it compiles, and it serves over stdio as shown; `examples/README.md`
//! shows the basket server and its rmcp and FastMCP versions as they are.

mod support;

use serde_json::json;
use support::Peer;

#[test]
fn the_readme_server_is_the_hello_example() {
    let readme = include_str!("../../README.md");
    let section = readme
        .split("## A server in a few lines\n")
        .nth(1)
        .expect("the README has the section");
    let block = section
        .split("```rust\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the section starts with a rust block");
    assert_eq!(block, include_str!("../src/bin/hello.rs"));
}

/// The code block that follows `heading` in `markdown`, fenced by four
/// backquotes (the files hold three-backquote blocks in their docs).
fn block_after<'a>(markdown: &'a str, heading: &str) -> &'a str {
    let section = markdown
        .split(heading)
        .nth(1)
        .expect("the heading is there");
    let code = section.split("````").nth(1).expect("a code block follows");
    code.split_once('\n').expect("a fence line").1
}

#[test]
fn the_examples_readme_shows_the_files_as_they_are() {
    let readme = include_str!("../README.md");
    let shown = [
        ("### toolwire", include_str!("../src/bin/basket.rs")),
        ("### rmcp", include_str!("../peers/rmcp-basket/src/main.rs")),
        ("### FastMCP", include_str!("../peers/fastmcp_basket.py")),
    ];
    for (heading, file) in shown {
        assert_eq!(block_after(readme, heading), file, "{heading}");
    }
}

#[tokio::test]
async fn hello_greets() {
    let mut peer = Peer::spawn(env!("CARGO_BIN_EXE_hello"));
    let params = json!({"name": "greet", "arguments": {"name": "Ada"}});
    peer.request(1, "tools/call", params).await;
    let reply = peer.recv().await;
    assert_eq!(reply["result"]["content"][0]["text"], "Hello, Ada!");
}
