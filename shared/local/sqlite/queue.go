package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/queue"
)

var (
	_ queue.Sender   = (*Queue)(nil)
	_ queue.Receiver = (*Queue)(nil)
	_ queue.Admin    = (*Queue)(nil)
)

// maxBody is SQS's largest message body (1 MiB since August 2025).
const maxBody = 1 << 20

// crossProcessPoll bounds how long a long poll sleeps without a wake-up: sends from another
// process sharing the file cannot reach this process's notifier.
const crossProcessPoll = time.Second

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// Queue is the embedded SQS-like queue store. Queue addresses are the queue names.
//
// Semantics kept from SQS standard queues: a message stays invisible for the visibility
// timeout after each receive; every receive counts (ChangeVisibility does not); a receive that
// would take a message past MaxReceiveCount moves it to the dead-letter queue instead of
// returning it; per-message delays hide a message until due. Receive handles are per receive:
// Delete with a stale handle (the message was received again since) deletes nothing and returns
// nil, and so does Delete of a message that is already gone; ChangeVisibility with a stale handle
// returns an error, as SQS does.
type Queue struct {
	db *DB

	insert, selectDue, nextDue, config, markReceived, toDLQ, del, changeVis *sql.Stmt
	peek                                                                    *sql.Stmt // on the readers
}

func newQueue(db *DB) (*Queue, error) {
	q := &Queue{db: db}
	err := db.prepareAll([]prepared{
		{&q.insert, `INSERT INTO messages (queue, body, sent_at, visible_at, attrs) VALUES (?, ?, ?, ?, ?)`},
		{&q.selectDue, `SELECT id, body, sent_at, receives, attrs FROM messages
			WHERE queue = ? AND visible_at <= ? ORDER BY visible_at, id LIMIT ?`},
		{&q.nextDue, `SELECT MIN(visible_at) FROM messages WHERE queue = ? AND visible_at > ?`},
		{&q.config, `SELECT visibility, dlq, max_receive FROM queues WHERE name = ?`},
		{&q.markReceived, `UPDATE messages SET receives = receives + 1, visible_at = ?, receipt = ? WHERE id = ?`},
		{&q.toDLQ, `UPDATE messages SET queue = ?, receives = 0, visible_at = ?, receipt = '' WHERE id = ?`},
		{&q.del, `DELETE FROM messages WHERE id = ? AND queue = ? AND receipt = ?`},
		{&q.changeVis, `UPDATE messages SET visible_at = ? WHERE id = ? AND queue = ? AND receipt = ? AND visible_at > ?`},
	})
	if err != nil {
		return nil, fmt.Errorf("prepare queue statement: %w", err)
	}
	q.peek, err = db.r.Prepare(`SELECT
		EXISTS (SELECT 1 FROM queues WHERE name = ?1),
		EXISTS (SELECT 1 FROM messages WHERE queue = ?1 AND visible_at <= ?2),
		(SELECT MIN(visible_at) FROM messages WHERE queue = ?1 AND visible_at > ?2)`)
	if err != nil {
		return nil, fmt.Errorf("prepare queue statement: %w", err)
	}
	return q, nil
}

type queueConfig struct {
	visibility time.Duration
	dlq        string
	maxReceive int
}

// CreateQueue creates the queue, or updates its configuration if it exists, and returns its
// address (its name). The dead-letter queue must exist first.
func (q *Queue) CreateQueue(ctx context.Context, name string, cfg queue.Config) (string, error) {
	if !validName.MatchString(name) {
		return "", fmt.Errorf("create queue %q: a name is 1 to 80 characters of [A-Za-z0-9_-]", name)
	}
	if cfg.DeadLetter != "" && cfg.MaxReceiveCount < 1 {
		return "", fmt.Errorf("create queue %s: a dead-letter queue needs MaxReceiveCount >= 1", name)
	}
	err := q.db.write(ctx, func(ctx context.Context, c *sql.Conn) error {
		if cfg.DeadLetter != "" {
			if _, err := q.loadConfig(ctx, cfg.DeadLetter); err != nil {
				return fmt.Errorf("dead-letter queue: %w", err)
			}
		}
		_, err := c.ExecContext(ctx, `INSERT INTO queues (name, visibility, dlq, max_receive) VALUES (?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET visibility = excluded.visibility, dlq = excluded.dlq,
			max_receive = excluded.max_receive`,
			name, cfg.Visibility.Milliseconds(), cfg.DeadLetter, cfg.MaxReceiveCount)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("create queue %s: %w", name, err)
	}
	return name, nil
}

func (q *Queue) loadConfig(ctx context.Context, name string) (queueConfig, error) {
	var c queueConfig
	var visMS int64
	err := q.config.QueryRowContext(ctx, name).Scan(&visMS, &c.dlq, &c.maxReceive)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("%s: %w", name, queue.ErrNotFound)
	}
	if err != nil {
		return c, fmt.Errorf("read config of %s: %w", name, err)
	}
	c.visibility = time.Duration(visMS) * time.Millisecond
	return c, nil
}

