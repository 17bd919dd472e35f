package cli

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/isoscope/isoscope/internal/cluster"
	"github.com/isoscope/isoscope/internal/nemesis"
)

// clusterFlags are run's flags for a cluster isoscope stands up and the
// faults it injects.
type clusterFlags struct {
	// Cluster is KIND[:NODES] (cluster.ParseSpec); ClusterDir where its
	// nodes live (default: a fresh temporary directory).
	Cluster, ClusterDir string
	// Faults lists the nemesis's faults; FaultInterval is the calm before
	// each and how long each lasts.
	Faults        string
	FaultInterval time.Duration
	// Hop moves each session to the next node every Hop transactions.
	Hop int
	// clocks says the nemesis skews clocks: the cluster's nodes start
	// under libfaketime.
	clocks bool
}

func (f *clusterFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.Cluster, "cluster", "", "stand up a replicated cluster on 127.0.0.1 for the run and tear it down after: galera[:N] (MariaDB Galera, N multi-master nodes, default 3), postgres-standby[:N] (a PostgreSQL 15 primary and N-1 hot standbys, default 2), etcd[:N] (N etcd members, default 3), dqlite[:N] (N dqlite nodes, three of them voters, default 3) or nats-kv[:N] (N nats-server processes as one JetStream cluster serving a KV bucket of min(N, 3) replicas, default 3; one key per transaction: the lwt workload, or list-append with --ops 1), nats-kv-leader[:N] (the same, every read answered by the bucket's stream leader rather than by any replica), zookeeper[:N] (N ZooKeeper servers as one ensemble, default 3; reads answered by the session's server, sequentially consistent), zookeeper-sync[:N] (the same, each read after a sync), redis[:N] (a Redis primary and N-1 replicas, default 3, with three sentinels that fail it over; WATCH and MULTI/EXEC transactions: mt, general, lwt, list-append, blindw), redis-wait[:N] (the same, every write followed by WAIT for N/2 replicas), redis-replica-reads[:N] (the same, transactions that only read run on a replica), pg-auto-failover[:N] (a pg_auto_failover monitor and N PostgreSQL 15 nodes, one primary and N-1 secondaries in synchronous replication, default 3; sessions follow the primary), pg-auto-failover-async[:N] (the same with asynchronous replication); opt-in, built by make tidb and make dolt (found in $ISOSCOPE_BIN, ./tmp/bin or PATH): tidb (one tidb-server on unistore, pessimistic transactions), tidb-optimistic, dolt (one dolt sql-server); sessions spread across the nodes, transactions that only read go to a standby, and dqlite's go to its leader")
	fs.StringVar(&f.ClusterDir, "cluster-dir", "", "where --cluster's nodes keep their data and logs (default: a fresh temporary directory); removed when the run ends")
	fs.StringVar(&f.Faults, "faults", "", "with --cluster: inject faults while the workload runs, on a schedule drawn from --seed: partition (cut a node off from the others), kill (SIGKILL, started again after the interval), pause (SIGSTOP, SIGCONT), restart (SIGTERM, started again), cut (drop the clients' connections to a node), clock (skew a node's clock by seconds to minutes, either way, with libfaketime: galera and postgres-standby), or all (every one the cluster allows); on pg-auto-failover also partition-primary, kill-primary and pause-primary (the fault on the node that is the primary when it begins: a failover); comma-separated. Recorded in the history as fault records")
	fs.DurationVar(&f.FaultInterval, "fault-interval", 5*time.Second, "the calm before each fault, and how long each lasts")
	fs.IntVar(&f.Hop, "hop", 0, "on a cluster (--cluster, or several --db): each session moves to the next node every N transactions, keeping its session order, as a client behind a load balancer does (0: a session stays on its node until it reconnects)")
}

