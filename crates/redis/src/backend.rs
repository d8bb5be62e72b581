//! The connection the stores send their commands on: one Redis server
//! through a [`ConnectionManager`], or a Redis Cluster through a
//! [`ClusterConnection`] (which routes each command to the node holding its
//! key's slot and follows the cluster as it changes).

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

/// One server or a cluster; cheap to clone (clones share the connection).
#[derive(Clone)]
pub(crate) enum Backend {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Backend {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Backend::Single(manager) => manager.req_packed_command(cmd),
            Backend::Cluster(cluster) => cluster.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Backend::Single(manager) => manager.req_packed_commands(cmd, offset, count),
            Backend::Cluster(cluster) => cluster.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Backend::Single(manager) => manager.get_db(),
            Backend::Cluster(cluster) => cluster.get_db(),
        }
    }
}