// SendBatch sends every valid entry in one transaction. Invalid entries (empty id, empty or
// oversized body, delay out of range) are not sent; a batch with a duplicate id is not sent at
// all (SQS's BatchEntryIdsNotDistinct); nothing is sent when the transaction fails. The error
// then wraps a *queue.BatchError naming every entry not sent, so that a caller who resends
// exactly those loses nothing.
func (q *Queue) SendBatch(ctx context.Context, name string, entries []queue.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	failed := map[string]error{}
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		if seen[e.ID] {
			for _, e := range entries {
				failed[e.ID] = fmt.Errorf("entry ids are not distinct (%q repeats)", e.ID)
			}
			return fmt.Errorf("send to %s: %w", name, &queue.BatchError{Failed: failed})
		}
		seen[e.ID] = true
	}
	valid := make([]queue.Entry, 0, len(entries))
	for i, e := range entries {
		id := e.ID
		var bad error
		switch {
		case id == "":
			id, bad = "#"+strconv.Itoa(i), errors.New("empty entry id")
		case e.Delay < 0 || e.Delay > queue.MaxDelay:
			bad = fmt.Errorf("delay %v outside [0, %v]", e.Delay, queue.MaxDelay)
		case len(e.Body) > maxBody:
			bad = fmt.Errorf("body of %d bytes over %d", len(e.Body), maxBody)
		case e.Body == "":
			bad = errors.New("empty body")
		case len(e.Attributes) > queue.MaxAttributes:
			bad = fmt.Errorf("%d message attributes over %d", len(e.Attributes), queue.MaxAttributes)
		}
		if bad != nil {
			failed[id] = bad
			continue
		}
		valid = append(valid, e)
	}
	if len(valid) > 0 {
		now := time.Now()
		err := q.db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
			if _, err := q.loadConfig(ctx, name); err != nil {
				return err
			}
			for _, e := range valid {
				attrs, err := encodeAttrs(e.Attributes)
				if err != nil {
					return fmt.Errorf("attributes of %s: %w", e.ID, err)
				}
				if _, err := q.insert.ExecContext(ctx, name, e.Body, now.UnixMilli(), now.Add(e.Delay).UnixMilli(), attrs); err != nil {
					return fmt.Errorf("insert %s: %w", e.ID, err)
				}
			}
			return nil
		})
		if err != nil {
			for _, e := range valid {
				failed[e.ID] = err
			}
			return fmt.Errorf("send to %s: %w", name, errors.Join(err, &queue.BatchError{Failed: failed}))
		}
		q.db.wake.notify(name)
	}
	if len(failed) > 0 {
		return fmt.Errorf("send to %s: %w", name, &queue.BatchError{Failed: failed})
	}
	return nil
}

