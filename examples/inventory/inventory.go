package inventory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/isoscope/isoscope"
)

// Shop is the application: items in stock, reserved by customers. Each
// reservation is one database transaction at the shop's isolation level.
type Shop struct {
	db     *sql.DB
	level  sql.IsolationLevel
	tables tables
	// retries is how many times a reservation is tried again after a
	// serialization failure (SQLSTATE 40001).
	retries int
	// audit records every transaction the shop runs; nil: none.
	audit *isoscope.Recorder
}

// tables are the shop's table and sequence names: its own per shop, so
// that shops can share a database.
type tables struct{ stock, reservations, versions string }

// Config configures a Shop.
type Config struct {
	// Prefix starts the names of the shop's tables and sequence.
	Prefix string
	// Level is the isolation level of the shop's transactions.
	Level sql.IsolationLevel
	// Retries is how many times a reservation that fails to serialize
	// (SQLSTATE 40001) is tried again.
	Retries int
}

// Open returns the shop on db, creating its tables with the given stock
// (item → quantity available).
func Open(ctx context.Context, db *sql.DB, c Config, stock map[string]int) (*Shop, error) {
	s := &Shop{db: db, level: c.Level, retries: c.Retries,
		tables: tables{stock: c.Prefix + "_stock", reservations: c.Prefix + "_reservations", versions: c.Prefix + "_versions"}}
	for _, q := range []string{
		"CREATE SEQUENCE " + s.tables.versions,
		"CREATE TABLE " + s.tables.stock + " (item text PRIMARY KEY, available int NOT NULL, version bigint NOT NULL)",
		"CREATE TABLE " + s.tables.reservations + " (id bigserial PRIMARY KEY, item text NOT NULL, customer text NOT NULL, quantity int NOT NULL)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return nil, err
		}
	}
	for item, n := range stock {
		if _, err := db.ExecContext(ctx, "INSERT INTO "+s.tables.stock+" VALUES ($1, $2, nextval('"+s.tables.versions+"'))", item, n); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Drop removes the shop's tables.
func (s *Shop) Drop(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, "DROP TABLE IF EXISTS "+s.tables.stock+", "+s.tables.reservations+"; DROP SEQUENCE IF EXISTS "+s.tables.versions)
	return err
}

// Initial returns the stock rows as the audit's initial state: each item's
// key with the version of its row.
func (s *Shop) Initial(ctx context.Context) ([]isoscope.KV, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT item, version FROM "+s.tables.stock)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []isoscope.KV
	for rows.Next() {
		var item string
		var version int64
		if err := rows.Scan(&item, &version); err != nil {
			return nil, err
		}
		out = append(out, isoscope.KV{Key: stockKey(item), Value: isoscope.Int(version)})
	}
	return out, rows.Err()
}

// Audit makes the shop record its transactions from now on.
func (s *Shop) Audit(rec *isoscope.Recorder) { s.audit = rec }

// Oversold returns, for each item whose stock and reservations disagree,
// by how many units: the quantity available plus all reserved should be
// the initial stock.
func (s *Shop) Oversold(ctx context.Context, initial map[string]int) (map[string]int, error) {
	out := map[string]int{}
	for item, n := range initial {
		var available, reserved int
		err := s.db.QueryRowContext(ctx, "SELECT available, (SELECT coalesce(sum(quantity), 0) FROM "+s.tables.reservations+
			" WHERE item = $1) FROM "+s.tables.stock+" WHERE item = $1", item).Scan(&available, &reserved)
		if err != nil {
			return nil, err
		}
		if over := available + reserved - n; over != 0 {
			out[item] = over
		}
	}
	return out, nil
}

// A Clerk serves customers one after another: its reservations are one
// session of the audit.
type Clerk struct {
	shop *Shop
	name string
}

// Clerk returns a clerk of the shop named name.
func (s *Shop) Clerk(name string) *Clerk { return &Clerk{shop: s, name: name} }

// Reserve reserves quantity units of item for customer, if that many are
// available; it says whether it did. A reservation that fails to
// serialize is tried again, up to the shop's retries.
func (c *Clerk) Reserve(ctx context.Context, customer, item string, quantity int) (bool, error) {
	for attempt := 0; ; attempt++ {
		ok, err := c.reserveOnce(ctx, customer, item, quantity)
		if err == nil || !serializationFailure(err) || attempt >= c.shop.retries {
			return ok, err
		}
	}
}

