package crawlstate

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// A resumable tally. The drain checks run in the schedule function, which has 60 s, and the exact
// tally of a large crawl can take longer: DynamoDB Local serves a partition's Query at a few
// hundred items a second, and tallied a crawl of a million URLs in 248 s, 87 s of it in one
// partition. So a check tallies a step at a time (DrainedStep). A step reads the crawl's
// partitions for a time budget, each from after the last sort key the step before it read there
// (table.QueryAfter), and saves what the tally holds so far in the crawl's partitions; the next
// check's step loads it and goes on. The tally completes at the step that reads the last item of
// the last partition, and only a completed tally says what is left: a step that stops early says
// nothing of the crawl.
//
// The steps are given a basis, which the saved tally keeps: the crawl's end's counters, as a
// fingerprint (package finish). A step whose basis is not the saved one drops the saved tally and
// starts again from the first item, as does a step that finds it unreadable (a chunk gone, its
// digest wrong); DrainedStep says why (TallyStep.Dropped), for the check to warn. The crawl is
// tallied in steps only while its counters do not move between them (package finish says why that
// is as safe as one tally in one go).
//
// What is saved: the tally's counts, where it is in each partition (cursors), and its sets of
// 8-byte hashes (the parse marks, the pages read before their parse message's mark, the Links
// messages named and admitted), each sorted and written as varint deltas (tallystate.go). A tally
// of a million URLs holds some 1.5 million hashes, about 10 MB. It goes in chunks of
// tallyChunkBytes (base64 in one attribute, under DynamoDB's 400 KB an item), each in one of the
// crawl's partitions in turn, so that no partition takes the whole write:
//
//	c#<crawl>#<i mod Shards>  a#<gen>#<i>   chunk i of the state a step saved as gen
//
// Their kind, a#, sorts before every other kind of a crawl's items, and a tally's reads of a
// partition start after it (afterTallyKind): a tally never reads its own state. The chunks expire
// with the crawl's other items (expiry), are renewed with them (renew.go), and are deleted with
// them (a purge, the table's TTL). The head of the saved tally, which names its gen, is on the
// crawl item (attrTallyGen...): a step writes it last, on condition that it still names the gen
// the step loaded, and only then deletes the chunks of that gen. A step that dies halfway leaves
// the last saved tally whole (and chunks of its own unnamed, which expire); of two copies of one
// check stepping at once, one saves and the other deletes its chunks and is lost. A tally that
// completes, or starts again, deletes the saved one.

// The kind of a saved tally's chunks (see above), and the sort key a tally's read of a partition
// starts after: after every chunk's, before every other kind's.
const (
	tallyKind      = "a#"
	afterTallyKind = "a$"
)

// tallyChunkBytes is how much of a saved tally one item holds: in base64, 384 KiB, with its key
// and attribute names under DynamoDB's 400 KB an item.
const tallyChunkBytes = 288 << 10

// The crawl item's attributes of a saved tally (its head), and the chunk's one attribute.
const (
	attrTallyGen    = "tallyGen"    // the gen of the chunks (random)
	attrTallyChunks = "tallyChunks" // how many
	attrTallyBytes  = "tallyBytes"  // the state's length, decoded from base64
	attrTallySum    = "tallySum"    // its SHA-256, in hex
	attrTallyBasis  = "tallyBasis"  // the basis the steps were given
	attrTallySteps  = "tallySteps"  // the steps that made it
	attrChunk       = "d"
)

var tallyHeadAttrs = []string{attrTallyGen, attrTallyChunks, attrTallyBytes, attrTallySum, attrTallyBasis, attrTallySteps}

// TallyStep is what one step of a resumable tally did (DrainedStep).
type TallyStep struct {
	// Done: the tally completed, and Counters and Left are the crawl's, as Drained gives them.
	Done     bool
	Counters Counters
	Left     Left
	// Steps is how many steps the tally took so far, this one included; Read the items this one
	// read; Saved the bytes of the state it saved (none once Done).
	Steps int
	Read  int64
	Saved int
	// Dropped says why this step dropped a saved tally and started again from the first item
	// ("" when it did not): the basis moved, or the state could not be read.
	Dropped string
}

