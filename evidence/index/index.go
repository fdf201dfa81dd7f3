// Package index records verified evidence bundles in a SQLite database so
// that `gatehouse gate` and `gatehouse history` can find them. The index is a
// cache of what bundles say: a gate re-verifies the bundle it relies on.
package index

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

//go:embed migrations/*.sql
var migrations embed.FS

// DefaultName is the index file name placed next to the evidence folders.
const DefaultName = "gatehouse-index.db"

// DefaultPath is the index for bundles written under out.
func DefaultPath(out string) string { return filepath.Join(out, DefaultName) }

// Index is an open evidence index. It is safe for concurrent use, and
// several processes may write the same file (WAL, busy timeout, and write
// transactions that take the lock up front).
type Index struct {
	db *sql.DB
}

// Open opens or creates the index at path and applies pending migrations.
func Open(ctx context.Context, path string) (*Index, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// IMMEDIATE: a write transaction locks at BEGIN, where busy_timeout
	// waits, instead of failing with SQLITE_BUSY when it upgrades later.
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("index: open %s: %w", path, err)
	}
	ix := &Index{db: db}
	if err := ix.migrateRetrying(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("index: open %s: %w", path, err)
	}
	return ix, nil
}

// migrateRetrying retries the first write on SQLITE_BUSY. Two processes
// creating the same new file race on switching it to WAL, and SQLite
// answers that race with an immediate BUSY that busy_timeout never sees.
func (ix *Index) migrateRetrying(ctx context.Context) error {
	deadline := time.Now().Add(15 * time.Second)
	for wait := 10 * time.Millisecond; ; wait = min(wait*2, 500*time.Millisecond) {
		err := ix.migrate(ctx)
		if err == nil || !busy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

func busy(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked")
}

// Close closes the database.
func (ix *Index) Close() error { return ix.db.Close() }

// migrate applies embedded migrations in order, each in its own write
// transaction, so two processes opening a new index at once do not both
// apply the same step.
func (ix *Index) migrate(ctx context.Context) error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	if _, err := ix.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, name := range names {
		v, err := strconv.Atoi(strings.SplitN(filepath.Base(name), "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migrate: bad name %s", name)
		}
		body, err := migrations.ReadFile(name)
		if err != nil {
			return err
		}
		if err := ix.apply(ctx, v, string(body)); err != nil {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
	}
	return nil
}

func (ix *Index) apply(ctx context.Context, version int, body string) error {
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, body); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version) VALUES (?)`, version); err != nil {
		return err
	}
	return tx.Commit()
}