// Receive returns up to max messages, long-polling up to wait for the first. A visibility of 0
// means the queue's default visibility timeout.
func (q *Queue) Receive(ctx context.Context, name string, maxMsgs int, visibility, wait time.Duration) ([]queue.Message, error) {
	if maxMsgs < 1 || maxMsgs > queue.MaxBatch {
		return nil, fmt.Errorf("receive from %s: max %d outside [1, %d]", name, maxMsgs, queue.MaxBatch)
	}
	deadline := time.Now().Add(wait)
	for {
		woken := q.db.wake.watch(name)
		msgs, next, err := q.receiveOnce(ctx, name, maxMsgs, visibility)
		if err != nil || len(msgs) > 0 {
			return msgs, err
		}
		now := time.Now()
		if !now.Before(deadline) {
			return nil, nil
		}
		sleep := min(deadline.Sub(now), crossProcessPoll)
		if !next.IsZero() {
			sleep = min(sleep, max(next.Sub(now), time.Millisecond))
		}
		timer := time.NewTimer(sleep)
		select {
		case <-woken:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("receive from %s: %w", name, ctx.Err())
		}
		timer.Stop()
	}
}

// receiveOnce receives what is due now. next is when the next hidden message becomes due
// (zero if none).
func (q *Queue) receiveOnce(ctx context.Context, name string, max int, visibility time.Duration) (msgs []queue.Message, next time.Time, err error) {
	// Look first on a reader, so that polls of an idle queue do not take the write lock.
	var exists, due bool
	var nextMS sql.NullInt64
	if err := q.peek.QueryRowContext(ctx, name, time.Now().UnixMilli()).Scan(&exists, &due, &nextMS); err != nil {
		return nil, time.Time{}, fmt.Errorf("receive from %s: %w", name, err)
	}
	if exists && !due {
		if nextMS.Valid {
			next = time.UnixMilli(nextMS.Int64)
		}
		return nil, next, nil
	}
	var movedTo string
	err = q.db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		msgs, next, movedTo = nil, time.Time{}, ""
		cfg, err := q.loadConfig(ctx, name)
		if err != nil {
			return err
		}
		if visibility <= 0 {
			visibility = cfg.visibility
		}
		now := time.Now()
		for len(msgs) < max {
			due, err := q.dueRows(ctx, name, now, max-len(msgs))
			if err != nil {
				return err
			}
			if len(due) == 0 {
				break
			}
			for _, r := range due {
				if cfg.dlq != "" && cfg.maxReceive > 0 && r.receives >= cfg.maxReceive {
					if _, err := q.toDLQ.ExecContext(ctx, cfg.dlq, now.UnixMilli(), r.id); err != nil {
						return fmt.Errorf("move message %d to %s: %w", r.id, cfg.dlq, err)
					}
					movedTo = cfg.dlq
					continue
				}
				m, err := q.receiveRow(ctx, r, now.Add(visibility))
				if err != nil {
					return err
				}
				msgs = append(msgs, m)
			}
		}
		if len(msgs) == 0 {
			var nextMS sql.NullInt64
			if err := q.nextDue.QueryRowContext(ctx, name, now.UnixMilli()).Scan(&nextMS); err != nil {
				return fmt.Errorf("next due message: %w", err)
			}
			if nextMS.Valid {
				next = time.UnixMilli(nextMS.Int64)
			}
		}
		return nil
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("receive from %s: %w", name, err)
	}
	if movedTo != "" {
		q.db.wake.notify(movedTo)
	}
	return msgs, next, nil
}

// dueRow is a message due to be received, as stored.
type dueRow struct {
	id       int64
	body     string
	sentAt   int64
	receives int
	attrs    string
}

