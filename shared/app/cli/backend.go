package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/secretref"
	"github.com/crawlstack/crawlstack/shared/local/fileblob"
	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/port/blob"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Backend is one family of adapters with the admin rights the runner needs to set itself up.
type Backend struct {
	Name  string
	Queue interface {
		queue.Sender
		queue.Receiver
		queue.Admin
	}
	Table interface {
		table.Table
		table.Admin
	}
	Blobs interface {
		blob.Store
		blob.Admin
		blob.Deleter
	}
	// Secrets, when set, reads ssm: and secretsmanager: references of crawl specs' secret
	// headers (the AWS backend); nil: crawl run reads env: and file: ones only.
	Secrets secretref.Resolver
	// TableName and Bucket name the table and bucket the adapters use.
	TableName, Bucket string
	// QueuePrefix starts the name of every queue Setup creates.
	QueuePrefix string
	// SeedsPrefix is where `crawl run` drops the seed file ("seeds/" when empty).
	SeedsPrefix string
	// Existing, when set, are queues that already exist (a deployed stack): Setup creates none.
	Existing *Resources
	// Find, when set, looks a queue up by name without creating it (for redrive).
	Find func(ctx context.Context, name string) (string, error)
	// Where tells a person where the results are.
	Where func(prefix string) string
	// Exists, when set, says whether anything is stored where Where points (the embedded
	// backend's directories); without it, a crawl that fetched no page is taken to have stored none.
	Exists func(where string) bool
	Close  func() error
	// Compact, when set, rewrites the backend's own files without the rows deleted from them (the
	// embedded backend's SQLite file keeps a deleted row on a free page and in its log until
	// they are written again); crawl purge runs it after an erasure.
	Compact func(ctx context.Context) error
	// IdleCheck is how often the runner looks whether the crawl is done (0: localrun's
	// default). Looking asks every queue for its depth, so it is often only where that is free.
	IdleCheck time.Duration
	// SyncsFiles is whether the backend's stores sync files to disk (the embedded backend's
	// SQLite file and blob files), which blocks a thread in the kernel for each sync.
	SyncsFiles bool
	// Active, when set, says whether a crawl run is working on the backend's state now (the
	// embedded backend's lock on its state directory); without it, that is not known.
	Active func() bool
	// Metered is whether the backend's clients are metered (meter.Register), so that a run can
	// keep its crawl's ledger and hold it to a budget.
	Metered bool
}

// embeddedIdleCheck is IdleCheck on the embedded backend, where a look is a local query: a crawl
// ends at most about two of them after its last page.
const embeddedIdleCheck = 20 * time.Millisecond

// Resources are the names of the crawl's queues, table and bucket in a backend.
type Resources struct {
	Schedule, Fetch, Parse          string // queue addresses
	ScheduleDLQ, FetchDLQ, ParseDLQ string
	// Render and RenderDLQ are the render step's queues: empty for a deployed stack without one.
	Render, RenderDLQ string
	// FetchSlow is the slow lane's queue, for the runs of polite hosts (pipeline.Config.SlowQueue):
	// its dead-letter queue is fetch's, FetchDLQ. Empty for a deployed stack without one.
	FetchSlow string
}

// stateFile is the SQLite file of an embedded state directory: its queues and table.
const stateFile = "state.db"

// OpenEmbedded opens the embedded backend on a state directory.
func OpenEmbedded(dir string) (*Backend, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	db, err := sqlite.Open(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", dir, err)
	}
	blobDir := filepath.Join(dir, "blobs")
	store, err := fileblob.New(blobDir)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open blob store %s: %w", blobDir, err)
	}
	return &Backend{
		Name: "embedded", Queue: db.Queue(), Table: db.Table("crawl"), Blobs: store,
		TableName: "crawl", Bucket: "crawl",
		Where: func(prefix string) string { return filepath.Join(blobDir, filepath.FromSlash(prefix)) },
		Exists: func(where string) bool {
			_, err := os.Stat(where)
			return err == nil
		},
		Close:      db.Close,
		Active:     func() bool { return runActive(dir) },
		Compact:    func(ctx context.Context) error { return sqlite.Vacuum(ctx, filepath.Join(dir, stateFile)) },
		IdleCheck:  embeddedIdleCheck,
		SyncsFiles: true,
	}, nil
}

// QueueSettings are the queues' settings, as the CDK stack sets them on AWS.
type QueueSettings struct {
	Visibility      time.Duration
	MaxReceiveCount int
}

// Setup creates the queues (each with its DLQ), the table and the bucket if they do not exist.
func (b *Backend) Setup(ctx context.Context, s QueueSettings) (Resources, error) {
	if b.Existing != nil {
		return *b.Existing, nil
	}
	var r Resources
	namePrefix := b.QueuePrefix
	mk := func(name string, dst, dlq *string) error {
		d, err := b.Queue.CreateQueue(ctx, namePrefix+name+"-dlq", queue.Config{Visibility: s.Visibility})
		if err != nil {
			return fmt.Errorf("create queue %s-dlq: %w", name, err)
		}
		q, err := b.Queue.CreateQueue(ctx, namePrefix+name, queue.Config{Visibility: s.Visibility, DeadLetter: d,
			MaxReceiveCount: s.MaxReceiveCount})
		if err != nil {
			return fmt.Errorf("create queue %s: %w", name, err)
		}
		*dst, *dlq = q, d
		return nil
	}
	if err := mk("schedule", &r.Schedule, &r.ScheduleDLQ); err != nil {
		return r, err
	}
	if err := mk("fetch", &r.Fetch, &r.FetchDLQ); err != nil {
		return r, err
	}
	// The slow lane shares fetch's dead-letter queue, as in the stack (one alarm for both).
	q, err := b.Queue.CreateQueue(ctx, namePrefix+"fetchslow", queue.Config{Visibility: s.Visibility, DeadLetter: r.FetchDLQ,
		MaxReceiveCount: s.MaxReceiveCount})
	if err != nil {
		return r, fmt.Errorf("create queue fetchslow: %w", err)
	}
	r.FetchSlow = q
	if err := mk("parse", &r.Parse, &r.ParseDLQ); err != nil {
		return r, err
	}
	if err := mk("render", &r.Render, &r.RenderDLQ); err != nil {
		return r, err
	}
	// The adapters' errors already name the table or bucket.
	if err := b.Table.CreateTable(ctx, b.TableName); err != nil {
		return r, err
	}
	if err := b.Blobs.CreateBucket(ctx, b.Bucket); err != nil {
		return r, err
	}
	return r, nil
}

// spareProc gives the Go scheduler one processor (P) more than it has, unless the GOMAXPROCS
// environment variable sets the number, and returns what gives it back. A goroutine that syncs a
// file holds its P while the kernel writes (a millisecond or so), until the runtime's monitor
// hands the P to another thread; with the embedded backend's thousands of syncs per crawl, the
// cores sat idle while goroutines were ready to run: busy 81% of the time. With a spare P they
// were busy 87% and a 10,000-page crawl took about 7% less time (docs/bench-history.md, round eight).
// Runs in one process (tests) share the one spare P.
func spareProc() (giveBack func()) {
	if os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	spare.Lock()
	defer spare.Unlock()
	if spare.users++; spare.users == 1 {
		spare.was = runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			spare.Lock()
			defer spare.Unlock()
			if spare.users--; spare.users == 0 {
				runtime.GOMAXPROCS(spare.was)
			}
		})
	}
}

// spare counts the runs sharing the spare P, and keeps the number of Ps from before it.
var spare struct {
	sync.Mutex
	users, was int
}