// cursor is where a tally is in one of the crawl's partitions: after the sort key After (""
// before every item), or Done with it.
type cursor struct {
	After string `json:"a,omitempty"`
	Done  bool   `json:"d,omitempty"`
}

// cursors are a tally's, one for each of the crawl's partitions.
type cursors [Shards]cursor

func (c *cursors) done() bool {
	for _, p := range c {
		if !p.Done {
			return false
		}
	}
	return true
}

// errStepDone is what a partition's query gets once the step's budget is spent.
var errStepDone = errors.New("the step's budget is spent")

// DrainedStep is one step of a resumable Drained (see above): it goes on with the crawl's saved
// tally if its basis is basis (and starts one otherwise), reads the crawl's partitions for about
// budget (and at least one item), and either completes the tally (Done, the saved one deleted) or
// saves it for the next step. The store's clock times the budget; WithTallyStepItems bounds the
// items a step reads besides.
func (s *URLs) DrainedStep(ctx context.Context, crawl string, basis int64, budget time.Duration) (TallyStep, error) {
	deadline := s.now().Add(budget)
	t, cur, saved, step, err := s.loadTally(ctx, crawl, basis)
	if err != nil {
		return TallyStep{}, err
	}
	step.Steps++
	limit := s.tallyItems
	step.Read, err = t.readParts(ctx, s.t, cur, deadline.Sub(s.now()), func(read int64) bool {
		return read > 0 && ((limit > 0 && read >= limit) || !s.now().Before(deadline))
	})
	if err != nil {
		return step, err
	}
	if !cur.done() {
		step.Saved, err = s.saveTally(ctx, crawl, basis, saved, t, cur, step.Steps)
		return step, err
	}
	t.countLeft()
	if step.Counters, step.Left, err = s.complete(ctx, t); err != nil {
		return step, err
	}
	if err := s.dropTally(ctx, crawl, saved); err != nil {
		return step, err
	}
	step.Done = true
	return step, nil
}

// DropTally deletes the crawl's saved tally, if it has one: its next step starts again.
func (s *URLs) DropTally(ctx context.Context, crawl string) error {
	it, err := s.t.Get(ctx, CrawlKey(crawl))
	if errors.Is(err, table.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("drop the tally of crawl %s: %w", crawl, err)
	}
	return s.dropTally(ctx, crawl, headOf(it))
}

// savedTally is the head of a saved tally, as the crawl item holds it; gen "" is none.
type savedTally struct {
	gen    string
	chunks int
	bytes  int64
	sum    string
	basis  int64
	steps  int
}

func headOf(it table.Item) savedTally {
	return savedTally{gen: it.String(attrTallyGen), chunks: int(it.Int(attrTallyChunks)), bytes: it.Int(attrTallyBytes),
		sum: it.String(attrTallySum), basis: it.Int(attrTallyBasis), steps: int(it.Int(attrTallySteps))}
}

// chunkKey is the key of chunk i of the saved tally gen.
func chunkKey(crawl, gen string, i int) table.Key {
	return table.Key{Part: crawlPart(crawl, i%Shards), Sort: tallyKind + gen + "#" + strconv.Itoa(i)}
}

// loadTally returns the crawl's saved tally if its basis is basis and it reads whole, and a new
// one otherwise (dropping the saved one: step.Dropped says why).
func (s *URLs) loadTally(ctx context.Context, crawl string, basis int64) (*tallier, *cursors, savedTally, TallyStep, error) {
	fresh := func() *tallier {
		t := newTallier(crawl, true)
		t.resumable()
		return t
	}
	var step TallyStep
	it, err := s.t.Get(ctx, CrawlKey(crawl))
	if errors.Is(err, table.ErrNotFound) {
		return fresh(), &cursors{}, savedTally{}, step, nil
	}
	if err != nil {
		return nil, nil, savedTally{}, step, fmt.Errorf("read the saved tally of crawl %s: %w", crawl, err)
	}
	saved := headOf(it)
	if saved.gen == "" {
		return fresh(), &cursors{}, saved, step, nil
	}
	if saved.basis != basis {
		step.Dropped = "the crawl's counters moved since the tally's last step"
	} else {
		b, err := s.readChunks(ctx, crawl, saved)
		var bad *badTally
		switch {
		case errors.As(err, &bad):
			step.Dropped = "the saved tally is unreadable: " + bad.Error()
		case err != nil:
			return nil, nil, savedTally{}, step, err
		default:
			t, cur := fresh(), &cursors{}
			if err := decodeTally(b, t, cur); err != nil {
				step.Dropped = "the saved tally is unreadable: " + err.Error()
				break
			}
			step.Steps = saved.steps
			return t, cur, saved, step, nil
		}
	}
	if err := s.dropTally(ctx, crawl, saved); err != nil {
		return nil, nil, savedTally{}, step, err
	}
	return fresh(), &cursors{}, savedTally{}, step, nil
}