// check validates the flags against the --db addresses, and returns the
// faults the run's nemesis injects on the cluster (none without
// --faults).
func (f *clusterFlags) check(dbs, readDBs []string) ([]nemesis.Kind, error) {
	if f.Hop < 0 {
		return nil, errors.New("--hop cannot be negative")
	}
	if f.Cluster == "" {
		if f.Hop > 0 && len(dbs) < 2 {
			return nil, errors.New("--hop needs a cluster: --cluster, or several --db")
		}
		if f.Faults != "" {
			return nil, errors.New("--faults needs --cluster: isoscope breaks only the clusters it runs (their processes and the proxies between their nodes)")
		}
		if len(readDBs) > 0 && len(dbs) == 0 {
			return nil, errors.New("--read-db needs a --db that takes writes")
		}
		return nil, nil
	}
	if len(dbs) > 0 || len(readDBs) > 0 {
		return nil, errors.New("--cluster stands up its own nodes: give it without --db and --read-db")
	}
	if _, err := cluster.ParseSpec(f.Cluster); err != nil {
		return nil, fmt.Errorf("--cluster: %v", err)
	}
	if f.Faults == "" {
		return nil, nil
	}
	kinds, err := nemesis.ParseKinds(f.Faults)
	if err != nil {
		return nil, fmt.Errorf("--faults: %v", err)
	}
	if kinds, err = f.clockFaults(kinds); err != nil {
		return nil, err
	}
	if spec, _ := cluster.ParseSpec(f.Cluster); !cluster.MovingPrimary(spec.Kind) {
		for _, k := range kinds {
			if slices.Contains(nemesis.PrimaryKinds, k) {
				return nil, fmt.Errorf("--faults %s: %s has no primary that moves (pg-auto-failover has)", k, spec.Kind)
			}
		}
	}
	if spec, _ := cluster.ParseSpec(f.Cluster); spec.Nodes == 1 && slices.Contains(kinds, nemesis.Partition) {
		return nil, fmt.Errorf("--faults partition: %s is one node, with no other node to cut it off from (kill, pause, restart and cut apply)", spec)
	}
	if f.FaultInterval <= 0 {
		return nil, errors.New("--fault-interval must be positive")
	}
	return kinds, nil
}

// clockFaults refuses clock faults on a cluster whose clocks cannot be
// skewed when --faults names them, and leaves them out when it says all;
// it notes whether the nodes must start under libfaketime.
func (f *clusterFlags) clockFaults(kinds []nemesis.Kind) ([]nemesis.Kind, error) {
	if !slices.Contains(kinds, nemesis.Clock) {
		return kinds, nil
	}
	spec, _ := cluster.ParseSpec(f.Cluster)
	if err := cluster.ClockSkew(spec.Kind); err != nil {
		named := false
		for n := range strings.SplitSeq(f.Faults, ",") {
			named = named || strings.EqualFold(strings.TrimSpace(n), string(nemesis.Clock))
		}
		if named {
			return nil, fmt.Errorf("--faults clock: %v", err)
		}
		return slices.DeleteFunc(kinds, func(k nemesis.Kind) bool { return k == nemesis.Clock }), nil
	}
	f.clocks = true
	return kinds, nil
}

