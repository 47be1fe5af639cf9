package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// Vacuum rewrites the state file at path without its free pages, and empties its write-ahead log
// into it: a deleted row is left in both until their pages are written again, which an erasure
// (crawl purge, docs/erasure.md) cannot wait for. It uses a connection of its own, and waits
// (busy_timeout) for a writer of another process to let go. It rewrites the whole file: run it
// after an erasure, not on the hot path.
func Vacuum(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("vacuum %s: %w", path, err)
	}
	defer db.Close()
	for _, stmt := range []string{"PRAGMA wal_checkpoint(TRUNCATE)", "VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)"} {
		var busy, logPages, done int
		if stmt == "VACUUM" {
			_, err = db.ExecContext(ctx, stmt)
		} else {
			// A checkpoint that a reader holds back reports busy rather than failing.
			err = db.QueryRowContext(ctx, stmt).Scan(&busy, &logPages, &done)
			if err == nil && busy != 0 {
				err = fmt.Errorf("another connection holds the write-ahead log (%d of %d pages copied)", done, logPages)
			}
		}
		if err != nil {
			return fmt.Errorf("vacuum %s: %s: %w", path, stmt, err)
		}
	}
	return nil
}
