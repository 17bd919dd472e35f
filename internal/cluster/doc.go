// Package cluster stands up replicated database clusters on 127.0.0.1
// for a run and tears them down again: a PostgreSQL primary with a hot
// standby (streaming replication), MariaDB Galera nodes and etcd
// members. Every node is
// a real server process with its own data directory, ports and log; every
// listener is on 127.0.0.1; the traffic between nodes, and the clients'
// traffic to each node, goes through TCP proxies of isoscope's own, so
// that the network between nodes can be cut (a partition) and the
// clients' connections dropped. Processes are started in their own
// process groups and stopped by PID (SIGTERM, then SIGKILL) when the
// cluster is stopped; Stop also removes the data directories.
//
// The faults a nemesis applies are methods of Cluster: Isolate and Heal
// (the proxies), Kill, Start and Restart (the processes), Pause and
// Resume (SIGSTOP, SIGCONT), CutClients.
package cluster
