package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/isoscope/isoscope/internal/cluster"
	"github.com/isoscope/isoscope/internal/db"
)

// standUp stands the run's cluster up and points the run's databases and
// read-only nodes at its nodes.
func (r *run) standUp(ctx context.Context) (*cluster.Cluster, error) {
	spec := *r.Cluster
	start := time.Now()
	var opts []cluster.Option
	if r.ClusterClocks {
		opts = append(opts, cluster.WithClocks())
	}
	cl, err := cluster.Up(ctx, spec, r.ClusterDir, func(s string) {
		fmt.Fprintf(r.io.Stderr, "%s %s\n", time.Now().Format("15:04:05.0"), s)
	}, opts...)
	if err != nil {
		return nil, fmt.Errorf("--cluster %s: %v", spec, err)
	}
	r.cluster = cl
	dsns := cl.DSNs()
	for i, n := range cl.Nodes {
		switch {
		case n.Role == "monitor":
			// pg-auto-failover's monitor: no client's database.
		case slices.Contains(r.DBs, dsns[i]):
			// One address for every node (Redis's sentinels, which name
			// the primary): one database.
		case n.Role == "standby":
			r.ReadDBs = append(r.ReadDBs, dsns[i])
		default:
			r.DBs = append(r.DBs, dsns[i])
		}
	}
	fmt.Fprintf(r.io.Stderr, "cluster %s up in %s under %s: %s\n", spec, time.Since(start).Round(100*time.Millisecond), cl.Dir, strings.Join(dsns, " "))
	return cl, nil
}

// tearDown stops the run's cluster and removes its directory.
func (r *run) tearDown(cl *cluster.Cluster) {
	start := time.Now()
	cl.Stop()
	fmt.Fprintf(r.io.Stderr, "cluster %s stopped and removed in %s\n", cl.Spec, time.Since(start).Round(100*time.Millisecond))
}

// openDatabase opens the run's databases (and read-only nodes): one
// database, or one Multi of the cluster's nodes. The target returned is
// the first node's, for naming the database.
func (r *run) openDatabase(ctx context.Context) (db.Target, db.Database, error) {
	openCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	open := func(addrs []string) ([]db.Database, []db.Target, error) {
		var ds []db.Database
		var ts []db.Target
		for _, a := range addrs {
			t, err := db.ParseTarget(a)
			if err != nil {
				return ds, ts, err
			}
			t.StmtTimeout = r.StmtTimeout
			if r.Plan.Config.LockRMW && t.Kind == db.Badger {
				return ds, ts, errors.New("--lock-rmw: badger has no locking reads (a Badger transaction locks nothing; its reads are checked at commit)")
			}
			if len(addrs)+len(r.ReadDBs) > 1 && t.InMemory() {
				return ds, ts, fmt.Errorf("%s lives in this process: it cannot be a node of a cluster", t.Display)
			}
			d, err := t.Open(openCtx, r.Table)
			if err != nil {
				return ds, ts, err
			}
			ds, ts = append(ds, d), append(ts, t)
		}
		return ds, ts, nil
	}
	closeAll := func(ds []db.Database) {
		for _, d := range ds {
			_ = d.Close()
		}
	}
	writers, wt, err := open(r.DBs)
	if err != nil {
		closeAll(writers)
		return db.Target{}, nil, err
	}
	if len(writers) == 1 && len(r.ReadDBs) == 0 {
		return wt[0], writers[0], nil
	}
	readers, _, err := open(r.ReadDBs)
	if err != nil {
		closeAll(writers)
		closeAll(readers)
		return db.Target{}, nil, err
	}
	m, err := db.NewMulti(writers, readers)
	if err != nil {
		closeAll(writers)
		closeAll(readers)
		return db.Target{}, nil, err
	}
	m.Hop = r.Hop
	t := wt[0]
	t.Display = fmt.Sprintf("%s and %d more nodes", t.Display, len(writers)+len(readers)-1)
	return t, m, nil
}
