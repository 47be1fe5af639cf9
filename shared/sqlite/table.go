package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/crawlstack/crawlstack/shared/table"
)

var (
	_ table.Table = (*Table)(nil)
	_ table.Admin = (*Table)(nil)
)

// Table is one DynamoDB-like table in the file. Items are stored as JSON, one row per key;
// conditions and updates are evaluated in Go inside the write transaction, so a conditional
// write is atomic across goroutines and processes.
type Table struct {
	db   *DB
	name string
}

// CreateTable registers the table under name (the Table's own name is unaffected). It is
// idempotent.
func (t *Table) CreateTable(ctx context.Context, name string) error {
	err := t.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO tables (name) VALUES (?) ON CONFLICT DO NOTHING`, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	return nil
}

// Get returns the item with the key, or table.ErrNotFound.
func (t *Table) Get(ctx context.Context, key string) (table.Item, error) {
	var doc string
	err := t.db.items.read.QueryRowContext(ctx, t.name, key).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("get %s: %w", key, table.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	it, err := decodeItem(doc)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return it, nil
}

// Put replaces the whole item if cond holds.
func (t *Table) Put(ctx context.Context, key string, item table.Item, cond table.Cond) error {
	doc, err := encodeItem(item)
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	err = t.modify(ctx, key, cond, func(table.Item) (string, bool, error) { return doc, true, nil })
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// Update applies u if cond holds (creating the item if it is missing) and returns the new item.
func (t *Table) Update(ctx context.Context, key string, u table.Update, cond table.Cond) (table.Item, error) {
	var out table.Item
	err := t.modify(ctx, key, cond, func(old table.Item) (string, bool, error) {
		it := old // decoded for this write alone: it is ours to change
		if it == nil {
			it = table.Item{}
		}
		for name, v := range u.Set {
			it[name] = v
		}
		for name, d := range u.Add {
			v, ok := it[name]
			if !ok {
				it[name] = d
				continue
			}
			n, isNum := asInt64(v)
			if !isNum {
				return "", false, fmt.Errorf("add to %s: the attribute is %T, not a number", name, v)
			}
			it[name] = n + d
		}
		for _, name := range u.Remove {
			delete(it, name)
		}
		if err := normalize(it); err != nil {
			return "", false, err
		}
		doc, err := marshalItem(it)
		if err != nil {
			return "", false, err
		}
		// Hand back the item as stored, with every number as int64.
		out = it
		if !storedAsIs(it) {
			out, err = decodeItem(doc)
		}
		return doc, true, err
	})
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", key, err)
	}
	return out, nil
}

// Delete removes the item if cond holds.
func (t *Table) Delete(ctx context.Context, key string, cond table.Cond) error {
	err := t.modify(ctx, key, cond, func(table.Item) (string, bool, error) { return "", false, nil })
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// modify reads the item, checks cond and writes what next returns (keep false: delete), all in
// one transaction. A false condition returns a *table.ConditionFailedError with the old item.
// next gets the item as decoded for this call alone, and may change it.
func (t *Table) modify(ctx context.Context, key string, cond table.Cond,
	next func(old table.Item) (doc string, keep bool, err error)) error {
	if key == "" || len(key) > table.MaxKeyBytes {
		return fmt.Errorf("key of %d bytes: must be 1 to %d", len(key), table.MaxKeyBytes)
	}
	return t.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var old table.Item
		var doc string
		err := tx.StmtContext(ctx, t.db.items.get).QueryRowContext(ctx, t.name, key).Scan(&doc)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fmt.Errorf("read: %w", err)
		default:
			if old, err = decodeItem(doc); err != nil {
				return err
			}
		}
		ok, err := eval(cond, old)
		if err != nil {
			return err
		}
		if !ok {
			return &table.ConditionFailedError{Key: key, Item: old}
		}
		newDoc, keep, err := next(old)
		if err != nil {
			return err
		}
		if !keep {
			_, err = tx.StmtContext(ctx, t.db.items.del).ExecContext(ctx, t.name, key)
		} else {
			_, err = tx.StmtContext(ctx, t.db.items.put).ExecContext(ctx, t.name, key, newDoc)
		}
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		return nil
	})
}

// scanPage is how many items Scan reads at a time: its memory stays bounded however large the
// table grows (the summary of a crawl scans every URL item of it).
const scanPage = 500

// Scan calls fn for every item whose key starts with prefix, in key order. It reads the items a
// page at a time and calls fn after each page's rows are closed, so that fn may write to the
// table; like a DynamoDB Scan it is not a snapshot: an item fn writes further on may be seen.
func (t *Table) Scan(ctx context.Context, prefix string, fn func(key string, item table.Item) error) error {
	type kv struct {
		key string
		doc string
	}
	from, op := prefix, ">="
	for {
		rows, err := t.db.r.QueryContext(ctx, `SELECT pk, item FROM items WHERE tbl = ? AND pk `+op+` ? ORDER BY pk LIMIT ?`,
			t.name, from, scanPage)
		if err != nil {
			return fmt.Errorf("scan %q: %w", prefix, err)
		}
		found := make([]kv, 0, scanPage)
		done := false
		for rows.Next() {
			var r kv
			if err := rows.Scan(&r.key, &r.doc); err != nil {
				rows.Close()
				return fmt.Errorf("scan %q: %w", prefix, err)
			}
			if !strings.HasPrefix(r.key, prefix) {
				done = true
				break
			}
			found = append(found, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("scan %q: %w", prefix, err)
		}
		for _, r := range found {
			it, err := decodeItem(r.doc)
			if err != nil {
				return fmt.Errorf("scan %q: %s: %w", prefix, r.key, err)
			}
			if err := fn(r.key, it); err != nil {
				return err
			}
		}
		if done || len(found) < scanPage {
			return nil
		}
		from, op = found[len(found)-1].key, ">"
	}
}

// itemStmts are the item statements, prepared once: get, put and del on the writer connection,
// read on the readers.
type itemStmts struct {
	get, put, del *sql.Stmt
	read          *sql.Stmt
}

func (s *itemStmts) prepare(w, r *sql.DB) error {
	var err error
	if s.read, err = r.Prepare(`SELECT item FROM items WHERE tbl = ? AND pk = ?`); err != nil {
		return fmt.Errorf("prepare table statement: %w", err)
	}
	for _, st := range []struct {
		p   **sql.Stmt
		sql string
	}{
		{&s.get, `SELECT item FROM items WHERE tbl = ? AND pk = ?`},
		{&s.put, `INSERT INTO items (tbl, pk, item) VALUES (?, ?, ?) ON CONFLICT (tbl, pk) DO UPDATE SET item = excluded.item`},
		{&s.del, `DELETE FROM items WHERE tbl = ? AND pk = ?`},
	} {
		prepared, err := w.Prepare(st.sql)
		if err != nil {
			return fmt.Errorf("prepare table statement: %w", err)
		}
		*st.p = prepared
	}
	return nil
}
