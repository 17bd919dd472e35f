package db

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// etcdLockPrefix is where the table locks live: outside every table's
// prefix (a table's name holds no '-'), so that Reset never deletes one.
const etcdLockPrefix = "isoscope-locks/"

// Lock holds the table with a key under etcdLockPrefix attached to a
// lease of leaseTTL that a session keeps alive until Release, which
// revokes it: the key is created only if absent, in one Txn, and holds
// its holder's description. A crashed run's lease runs out, and etcd
// deletes the key with it.
func (d *etcdDB) Lock(ctx context.Context) (*TableLock, error) {
	key := etcdLockPrefix + d.table
	fail := func(err error) (*TableLock, error) {
		return nil, fmt.Errorf("locking table %s with etcd key %s: %v", d.table, key, err)
	}
	grant, err := d.admin.Grant(ctx, int64(leaseTTL.Seconds()))
	if err != nil {
		return fail(err)
	}
	// revoke ends the lease, and the key with it, waiting at most
	// releaseWait (a lease not revoked runs out).
	revoke := func() error {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseWait)
		defer cancel()
		_, err := d.admin.Revoke(rctx, grant.ID)
		return err
	}
	me := holderText()
	resp, err := d.admin.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, me, clientv3.WithLease(grant.ID))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		_ = revoke()
		return fail(err)
	}
	if !resp.Succeeded {
		_ = revoke()
		inUse := &InUseError{Table: d.table, Where: d.display, Holder: "etcd key " + key}
		if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
			inUse.Holder = fmt.Sprintf("%s; etcd key %s", kvs[0].Value, key)
			if ttl, err := d.admin.TimeToLive(ctx, clientv3.LeaseID(kvs[0].Lease)); err == nil && ttl.TTL > 0 {
				inUse.Holder += fmt.Sprintf(", whose lease runs out %ds after its last renewal, %ds from now", ttl.GrantedTTL, ttl.TTL)
			}
		}
		return nil, inUse
	}
	// The session keeps the lease alive (and drains etcd's keep-alive
	// answers) until Release orphans it and revokes the lease.
	s, err := concurrency.NewSession(d.admin, concurrency.WithLease(grant.ID))
	if err != nil {
		_ = revoke()
		return fail(err)
	}
	return &TableLock{release: func() error { s.Orphan(); return revoke() }}, nil
}
