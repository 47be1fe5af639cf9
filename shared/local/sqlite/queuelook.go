package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// What a queue holds (its depth, what is pending, when the next message is due), and moving
// messages back: a DLQ's to their queue (Redrive), a dead run's in flight (ReclaimInFlight).

// Depth counts the visible messages, and the in-flight or delayed ones.
func (q *Queue) Depth(ctx context.Context, name string) (visible, notVisible int, err error) {
	var exists int
	err = q.db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM queues WHERE name = ?`, name).Scan(&exists)
	if err == nil && exists == 0 {
		err = fmt.Errorf("%s: %w", name, queue.ErrNotFound)
	}
	if err == nil {
		err = q.db.r.QueryRowContext(ctx, `SELECT
			COALESCE(SUM(visible_at <= ?1), 0), COALESCE(SUM(visible_at > ?1), 0)
			FROM messages WHERE queue = ?2`, time.Now().UnixMilli(), name).Scan(&visible, &notVisible)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("depth of %s: %w", name, err)
	}
	return visible, notVisible, nil
}

// Pending counts the messages of the named queues, visible, in flight or delayed, in one look: a
// single statement reads one snapshot of the file, so a message moved from one of the queues to
// another while it counts is counted once, never missed. It fails if a name is not a queue.
func (q *Queue) Pending(ctx context.Context, names ...string) (int, error) {
	distinct := map[string]bool{}
	args := make([]any, len(names))
	for i, n := range names {
		distinct[n], args[i] = true, n
	}
	if len(names) == 0 {
		return 0, nil
	}
	in := "(?" + strings.Repeat(", ?", len(names)-1) + ")"
	var found, n int
	err := q.db.r.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM queues WHERE name IN `+in+`),
		(SELECT COUNT(*) FROM messages WHERE queue IN `+in+`)`, append(args, args...)...).Scan(&found, &n)
	if err == nil && found != len(distinct) {
		err = fmt.Errorf("%w: not every one is a queue", queue.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("pending messages of %s: %w", strings.Join(names, ", "), err)
	}
	return n, nil
}

// Redrive moves every visible message of dlq back to source, with its receive count reset.
// Messages in flight in dlq stay there.
func (q *Queue) Redrive(ctx context.Context, dlq, source string) (int, error) {
	var n int64
	err := q.db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		for _, name := range []string{dlq, source} {
			if _, err := q.loadConfig(ctx, name); err != nil {
				return err
			}
		}
		now := time.Now().UnixMilli()
		res, err := c.ExecContext(ctx, `UPDATE messages SET queue = ?, receives = 0, visible_at = ?, receipt = ''
			WHERE queue = ? AND visible_at <= ?`, source, now, dlq, now)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("redrive %s to %s: %w", dlq, source, err)
	}
	q.db.wake.notify(source)
	return int(n), nil
}

// ReclaimInFlight makes every message in flight in every queue visible now, as if the visibility
// timeouts of their receives had passed, and returns how many it made visible. Delayed messages,
// never received since they were sent, stay hidden until due. It is for a process that holds the
// state file alone (crawl run's lock on its state directory), before it receives: the receives it
// ends were made by a process that is gone, so no one is working on those messages.
func (q *Queue) ReclaimInFlight(ctx context.Context) (int, error) {
	var n int64
	err := q.db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		now := time.Now().UnixMilli()
		res, err := c.ExecContext(ctx, `UPDATE messages SET visible_at = ?, receipt = '' WHERE receipt != '' AND visible_at > ?`, now, now)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("reclaim the messages in flight: %w", err)
	}
	return int(n), nil
}

// NextDue is when the next hidden message (in flight or delayed) of the named queues becomes
// visible; the zero time when none is hidden.
func (q *Queue) NextDue(ctx context.Context, names ...string) (time.Time, error) {
	var next time.Time
	for _, name := range names {
		var ms sql.NullInt64
		err := q.db.r.QueryRowContext(ctx, `SELECT MIN(visible_at) FROM messages WHERE queue = ? AND visible_at > ?`,
			name, time.Now().UnixMilli()).Scan(&ms)
		if err != nil {
			return time.Time{}, fmt.Errorf("next due message of %s: %w", name, err)
		}
		if t := time.UnixMilli(ms.Int64); ms.Valid && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next, nil
}
