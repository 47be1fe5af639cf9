package crawlstate

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// The tests of the counters and the budget run on both adapters of the table port: here on the
// embedded SQLite table, and in integration_test.go on DynamoDB at the emulators' endpoint.

// tableTests are the tests that take their table from the caller.
var tableTests = []struct {
	name string
	fn   func(t *testing.T, tb table.Table)
}{
	{"CountersSumShards", testCountersSumShards},
	{"UnbufferedCountsGoToShards", testUnbufferedCountsGoToShards},
	{"BudgetInBlocks", testBudgetInBlocks},
	{"BudgetNeverExceededByConcurrentStores", testBudgetNeverExceeded},
	{"BudgetLeftUnusedByGoneStoresIsBounded", testBudgetLeftUnusedIsBounded},
	{"HostsFarFromTheirCapCostNoWrite", testHostsFarFromTheirCapCostNoWrite},
	{"HostBudgetLeftUnusedByGoneStoresIsBounded", testHostBudgetLeftUnusedIsBounded},
	{"ReplayedAllowanceCountsOnce", testReplayedAllowanceCountsOnce},
	{"PagesGivenBack", testPagesGivenBack},
	{"BudgetNeverExceededWithGiveBacks", testBudgetNeverExceededWithGiveBacks},
	{"Reopen", testReopen},
	{"RunState", testRunState},
	{"Outcomes", testOutcomes},
	{"AGroupOfTenIsSmall", testAGroupOfTenIsSmall},
	{"AFileIDTakenByAnotherFile", testAFileIDTakenByAnotherFile},
	{"ARunIsClaimedAndRecordedInWritesOfTen", testARunIsClaimedAndRecordedInWritesOfTen},
	{"TakenOverURLIsNotRecordedByItsOldOwner", testTakenOverURLIsNotRecordedByItsOldOwner},
	{"TallyReadsEachURLAsGetDoes", testTallyReadsEachURLAsGetDoes},
	{"ThrottledHostsAreNoted", testThrottledHostsAreNoted},
	{"HostNotesErased", testHostNotesErased},
	{"HostNotesKeepTheShardsSmall", testHostNotesKeepTheShardsSmall},
	{"EraseAndMovePage", testEraseAndMovePage},
	{"CircuitOpensAndAProbeClosesIt", testCircuitOpensAndAProbeClosesIt},
	{"DrainedCountsWhatIsLeft", testDrainedCountsWhatIsLeft},
	{"ManyLinksNamed", testManyLinksNamed},
	{"EndCountersFollowTheTally", testEndCountersFollowTheTally},
	{"ReplayedMarksCountOnce", testReplayedMarksCountOnce},
	{"TheEndGivesTheCrawlsItemsATimeToLive", testTheEndGivesTheCrawlsItemsATimeToLive},
	{"AStallIsDecidedOnceAndClearedByALaterStep", testAStallIsDecidedOnceAndClearedByALaterStep},
	{"AnExtensionHoldsTheEnd", testAnExtensionHoldsTheEnd},
	{"ReplayedRecord", testReplayedRecord},
	{"RecordAfterATakeoverStaysLost", testRecordAfterATakeoverStaysLost},
	{"ReplayedAdmission", testReplayedAdmission},
	{"ReplayedRefetch", testReplayedRefetch},
	{"ReplayedSkip", testReplayedSkip},
	{"ReplayedClaim", testReplayedClaim},
	{"ReplayedUnadmit", testReplayedUnadmit},
	{"HalfDoneUnadmitFinishes", testHalfDoneUnadmitFinishes},
	{"LostAdmissionCountsOnce", testLostAdmissionCountsOnce},
	{"FailedAdmissionCountsNothing", testFailedAdmissionCountsNothing},
	{"TwoDeliveriesTakeBackOneAdmission", testTwoDeliveriesTakeBackOneAdmission},
	{"UnadmitReplayedAfterAFreshAdmission", testUnadmitReplayedAfterAFreshAdmission},
	{"ReadmittedThenTakenBackIsAdmittedAgain", testReadmittedThenTakenBackIsAdmittedAgain},
	{"LostUnadmitUncountsOnce", testLostUnadmitUncountsOnce},
	{"LostRejectCountsOnce", testLostRejectCountsOnce},
	{"TwoOutcomesForOneKey", testTwoOutcomesForOneKey},
	{"JarSavesLoseNothing", testJarSavesLoseNothing},
	{"LoginsClaimOnceAndCount", testLoginsClaimOnceAndCount},
	{"ReplayedCounterWritesCountOnce", testReplayedCounterWritesCountOnce},
	{"ReplayedBudgetWritesCountOnce", testReplayedBudgetWritesCountOnce},
	{"ReplayedSlotWrites", testReplayedSlotWrites},
	{"ReplayedRejectAndReopen", testReplayedRejectAndReopen},
	{"ReplayedMovePage", testReplayedMovePage},
	{"ReplayedClaimOfARedrive", testReplayedClaimOfARedrive},
	{"PageGoneEndsTheURLFailedOnce", testPageGoneEndsTheURLFailedOnce},
	{"SeedProgressMovesOnce", testSeedProgressMovesOnce},
	{"ResponsesCountOnce", testResponsesCountOnce},
}

func TestCountersAndBudgetOnSQLite(t *testing.T) {
	for _, tt := range tableTests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			tt.fn(t, db.Table("t"))
		})
	}
}

// writeCount counts the writes (Put, Update, Delete) each key of the table it wraps receives.
type writeCount struct {
	table.Table
	mu sync.Mutex
	n  map[table.Key]int
}

func (w *writeCount) add(key table.Key) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n = map[table.Key]int{}
	}
	w.n[key]++
}

func (w *writeCount) writes(key table.Key) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[key]
}

func (w *writeCount) Put(ctx context.Context, key table.Key, it table.Item, c table.Cond) error {
	w.add(key)
	return w.Table.Put(ctx, key, it, c)
}

func (w *writeCount) Update(ctx context.Context, key table.Key, u table.Update, c table.Cond) (table.Item, error) {
	w.add(key)
	return w.Table.Update(ctx, key, u, c)
}

func (w *writeCount) Delete(ctx context.Context, key table.Key, c table.Cond) error {
	w.add(key)
	return w.Table.Delete(ctx, key, c)
}