// badTally is a saved tally that cannot be read: a chunk missing, or its digest wrong.
type badTally struct{ why string }

func (b *badTally) Error() string { return b.why }

// readChunks reads the saved tally's chunks and returns its state, checked against its head.
func (s *URLs) readChunks(ctx context.Context, crawl string, saved savedTally) ([]byte, error) {
	keys := make([]table.Key, saved.chunks)
	for i := range keys {
		keys[i] = chunkKey(crawl, saved.gen, i)
	}
	items, err := s.t.GetMany(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("read the saved tally of crawl %s: %w", crawl, err)
	}
	b := make([]byte, 0, saved.bytes)
	for i, k := range keys {
		it, ok := items[k]
		if !ok {
			return nil, &badTally{fmt.Sprintf("chunk %d of %d is missing", i, saved.chunks)}
		}
		if b, err = base64.StdEncoding.AppendDecode(b, []byte(it.String(attrChunk))); err != nil {
			return nil, &badTally{fmt.Sprintf("chunk %d: %v", i, err)}
		}
	}
	if sum := sha256.Sum256(b); int64(len(b)) != saved.bytes || hex.EncodeToString(sum[:]) != saved.sum {
		return nil, &badTally{fmt.Sprintf("%d bytes whose digest is not the head's (%d bytes)", len(b), saved.bytes)}
	}
	return b, nil
}

// saveTally saves the tally t, at cur, as a new gen, and names it in the crawl's item if that
// still names saved's; it then deletes saved's chunks. It returns the bytes saved, 0 when
// another step saved first (its chunks are deleted: the next step goes on from the other's).
func (s *URLs) saveTally(ctx context.Context, crawl string, basis int64, saved savedTally, t *tallier, cur *cursors, steps int) (int, error) {
	b, err := encodeTally(t, cur)
	if err != nil {
		return 0, fmt.Errorf("save the tally of crawl %s: %w", crawl, err)
	}
	expires, err := s.crawls.expiry(ctx, crawl)
	if err != nil {
		return 0, err
	}
	next := savedTally{gen: randomTag(), chunks: (len(b) + tallyChunkBytes - 1) / tallyChunkBytes, bytes: int64(len(b)), basis: basis, steps: steps}
	sum := sha256.Sum256(b)
	next.sum = hex.EncodeToString(sum[:])
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(renewWidth)
	for i := range next.chunks {
		part := b[i*tallyChunkBytes : min(len(b), (i+1)*tallyChunkBytes)]
		g.Go(func() error {
			return s.t.Put(gctx, chunkKey(crawl, next.gen, i), table.Item{attrChunk: base64.StdEncoding.EncodeToString(part),
				table.TTLAttr: expires}, table.Cond{})
		})
	}
	if err := g.Wait(); err != nil {
		return 0, fmt.Errorf("save the tally of crawl %s: %w", crawl, err)
	}
	was := table.NotExists(attrTallyGen)
	if saved.gen != "" {
		was = table.Eq(attrTallyGen, saved.gen)
	}
	_, err = s.t.Update(ctx, CrawlKey(crawl), table.Update{Set: map[string]any{
		attrTallyGen: next.gen, attrTallyChunks: int64(next.chunks), attrTallyBytes: next.bytes, attrTallySum: next.sum,
		attrTallyBasis: basis, attrTallySteps: int64(steps),
	}}, table.And(table.ItemExists(), was))
	if cf, lost := table.IsConditionFailed(err); lost && cf.Item.String(attrTallyGen) != next.gen {
		return 0, s.deleteChunks(ctx, crawl, next)
	} else if lost {
		err = nil // its own write, sent again because its answer was lost
	}
	if err != nil {
		return 0, fmt.Errorf("save the tally of crawl %s: %w", crawl, err)
	}
	return len(b), s.deleteChunks(ctx, crawl, saved)
}