// dueRows selects up to n messages of the queue name that are due at now.
func (q *Queue) dueRows(ctx context.Context, name string, now time.Time, n int) ([]dueRow, error) {
	rows, err := q.selectDue.QueryContext(ctx, name, now.UnixMilli(), n)
	if err != nil {
		return nil, fmt.Errorf("select due messages: %w", err)
	}
	var due []dueRow
	for rows.Next() {
		var r dueRow
		if err := rows.Scan(&r.id, &r.body, &r.sentAt, &r.receives, &r.attrs); err != nil {
			rows.Close()
			return nil, fmt.Errorf("scan message: %w", err)
		}
		due = append(due, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("select due messages: %w", err)
	}
	return due, nil
}

// receiveRow marks the message r received with a new receipt, hidden until visibleAt, and
// returns it as received.
func (q *Queue) receiveRow(ctx context.Context, r dueRow, visibleAt time.Time) (queue.Message, error) {
	receipt, err := newReceipt(r.id)
	if err != nil {
		return queue.Message{}, err
	}
	if _, err := q.markReceived.ExecContext(ctx, visibleAt.UnixMilli(), receipt, r.id); err != nil {
		return queue.Message{}, fmt.Errorf("mark message %d received: %w", r.id, err)
	}
	attrs, err := decodeAttrs(r.attrs)
	if err != nil {
		return queue.Message{}, fmt.Errorf("attributes of message %d: %w", r.id, err)
	}
	return queue.Message{
		ID:            strconv.FormatInt(r.id, 10),
		ReceiptHandle: receipt,
		Body:          r.body,
		ReceiveCount:  r.receives + 1,
		SentAt:        time.UnixMilli(r.sentAt),
		Attributes:    attrs,
	}, nil
}

// encodeAttrs stores message attributes as a JSON object (” for none).
func encodeAttrs(attrs map[string]string) (string, error) {
	if len(attrs) == 0 {
		return "", nil
	}
	b, err := json.Marshal(attrs)
	return string(b), err
}

// decodeAttrs reads what encodeAttrs stored.
func decodeAttrs(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	var attrs map[string]string
	if err := json.Unmarshal([]byte(s), &attrs); err != nil {
		return nil, err
	}
	return attrs, nil
}

// newReceipt returns a fresh receipt handle for message id: "<id>.<random>".
func newReceipt(id int64) (string, error) {
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("receipt handle: %w", err)
	}
	return strconv.FormatInt(id, 10) + "." + hex.EncodeToString(r[:]), nil
}

func parseReceipt(handle string) (int64, error) {
	idText, _, ok := strings.Cut(handle, ".")
	id, err := strconv.ParseInt(idText, 10, 64)
	if !ok || err != nil {
		return 0, fmt.Errorf("invalid receipt handle %q", handle)
	}
	return id, nil
}

// Delete removes the message received with receiptHandle. A stale handle (the message has been
// received again since) or a message already deleted is not an error and deletes nothing.
func (q *Queue) Delete(ctx context.Context, name, receiptHandle string) error {
	id, err := parseReceipt(receiptHandle)
	if err != nil {
		return fmt.Errorf("delete from %s: %w", name, err)
	}
	err = q.db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		_, err := q.del.ExecContext(ctx, id, name, receiptHandle)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete from %s: %w", name, err)
	}
	return nil
}

// DeleteBatch removes the messages received with receiptHandles, in one transaction. Like Delete,
// a stale handle deletes nothing and is no error; a malformed one fails alone.
func (q *Queue) DeleteBatch(ctx context.Context, name string, receiptHandles []string) error {
	failed := map[string]error{}
	ids := make([]int64, len(receiptHandles))
	for i, h := range receiptHandles {
		id, err := parseReceipt(h)
		if err != nil {
			failed[h] = err
		}
		ids[i] = id
	}
	err := q.db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		for i, h := range receiptHandles {
			if failed[h] != nil {
				continue
			}
			if _, err := q.del.ExecContext(ctx, ids[i], name, h); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete from %s: %w", name, err)
	}
	if len(failed) > 0 {
		return fmt.Errorf("delete from %s: %w", name, &queue.BatchError{Failed: failed})
	}
	return nil
}

// ChangeVisibility makes the message visible again after timeout (0: now). It does not count
// as a receive. A stale handle is an error.
func (q *Queue) ChangeVisibility(ctx context.Context, name, receiptHandle string, timeout time.Duration) error {
	id, err := parseReceipt(receiptHandle)
	if err != nil {
		return fmt.Errorf("change visibility in %s: %w", name, err)
	}
	if timeout < 0 {
		timeout = 0
	}
	err = q.db.write(ctx, func(ctx context.Context, _ *sql.Conn) error {
		now := time.Now()
		res, err := q.changeVis.ExecContext(ctx, now.Add(timeout).UnixMilli(), id, name, receiptHandle, now.UnixMilli())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return fmt.Errorf("message %d is not in flight (gone, released, or received again since)", id)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("change visibility in %s: %w", name, err)
	}
	if timeout == 0 {
		q.db.wake.notify(name)
	}
	return nil
}
