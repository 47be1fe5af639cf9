package faultproxy

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// Kind is a kind of fault.
type Kind string

// The fault kinds (see the package doc).
const (
	ApplyDrop    Kind = "apply-drop"
	Apply500     Kind = "apply-500"
	Throttle     Kind = "throttle"
	Delay        Kind = "delay"
	DupInReceive Kind = "dup-in-receive"
	DupLater     Kind = "dup-later"
)

// Kinds are every fault kind, in the order a request's draws are made.
var Kinds = []Kind{ApplyDrop, Apply500, Throttle, Delay, DupInReceive, DupLater}

// Schedule says which faults the proxy injects.
type Schedule struct {
	// Seed makes the schedule: the same seed gives the n-th request the same fault in every run.
	Seed uint64
	// Rates are the share (0 to 1) of the requests a kind can hit that it does hit. A kind that is
	// absent is never injected.
	Rates map[Kind]float64
	// Script, when set, names the fault of the requests with these sequence numbers, before the
	// rates are drawn: a test that needs one fault on one request says which. A scripted kind that
	// the request cannot take is not injected.
	Script map[uint64]Kind
	// Delay is how long a Delay fault holds an answer (default 2 s): longer than the client's
	// timeout, for the SDK to give up on it and send the request again.
	Delay time.Duration
}

// DefaultDelay is the Delay of a Schedule that sets none.
const DefaultDelay = 2 * time.Second

func (s Schedule) validate() error {
	total := 0.0
	for k, r := range s.Rates {
		if !knownKind(k) {
			return fmt.Errorf("faultproxy: unknown fault kind %q", k)
		}
		if r < 0 || r > 1 {
			return fmt.Errorf("faultproxy: rate %v of %s: want 0 to 1", r, k)
		}
		total += r
	}
	for seq, k := range s.Script {
		if !knownKind(k) {
			return fmt.Errorf("faultproxy: unknown fault kind %q scripted for request %d", k, seq)
		}
	}
	if total > 1 {
		return fmt.Errorf("faultproxy: the rates add up to %v: want at most 1", total)
	}
	return nil
}

func knownKind(k Kind) bool {
	for _, c := range Kinds {
		if c == k {
			return true
		}
	}
	return false
}

func (s Schedule) delay() time.Duration {
	if s.Delay > 0 {
		return s.Delay
	}
	return DefaultDelay
}

// decide returns the fault of request seq, among the kinds it can take (can), or "" for none. It
// draws one number for the request from (Seed, seq) and walks the kinds in Kinds' order, each
// owning a slice of [0, 1) as wide as its rate: so the rates are exact shares of the requests a
// kind can hit, and the decision depends on the seed and the sequence number alone.
func (s Schedule) decide(seq uint64, can func(Kind) bool) Kind {
	if k, ok := s.Script[seq]; ok {
		if can(k) {
			return k
		}
		return ""
	}
	x := rand.New(rand.NewPCG(s.Seed, seq)).Float64()
	lo := 0.0
	for _, k := range Kinds {
		r := s.Rates[k]
		if x >= lo && x < lo+r && can(k) {
			return k
		}
		lo += r
	}
	return ""
}

// String names the schedule: its seed, rates and delay.
func (s Schedule) String() string {
	parts := make([]string, 0, len(s.Rates))
	for k, r := range s.Rates {
		parts = append(parts, fmt.Sprintf("%s %.2f%%", k, 100*r))
	}
	for seq, k := range s.Script {
		parts = append(parts, fmt.Sprintf("request %d %s", seq, k))
	}
	sort.Strings(parts)
	return fmt.Sprintf("seed %d: %s; delay %v", s.Seed, strings.Join(parts, ", "), s.delay())
}