// dropTally deletes the saved tally: its head, if the crawl item still names it, then its chunks.
func (s *URLs) dropTally(ctx context.Context, crawl string, saved savedTally) error {
	if saved.gen == "" {
		return nil
	}
	_, err := s.t.Update(ctx, CrawlKey(crawl), table.Update{Remove: tallyHeadAttrs}, table.Eq(attrTallyGen, saved.gen))
	if _, moved := table.IsConditionFailed(err); err != nil && !moved {
		return fmt.Errorf("drop the tally of crawl %s: %w", crawl, err)
	}
	return s.deleteChunks(ctx, crawl, saved)
}

// deleteChunks deletes the chunks of the saved tally, which nothing names any more.
func (s *URLs) deleteChunks(ctx context.Context, crawl string, saved savedTally) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(renewWidth)
	for i := range saved.chunks {
		g.Go(func() error { return s.t.Delete(gctx, chunkKey(crawl, saved.gen, i), table.Cond{}) })
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("delete the saved tally %s of crawl %s: %w", saved.gen, crawl, err)
	}
	return nil
}

// readParts reads the crawl's partitions that cur has not done, each from after its cursor,
// queryWidth at once, and counts their items, until every one is done or stop says so (before
// an item, given the items read so far); it moves cur, and returns how many items it read. fn is
// called for one item at a time, as EachInCrawl calls it.
//
// With cut above 0, the reads still waiting for a page once cut has passed (and an item was read)
// are cancelled: a page of a slow table (DynamoDB Local's 1 MB took a minute on a loaded machine)
// would otherwise hold the step past its budget, and past the function's timeout. The items of a
// page cancelled were not counted, and the cursors stay at the last item counted.
func (t *tallier) readParts(ctx context.Context, tb table.Table, cur *cursors, cut time.Duration, stop func(read int64) bool) (int64, error) {
	readCtx, cancelRead := context.WithCancel(ctx)
	defer cancelRead()
	g, gctx := errgroup.WithContext(readCtx)
	g.SetLimit(queryWidth)
	var mu sync.Mutex
	var read int64
	var fnErr error
	cutNow := false // cut has passed with no item read: cancel at the first
	if cut > 0 {
		timer := time.AfterFunc(cut, func() {
			mu.Lock()
			defer mu.Unlock()
			if read > 0 {
				cancelRead()
			}
			cutNow = true
		})
		defer timer.Stop()
	}
	var todo []int
	for n := range cur {
		if !cur[n].Done {
			todo = append(todo, n)
		}
	}
	for _, n := range todo {
		g.Go(func() error {
			mu.Lock()
			stopped, after := fnErr != nil || stop(read), cur[n].After
			mu.Unlock()
			if stopped {
				return nil
			}
			if after == "" {
				after = afterTallyKind
			}
			err := tb.QueryAfter(gctx, crawlPart(t.crawl, n), "", after, func(sort string, it table.Item) error {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case fnErr != nil:
					return errStopped
				case stop(read):
					return errStepDone
				}
				if err := t.item(sort, it); err != nil {
					fnErr = err
					return err
				}
				cur[n].After = sort
				if read++; cutNow {
					cancelRead()
				}
				return nil
			})
			switch {
			case err == nil:
				mu.Lock()
				cur[n].Done = true
				mu.Unlock()
				return nil
			case errors.Is(err, errStepDone), readCtx.Err() != nil && ctx.Err() == nil:
				return nil // the step's budget is spent: the partition goes on at the next
			}
			return err
		})
	}
	err := g.Wait()
	if fnErr != nil {
		return read, fmt.Errorf("tally crawl %s: %w", t.crawl, fnErr)
	}
	if err != nil {
		return read, fmt.Errorf("tally crawl %s: %w", t.crawl, err)
	}
	return read, nil
}