// reserveOnce is one transaction: read the item's stock, and if enough is
// available write the stock less the quantity and add the reservation.
func (c *Clerk) reserveOnce(ctx context.Context, customer, item string, quantity int) (reserved bool, err error) {
	r := repository{tables: c.shop.tables}
	if c.shop.audit != nil {
		r.audit = c.shop.audit.Begin(isoscope.Str(c.name))
	}
	r.tx, err = c.shop.db.BeginTx(ctx, &sql.TxOptions{Isolation: c.shop.level})
	if err != nil {
		r.end(abort)
		return false, err
	}
	defer func() {
		if err != nil {
			_ = r.tx.Rollback()
			r.end(abort)
		}
	}()
	available, err := r.stock(ctx, item)
	if err != nil {
		return false, err
	}
	if available >= quantity {
		if err = r.setStock(ctx, item, available-quantity); err != nil {
			return false, err
		}
		if err = r.addReservation(ctx, item, customer, quantity); err != nil {
			return false, err
		}
		reserved = true
	}
	if cerr := r.tx.Commit(); cerr != nil {
		// The server's answer (an error with an SQLSTATE) says the
		// transaction rolled back; without one, its outcome is unknown.
		var pg *pgconn.PgError
		if errors.As(cerr, &pg) {
			r.end(abort)
		} else {
			r.end(unknown)
		}
		return false, cerr
	}
	r.end(commit)
	return reserved, nil
}

// serializationFailure reports whether err is PostgreSQL's serialization
// failure (SQLSTATE 40001), after which the transaction can be retried.
func serializationFailure(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "40001"
}

// repository is the shop's data layer on one database transaction. Each
// query's result is recorded in the audit transaction, when there is one:
// a stock row is the key "stock/ITEM" and its version (a number drawn from
// a sequence at each write, so no two writes write the same); a
// reservation is the key "reservation/ID" with its quantity.
type repository struct {
	tx     *sql.Tx
	tables tables
	audit  *isoscope.Tx
}

func stockKey(item string) isoscope.Value { return isoscope.Str("stock/" + item) }

// stock returns the quantity of item available.
func (r *repository) stock(ctx context.Context, item string) (int, error) {
	var available int
	var version int64
	err := r.tx.QueryRowContext(ctx, "SELECT available, version FROM "+r.tables.stock+" WHERE item = $1", item).Scan(&available, &version)
	if err != nil {
		return 0, fmt.Errorf("reading the stock of %s: %w", item, err)
	}
	if r.audit != nil {
		r.audit.Read(stockKey(item), isoscope.Int(version))
	}
	return available, nil
}

// setStock sets the quantity of item available.
func (r *repository) setStock(ctx context.Context, item string, available int) error {
	var version int64
	err := r.tx.QueryRowContext(ctx, "UPDATE "+r.tables.stock+" SET available = $2, version = nextval('"+r.tables.versions+
		"') WHERE item = $1 RETURNING version", item, available).Scan(&version)
	if err != nil {
		return fmt.Errorf("updating the stock of %s: %w", item, err)
	}
	if r.audit != nil {
		r.audit.Write(stockKey(item), isoscope.Int(version))
	}
	return nil
}

// addReservation adds a reservation of quantity units of item for
// customer.
func (r *repository) addReservation(ctx context.Context, item, customer string, quantity int) error {
	var id int64
	err := r.tx.QueryRowContext(ctx, "INSERT INTO "+r.tables.reservations+" (item, customer, quantity) VALUES ($1, $2, $3) RETURNING id",
		item, customer, quantity).Scan(&id)
	if err != nil {
		return fmt.Errorf("reserving %s: %w", item, err)
	}
	if r.audit != nil {
		r.audit.Write(isoscope.Str("reservation/"+strconv.FormatInt(id, 10)), isoscope.Int(int64(quantity)))
	}
	return nil
}

// outcome is how a transaction ended, as the audit records it.
type outcome int

const (
	commit outcome = iota
	abort
	unknown
)

// end ends the audit transaction (once; later calls do nothing).
func (r *repository) end(o outcome) {
	if r.audit == nil {
		return
	}
	switch o {
	case commit:
		_ = r.audit.Commit()
	case abort:
		_ = r.audit.Abort()
	default:
		_ = r.audit.Unknown()
	}
	r.audit = nil
}