// newClusterCommand is `isoscope cluster up|down`.
func newClusterCommand(std IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "stand up a replicated database cluster on 127.0.0.1, or tear one down",
		Example: `  # a PostgreSQL primary with a hot standby, kept up until Ctrl-C
  isoscope cluster up postgres-standby:2 --dir pg-cluster

  # from another terminal: stop it (or one a killed isoscope left behind)
  isoscope cluster down pg-cluster

  # a three-node Galera cluster for one run, partitioned every 5 s
  #   isoscope run --cluster galera:3 --faults partition --isolation repeatable-read

  # three dqlite voters for one run, the leader or a follower killed, cut off or paused every 2 s
  isoscope run --cluster dqlite:3 --faults kill,partition,pause --fault-interval 2s --txns 1500`,
		Long: `cluster up KIND[:NODES] stands up a replicated cluster on 127.0.0.1 and keeps
it up until interrupted (SIGINT, SIGTERM), then stops every node by its process
id and removes the directory; it prints each node's address and the run
command to aim at them. cluster down DIR stops a cluster another isoscope left
behind (one that was killed) and removes DIR.

Kinds: galera[:N] (MariaDB with Galera 4, N multi-master nodes, default 3;
Debian's mariadb-server, galera-4 and rsync), postgres-standby[:N] (a
PostgreSQL 15 primary and N-1 hot standbys by streaming replication,
default 2; Debian's postgresql-15), etcd[:N] (N etcd members, default 3;
Debian's etcd-server), dqlite[:N] (N dqlite nodes, 1 or 3 to 9, at most
three of them voters, default 3; Debian's go-dqlite, whose dqlite-demo is
the node), nats-kv[:N] (N nats-server processes as one JetStream cluster,
default 3, whose runs use a KV bucket of min(N, 3) replicas; Debian's
nats-server, or the binary $ISOSCOPE_NATS_SERVER names) and
nats-kv-leader[:N] (the same, with every read answered by the stream's
leader rather than by any replica), zookeeper[:N] (N ZooKeeper 3.8 servers
as one ensemble, default 3, run by java; Debian's zookeeper; a partition
drops their packets rather than resetting connections),
zookeeper-sync[:N] (the same, whose runs sync each znode before reading
it), redis[:N] (a Redis primary and N-1
replicas, default 3, and three Redis Sentinels that fail the primary over;
Debian's redis-server and redis-sentinel; clients find the primary through
the sentinels), redis-wait[:N] (the same, each write followed by WAIT for
N/2 replicas) and redis-replica-reads[:N] (the same, transactions that only
read run on a replica), pg-auto-failover[:N] (a pg_auto_failover
monitor and N PostgreSQL 15 nodes run by pg_autoctl, one primary and N-1
secondaries in synchronous replication, default 3; Debian's
postgresql-15-auto-failover and pg-auto-failover-cli; clients follow the
primary) and pg-auto-failover-async[:N] (the same, replication
asynchronous). Opt-in, one server each, built from
the Go module proxy by make tidb and make dolt into tmp/bin (or $ISOSCOPE_BIN, where isoscope looks
first; then ./tmp/bin, then PATH): tidb (a tidb-server on its unistore
engine, pessimistic transactions, TiDB's default; also tidb-pessimistic),
tidb-optimistic (the same in optimistic mode, whose write conflicts fail at
COMMIT), dolt (a dolt sql-server). Each node has its own data directory,
ports and log; the nodes reach one another, and clients reach each node,
through TCP proxies inside this isoscope, so that isoscope run --cluster
--faults can partition them. isoscope run --cluster KIND stands a cluster
up for one run by itself.`,
	}
	var dir string
	up := &cobra.Command{
		Use:   "up KIND[:NODES]",
		Short: "stand up a cluster and keep it up until interrupted",
		Args:  wantArgs(1, 1, "one cluster kind", "(galera[:N], postgres-standby[:N], etcd[:N], dqlite[:N], nats-kv[:N], nats-kv-leader[:N], zookeeper[:N], zookeeper-sync[:N], redis[:N], redis-wait[:N], redis-replica-reads[:N], pg-auto-failover[:N], pg-auto-failover-async[:N], tidb, tidb-optimistic or dolt)"),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return flagValues("cluster", "cluster"), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := cluster.ParseSpec(args[0])
			if err != nil {
				return badInput(err)
			}
			ctx := cmd.Context()
			start := time.Now()
			cl, err := cluster.Up(ctx, spec, dir, func(s string) {
				fmt.Fprintf(std.Stderr, "%s %s\n", time.Now().Format("15:04:05.0"), s)
			})
			if err != nil {
				if ctx.Err() != nil {
					return &exitError{code: ExitUnknown, err: fmt.Errorf("interrupted while the cluster was starting: %v", err)}
				}
				return badInput(err)
			}
			defer cl.Stop()
			fmt.Fprintf(std.Stdout, "cluster %s up in %s under %s\n", spec, time.Since(start).Round(100*time.Millisecond), cl.Dir)
			var dbs []string
			for i, d := range cl.DSNs() {
				n := cl.Nodes[i]
				role := ""
				if n.Role != "" {
					role = " (" + n.Role + ")"
				}
				fmt.Fprintf(std.Stdout, "  %s%s: %s  log %s\n", n.Name, role, d, n.Log)
				if n.Role == "monitor" {
					continue // pg-auto-failover's monitor: no client's database
				}
				flag := "--db"
				if n.Role == "standby" {
					flag = "--read-db"
				}
				if a := flag + " '" + d + "'"; !slices.Contains(dbs, a) {
					dbs = append(dbs, a)
				}
			}
			fmt.Fprintf(std.Stdout, "run against it: isoscope run %s\n", strings.Join(dbs, " "))
			fmt.Fprintf(std.Stdout, "interrupt (Ctrl-C) to stop it, or: isoscope cluster down %s\n", cl.Dir)
			<-ctx.Done()
			fmt.Fprintf(std.Stderr, "stopping the cluster\n")
			return nil
		},
	}
	up.Flags().StringVar(&dir, "dir", "", "the cluster's directory (default: a fresh temporary directory); it must be empty or absent")
	down := &cobra.Command{
		Use:   "down DIR",
		Short: "stop the cluster recorded in DIR and remove DIR",
		Args:  wantArgs(1, 1, "the directory of the cluster up", ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := os.Stat(args[0]); err != nil {
				return badInput(err)
			}
			stopped, err := cluster.Down(args[0], 30*time.Second)
			if err != nil {
				return badInput(err)
			}
			if len(stopped) > 0 {
				fmt.Fprintf(std.Stdout, "stopped %s; removed %s\n", strings.Join(stopped, " "), args[0])
			} else {
				fmt.Fprintf(std.Stdout, "no node was running; removed %s\n", args[0])
			}
			return nil
		},
	}
	cmd.AddCommand(up, down)
	return cmd
}
