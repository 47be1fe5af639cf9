package costrun

// The reports as JSON (crawlcost -json FILE), and the lines the profiles add to the printed
// report.

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"
)

// ReportJSON is one crawl's report as crawlcost -json writes it: every billed unit (the fields of
// cost.Units), per page too, and the dollars per million pages of every item of cost.Costs and
// their total, at the prices the table was printed with.
type ReportJSON struct {
	Name           string  `json:"name"`
	Web            string  `json:"web"`
	Pages          int     `json:"pages"`
	Twice          int     `json:"fetchedTwice"`
	Hosts          int     `json:"hosts"`
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	// LargestHostSeconds is how long the largest host's pages took, from the first requested to
	// the last, where the web can tell (the realistic crawl), and LargestHostPages their requests.
	LargestHostSeconds float64 `json:"largestHostSeconds,omitempty"`
	LargestHostPages   int     `json:"largestHostPages,omitempty"`
	// Units are the crawl's billed units by cost.Units field, and UnitsPerPage the same per page.
	Units        map[string]float64 `json:"units"`
	UnitsPerPage map[string]float64 `json:"unitsPerPage"`
	// USDPerMillionPages is each cost.Costs item per million pages, "Total" included.
	USDPerMillionPages map[string]float64 `json:"usdPerMillionPages"`
	// LedgerUSDPerMillionPages is the crawl's own ledger (its record) at the same prices.
	LedgerUSDPerMillionPages float64 `json:"ledgerUsdPerMillionPages"`
	// WriteUnitsPerPage are the table's write units a page by kind of item (crawlstate.KindOf).
	WriteUnitsPerPage map[string]float64 `json:"writeUnitsPerPage,omitempty"`
	HistoryItems      int                `json:"historyItems"`
	EndsAnnounced     int                `json:"endsAnnounced"`
	Pollers           int                `json:"pollers,omitempty"`
}

// JSON returns r as crawlcost -json writes it, at prices p.
func (r Report) JSON(p cost.Prices) (ReportJSON, error) {
	units, err := numbers(r.Units)
	if err != nil {
		return ReportJSON{}, fmt.Errorf("units: %w", err)
	}
	usd, err := numbers(p.Cost(r.Units))
	if err != nil {
		return ReportJSON{}, fmt.Errorf("costs: %w", err)
	}
	pages := float64(max(r.Pages, 1))
	out := ReportJSON{Name: r.Name, Web: r.Web, Pages: r.Pages, Twice: r.Twice, Hosts: r.Hosts, ElapsedSeconds: r.Elapsed.Seconds(),
		Units: units, UnitsPerPage: map[string]float64{}, USDPerMillionPages: map[string]float64{},
		LedgerUSDPerMillionPages: p.Cost(r.Ledger).Total / pages * 1e6, HistoryItems: r.History.Items, EndsAnnounced: len(r.Ends),
		Pollers: r.Pollers, LargestHostSeconds: r.Largest.Last.Sub(r.Largest.First).Seconds(), LargestHostPages: r.Largest.Requests}
	for k, v := range units {
		out.UnitsPerPage[k] = v / pages
	}
	if len(r.WriteUnits) > 0 {
		out.WriteUnitsPerPage = map[string]float64{}
		for k, v := range r.WriteUnits {
			out.WriteUnitsPerPage[k] = v / pages
		}
	}
	for k, v := range usd {
		out.USDPerMillionPages[k] = v / pages * 1e6
	}
	return out, nil
}

// numbers returns the numeric fields of a struct by name, through its JSON encoding: a field
// that cost.Units or cost.Costs gains shows here without a change.
func numbers(v any) (map[string]float64, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var all map[string]any
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, k := range slices.Sorted(maps.Keys(all)) {
		if f, ok := all[k].(float64); ok {
			out[k] = f
		}
	}
	return out, nil
}

// WriteJSON writes the reports as a JSON array of ReportJSON, at prices p.
func WriteJSON(w io.Writer, reports []Report, p cost.Prices) error {
	out := make([]ReportJSON, 0, len(reports))
	for _, r := range reports {
		j, err := r.JSON(p)
		if err != nil {
			return fmt.Errorf("%s crawl: %w", r.Name, err)
		}
		out = append(out, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// writeJSONFile writes the reports to the file at path (WriteJSON).
func writeJSONFile(path string, reports []Report, p cost.Prices) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteJSON(f, reports, p); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// PrintProfile writes what the profile of r adds to its printed report: the web it crawled, the
// crawl's end as its drain checks announced it, and the pollers that AWS would run.
func (r Report) PrintProfile(w io.Writer) {
	if r.Web != "" {
		fmt.Fprintf(w, "the web: %s\n", r.Web)
	}
	for _, e := range r.Ends {
		fmt.Fprintf(w, "the drain checks announced the crawl's end: %s, %d URLs fetched, at %s\n", e.End, e.Counts.Fetched,
			e.FinishedAt.Format(time.TimeOnly))
	}
	if r.Pollers > 0 {
		fmt.Fprintf(w, "pollers: AWS runs %d an event source mapping with maximum concurrency set; the local runner receives with one a batch "+
			"in flight, so the receives of the others are not in these figures\n", r.Pollers)
	}
}
