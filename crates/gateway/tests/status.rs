//! What `Gateway::upstreams` says of real upstreams: one on loopback HTTP
//! that answers (up, with the era and version it speaks), one whose bearer
//! token variable is not set (dead), and one that does not answer.

use std::time::Duration;

use toolwire_client::transport::Era;
use toolwire_gateway::config::GatewayConfig;
use toolwire_gateway::{Gateway, UpstreamKind, UpstreamState, UpstreamStatus};
use toolwire_server::http::{HttpConfig, HttpServer};
use toolwire_server::protocol::LATEST_PROTOCOL_VERSION;
use toolwire_server::{NoArgs, RequestContext, Server, ToolBuilder};

/// A server with the tools `names` on loopback; its URL.
async fn upstream(names: &[&str]) -> String {
    let mut builder = Server::builder("upstream", "1");
    for name in names {
        builder = builder.tool(
            ToolBuilder::new(*name).handler(|_: NoArgs, _cx: RequestContext| async { "done" }),
        );
    }
    let http = HttpServer::bind(
        "127.0.0.1:0".parse().unwrap(),
        builder.build().unwrap(),
        HttpConfig::new(),
    )
    .await
    .unwrap();
    let url = format!("http://{}/mcp", http.local_addr());
    tokio::spawn(http.run());
    url
}

/// A loopback URL nothing listens on.
async fn nobody() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    url
}

#[tokio::test]
async fn an_answering_upstream_is_up_and_one_without_its_token_is_dead() {
    let up = upstream(&["ping", "pong"]).await;
    let down = nobody().await;
    let text = format!(
        "[gateway]\nhttp = \"127.0.0.1:0\"\n\n\
         [[upstream]]\nname = \"live\"\nurl = \"{up}?session=s3cret#top\"\n\n\
         [[upstream]]\nname = \"locked\"\nurl = \"https://crm.example.com/mcp\"\n\
         bearer_env = \"TOOLWIRE_GATEWAY_STATUS_TEST_UNSET\"\n\n\
         [[upstream]]\nname = \"gone\"\nurl = {down:?}\ntimeout_s = 5\n\n\
         [[upstream]]\nname = \"local\"\ncommand = [\"/nonexistent/server\", \"--stdio\"]\n\
         deny = [\"*\"]\n"
    );
    let config = GatewayConfig::parse(&text, "gw.toml").unwrap();
    let gateway = Gateway::start(&config).await.unwrap();
    let mut statuses = gateway.upstreams();
    assert_eq!(statuses.len(), 4);
    let (gone, local) = (statuses.remove(2), statuses.remove(2));
    assert_eq!(
        statuses,
        [
            UpstreamStatus {
                name: "live".into(),
                transport: UpstreamKind::Http { url: up.clone() },
                era: Some(Era::Modern),
                protocol_version: Some(LATEST_PROTOCOL_VERSION.into()),
                state: UpstreamState::Up,
                last_error: None,
                tools: 2,
            },
            UpstreamStatus {
                name: "locked".into(),
                transport: UpstreamKind::Http {
                    url: "https://crm.example.com/mcp".into()
                },
                era: None,
                protocol_version: None,
                state: UpstreamState::Dead,
                last_error: Some(
                    "the environment variable TOOLWIRE_GATEWAY_STATUS_TEST_UNSET (bearer_env) \
                     is not set"
                        .into()
                ),
                tools: 0,
            },
        ]
    );
    // Not followed (no watch_upstreams): no retry is scheduled.
    assert_eq!(gone.name, "gone");
    assert_eq!(gone.transport, UpstreamKind::Http { url: down });
    assert_eq!(
        gone.state,
        UpstreamState::BackingOff {
            retry_in: Duration::ZERO
        }
    );
    assert_eq!(gone.tools, 0);
    let reason = gone.last_error.unwrap();
    assert!(reason.starts_with("cannot list its tools: "), "{reason}");
    assert_eq!(local.name, "local");
    assert_eq!(
        local.transport,
        UpstreamKind::Stdio {
            command: vec!["/nonexistent/server".into(), "--stdio".into()]
        }
    );
    assert_eq!(local.state.label(), "backing off");
}

#[tokio::test]
async fn a_followed_upstream_that_fails_backs_off_for_the_watchers_wait() {
    let down = nobody().await;
    let text = format!(
        "[gateway]\nhttp = \"127.0.0.1:0\"\n\n[[upstream]]\nname = \"gone\"\nurl = {down:?}\n"
    );
    let config = GatewayConfig::parse(&text, "gw.toml").unwrap();
    let gateway = Gateway::start(&config).await.unwrap();
    gateway.watch_upstreams();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let state = gateway.upstreams()[0].state;
        if let UpstreamState::BackingOff { retry_in } = state {
            if retry_in > Duration::ZERO {
                // The watcher's first wait is 1 s, the next 2 s, ...
                assert!(retry_in <= Duration::from_secs(30), "{retry_in:?}");
                break;
            }
        }
        assert!(tokio::time::Instant::now() < deadline, "{state:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
