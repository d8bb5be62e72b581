//! The cache on a legacy session: lists carry no cache hints, so they are
//! fetched every time, except while a subscription would report a change.

mod support;

use std::time::Duration;

use futures::StreamExt;
use toolwire_client::transport::{Era, ProtocolMode};
use toolwire_client::{Freshness, ListenEvent};
use toolwire_protocol::SubscriptionFilter;
use toolwire_server::{RequestContext, ToolBuilder};

use support::{EchoArgs, both_in};

#[tokio::test]
async fn legacy_lists_are_cached_only_while_a_subscription_watches_them() {
    let server = support::demo_builder().list_changed(true).build().unwrap();
    for (transport, client) in both_in(server.clone(), ProtocolMode::Legacy).await {
        let fetched = |f: Freshness| assert_eq!(f, Freshness::Fetched, "{transport}");
        fetched(client.list_tools().await.unwrap().freshness);
        fetched(client.list_tools().await.unwrap().freshness);
        assert_eq!(client.era(), Some(Era::Legacy), "{transport}");

        let filter = SubscriptionFilter {
            tools_list_changed: Some(true),
            ..Default::default()
        };
        let mut events = client.listen(filter).await.unwrap();
        assert_eq!(events.acknowledged().tools_list_changed, Some(true));
        fetched(client.list_tools().await.unwrap().freshness);
        assert_eq!(
            client.list_tools().await.unwrap().freshness,
            Freshness::Cached,
            "{transport}: watched, so kept"
        );

        server
            .add_tool(
                ToolBuilder::new("late")
                    .handler(|a: EchoArgs, _cx: RequestContext| async move { a.text }),
            )
            .unwrap();
        let event = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("a notification")
            .expect("the stream is open")
            .unwrap();
        assert_eq!(event, ListenEvent::ToolsListChanged, "{transport}");
        let after = client.list_tools().await.unwrap();
        fetched(after.freshness);
        assert!(
            after.tools.iter().any(|t| t.name() == "late"),
            "{transport}"
        );

        drop(events);
        tokio::time::sleep(Duration::from_millis(50)).await;
        fetched(client.list_tools().await.unwrap().freshness);
        fetched(client.list_tools().await.unwrap().freshness);
        server.remove_tool("late").unwrap();
        client.close().await;
    }
}
