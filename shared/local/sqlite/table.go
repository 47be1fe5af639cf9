package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/crawlstack/crawlstack/shared/port/table"
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
	err := t.db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `INSERT INTO tables (name) VALUES (?) ON CONFLICT DO NOTHING`, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	return nil
}

// Get returns the item with the key, or table.ErrNotFound.
func (t *Table) Get(ctx context.Context, key table.Key) (table.Item, error) {
	if err := key.Check(); err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	var doc string
	err := t.db.items.read.QueryRowContext(ctx, t.name, rowKey(key)).Scan(&doc)
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
func (t *Table) Put(ctx context.Context, key table.Key, item table.Item, cond table.Cond) error {
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
func (t *Table) Update(ctx context.Context, key table.Key, u table.Update, cond table.Cond) (table.Item, error) {
	if err := u.Check(); err != nil {
		return nil, fmt.Errorf("update %s: %w", key, err)
	}
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
func (t *Table) Delete(ctx context.Context, key table.Key, cond table.Cond) error {
	err := t.modify(ctx, key, cond, func(table.Item) (string, bool, error) { return "", false, nil })
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// modify reads the item, checks cond and writes what next returns (keep false: delete), all in
// one transaction. A false condition returns a *table.ConditionFailedError with the old item.
// next gets the item as decoded for this call alone, and may change it.
func (t *Table) modify(ctx context.Context, key table.Key, cond table.Cond,
	next func(old table.Item) (doc string, keep bool, err error)) error {
	if err := key.Check(); err != nil {
		return err
	}
	row := rowKey(key)
	// One statement changes the file, the last thing the write does: it needs no savepoint.
	return t.db.writeOne(ctx, func(ctx context.Context, _ *sql.Conn) error {
		var old table.Item
		var doc string
		err := t.db.items.get.QueryRowContext(ctx, t.name, row).Scan(&doc)
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
			_, err = t.db.items.del.ExecContext(ctx, t.name, row)
		} else {
			_, err = t.db.items.put.ExecContext(ctx, t.name, row, newDoc)
		}
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		return nil
	})
}

// KeepsItems says that the table keeps items past their time to live: SQLite has no TTL, and
// nothing here deletes an item for its expiresAt. A crawl on it needs no renewal of its items and
// admits new URLs for as long as it runs (crawlstate).
func (t *Table) KeepsItems() bool { return true }

// Each calls fn for every item of the table, in key order, a page at a time. It is not part of
// the table port, which reads one partition at a time: it is for tests and audits of a local state
// file, which want to see all of it.
func (t *Table) Each(ctx context.Context, fn func(key table.Key, item table.Item) error) error {
	err := eachPage(ctx, t.keyPages(""), func(p decoded) error {
		for i, r := range p.rows {
			key, err := keyOfRow(r.key)
			if err != nil {
				return err
			}
			if err := fn(key, p.items[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read every item: %w", err)
	}
	return nil
}

// rowKey is the key as the items table's pk column holds it: the partition and the sort key
// joined by table.Sep, so that a partition's rows are one range of the key index in sort-key order.
func rowKey(k table.Key) string { return k.Part + table.Sep + k.Sort }

// keyOfRow is rowKey's inverse.
func keyOfRow(row string) (table.Key, error) {
	part, sort, ok := strings.Cut(row, table.Sep)
	if !ok {
		return table.Key{}, fmt.Errorf("row key %q has no partition", row)
	}
	return table.Key{Part: part, Sort: sort}, nil
}

// queryPage is how many items Query reads at a time: its memory stays bounded however large the
// partition grows.
const queryPage = 500

// Query calls fn for every item of the partition part whose sort key starts with prefix, in
// sort-key order, through the key index: it reads the partition's range of rows and nothing else.
// It reads a page at a time and calls fn after each page's rows are closed, so that fn may write
// to the table; like a DynamoDB Query over several pages it is not a snapshot.
func (t *Table) Query(ctx context.Context, part, prefix string, fn func(sort string, item table.Item) error) error {
	return t.QueryAfter(ctx, part, prefix, "", fn)
}

// QueryAfter is Query from the first item whose sort key comes after after: the range of rows
// starts after the row key it would have.
func (t *Table) QueryAfter(ctx context.Context, part, prefix, after string, fn func(sort string, item table.Item) error) error {
	if err := (table.Key{Part: part, Sort: "-"}).Check(); err != nil {
		return fmt.Errorf("query: %w", err)
	}
	from := part + table.Sep
	pages := t.keyPages(from + prefix)
	if after != "" && after >= prefix {
		pages = t.keyPagesAfter(from+prefix, from+after)
	}
	err := eachPage(ctx, pages, func(p decoded) error {
		for i, r := range p.rows {
			if err := fn(r.key[len(from):], p.items[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("query %s|%s: %w", part, prefix, err)
	}
	return nil
}

// eachPage reads next's pages and decodes them, and calls use with each until there are no more
// or use fails.
func eachPage(ctx context.Context, next pager, use func(decoded) error) error {
	for {
		found, more, err := next(ctx)
		if err != nil {
			return err
		}
		items, err := decodePage(found)
		if err != nil {
			return err
		}
		if err := use(decoded{found, items}); err != nil {
			return err
		}
		if !more {
			return nil
		}
	}
}

// decoded is a page of a Query with its items decoded.
type decoded struct {
	rows  []scanned
	items []table.Item
}

// scanned is one row a Query page read.
type scanned struct {
	key, doc string
}

// decodePage decodes a page's items, on every core: decoding is most of a large Query's time.
func decodePage(page []scanned) ([]table.Item, error) {
	items := make([]table.Item, len(page))
	errs := make([]error, len(page))
	workers := min(runtime.GOMAXPROCS(0), len(page))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(page); i += workers {
				if items[i], errs[i] = decodeItem(page[i].doc); errs[i] != nil {
					errs[i] = fmt.Errorf("%s: %w", page[i].key, errs[i])
				}
			}
		})
	}
	wg.Wait()
	return items, errors.Join(errs...)
}

// pager returns the next page of a Query, and whether there may be more.
type pager func(ctx context.Context) (found []scanned, more bool, err error)

// keyPages reads the items whose row key starts with prefix, in key order.
func (t *Table) keyPages(prefix string) pager { return t.keyPagesFrom(prefix, prefix, ">=") }

// keyPagesAfter is keyPages from the first row key after after, which is at least prefix.
func (t *Table) keyPagesAfter(prefix, after string) pager { return t.keyPagesFrom(prefix, after, ">") }

// keyPagesFrom is keyPages from the row key from, taken (op ">=") or not (">").
func (t *Table) keyPagesFrom(prefix, from, op string) pager {
	return func(ctx context.Context) ([]scanned, bool, error) {
		rows, err := t.db.r.QueryContext(ctx, `SELECT pk, item FROM items WHERE tbl = ? AND pk `+op+` ? ORDER BY pk LIMIT ?`,
			t.name, from, queryPage)
		if err != nil {
			return nil, false, err
		}
		found, n, err := readPage(rows, prefix)
		if len(found) > 0 {
			from, op = found[len(found)-1].key, ">"
		}
		return found, err == nil && n == queryPage && len(found) == n, err
	}
}

// readPage reads and closes rows of (key, item) in key order: it returns those whose key has the
// prefix, up to the first that has not, and how many rows it read.
func readPage(rows *sql.Rows, prefix string) (found []scanned, n int, err error) {
	defer rows.Close()
	found = make([]scanned, 0, queryPage)
	for rows.Next() {
		var r scanned
		if err := rows.Scan(&r.key, &r.doc); err != nil {
			return nil, n, err
		}
		n++
		if !strings.HasPrefix(r.key, prefix) {
			break
		}
		found = append(found, r)
	}
	return found, n, rows.Err()
}

// itemStmts are the item statements, prepared once: get, put and del on the writer connection,
// read on the readers.
type itemStmts struct {
	get, put, del *sql.Stmt
	read          *sql.Stmt
}

func (s *itemStmts) prepare(db *DB, r *sql.DB) error {
	var err error
	if s.read, err = r.Prepare(`SELECT item FROM items WHERE tbl = ? AND pk = ?`); err != nil {
		return fmt.Errorf("prepare table statement: %w", err)
	}
	err = db.prepareAll([]prepared{
		{&s.get, `SELECT item FROM items WHERE tbl = ? AND pk = ?`},
		{&s.put, `INSERT INTO items (tbl, pk, item) VALUES (?, ?, ?) ON CONFLICT (tbl, pk) DO UPDATE SET item = excluded.item`},
		{&s.del, `DELETE FROM items WHERE tbl = ? AND pk = ?`},
	})
	if err != nil {
		return fmt.Errorf("prepare table statement: %w", err)
	}
	return nil
}

// getManyChunk is how many keys one GetMany query names (well under SQLite's limit of bound
// parameters).
const getManyChunk = 200

// GetMany returns the items with the keys that exist, a query per 200 keys on the readers.
func (t *Table) GetMany(ctx context.Context, keys []table.Key) (map[table.Key]table.Item, error) {
	for _, k := range keys {
		if err := k.Check(); err != nil {
			return nil, fmt.Errorf("get %d items: %w", len(keys), err)
		}
	}
	out := make(map[table.Key]table.Item, len(keys))
	for len(keys) > 0 {
		n := min(len(keys), getManyChunk)
		if err := t.getMany(ctx, keys[:n], out); err != nil {
			return nil, fmt.Errorf("get %d items: %w", len(keys[:n]), err)
		}
		keys = keys[n:]
	}
	return out, nil
}

func (t *Table) getMany(ctx context.Context, keys []table.Key, out map[table.Key]table.Item) error {
	args := make([]any, 0, len(keys)+1)
	args = append(args, t.name)
	for _, k := range keys {
		args = append(args, rowKey(k))
	}
	q := `SELECT pk, item FROM items WHERE tbl = ? AND pk IN (?` + strings.Repeat(`, ?`, len(keys)-1) + `)`
	rows, err := t.db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var row, doc string
		if err := rows.Scan(&row, &doc); err != nil {
			return err
		}
		key, err := keyOfRow(row)
		if err != nil {
			return err
		}
		it, err := decodeItem(doc)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		out[key] = it
	}
	return rows.Err()
}
