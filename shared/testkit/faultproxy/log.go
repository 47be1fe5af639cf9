package faultproxy

import (
	"fmt"
	"maps"
	"strings"
	"time"
)

// Fault is one fault the proxy injected.
type Fault struct {
	Seed uint64
	// Seq is the sequence number of the request it hit.
	Seq     uint64
	Time    time.Time
	Service Service
	Op      string
	Kind    Kind
	// Target is the table and key, bucket and object, or queue the request was about.
	Target string
	// Detail says what the emulator answered, or which message was doubled.
	Detail string
}

func (f Fault) String() string {
	s := fmt.Sprintf("%s seed=%d seq=%d %s %s %s %s", f.Time.Format("15:04:05.000"), f.Seed, f.Seq, f.Service, f.Op, f.Kind, f.Target)
	if f.Detail != "" {
		s += " (" + f.Detail + ")"
	}
	return s
}

// record logs a fault injected on request seq c.
func (p *Proxy) record(seq uint64, c call, k Kind, detail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, Fault{Seed: p.sched.Seed, Seq: seq, Time: time.Now(), Service: c.service,
		Op: c.op, Kind: k, Target: c.target, Detail: detail})
	p.counts[k]++
}

// Faults returns every fault injected so far, in the order they were injected.
func (p *Proxy) Faults() []Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Fault(nil), p.faults...)
}

// Counts returns how many faults of each kind were injected so far.
func (p *Proxy) Counts() map[Kind]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.counts)
}

// Requests returns how many requests could take a fault so far (the schedule's sequence).
func (p *Proxy) Requests() uint64 { return p.seq.Load() }

// Summary is one line: the schedule, the requests and the faults by kind.
func (p *Proxy) Summary() string {
	c := p.Counts()
	parts := make([]string, 0, len(Kinds))
	for _, k := range Kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, c[k]))
	}
	return fmt.Sprintf("faultproxy %s; %d requests; faults: %s; dup-later copies kept %d",
		p.sched, p.Requests(), strings.Join(parts, ", "), p.dups.keptCount())
}

// Report is Summary followed by every fault, one a line.
func (p *Proxy) Report() string {
	var b strings.Builder
	b.WriteString(p.Summary())
	b.WriteByte('\n')
	for _, f := range p.Faults() {
		b.WriteString("  ")
		b.WriteString(f.String())
		b.WriteByte('\n')
	}
	return b.String()
}
