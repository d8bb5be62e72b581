//! `rediss://`: a TLS-only `redis-server` with the fixture certificate,
//! reached when its CA is trusted and refused when it is not.

mod support;

use support::{RedisServer, fixtures};
use toolwire_redis::{ConnectError, RedisConfig, RedisRateLimits};
use toolwire_server::{RateLimit, RateLimitStore};

#[tokio::test]
async fn rediss_with_a_trusted_ca_carries_the_stores() {
    let redis = RedisServer::start_tls();
    assert!(redis.url().starts_with("rediss://127.0.0.1:"));
    let ca = std::fs::read(fixtures().join("ca.pem")).unwrap();
    let connection = RedisConfig::new(redis.url())
        .root_certificate(ca)
        .connect()
        .await
        .expect("TLS connection");
    connection.ping().await.unwrap();
    let store = RedisRateLimits::new(connection);
    let limit = RateLimit::per_minute(1);
    assert_eq!(store.check("k", &limit).await, Ok(()));
    assert!(store.check("k", &limit).await.is_err());
}

#[tokio::test]
async fn rediss_with_an_unknown_ca_is_refused() {
    let redis = RedisServer::start_tls();
    let error = RedisConfig::new(redis.url()).connect().await.unwrap_err();
    let ConnectError::Connect { address, reason } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(address, &format!("127.0.0.1:{}", redis.port()));
    assert!(reason.to_lowercase().contains("certificate"), "{reason}");
}
