package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
)

// staleStart reads the state before a write that committed (commit_ts 2)
// before the reader started (start_ts 3): serializable black-box, not with
// the start-order module.
const staleStart = `{"id":1,"session":0,"start_ts":1,"commit_ts":2,"ops":[["w","x",1]]}
{"id":2,"session":1,"start_ts":3,"commit_ts":4,"ops":[["r","x",null]]}
`

// innodbLost is InnoDB's lost update (snapshot reads, then UPDATEs) and,
// in transactions 3 and 4, the same through locking reads, which InnoDB
// does not allow.
const innodbLost = `{"format":"isoscope-history","version":1,"initial":{"x":0,"y":0}}
{"id":1,"session":0,"ops":[["r","x",0],["w","x",1]]}
{"id":2,"session":1,"ops":[["r","x",0],["w","x",2]]}
`

const innodbLockedLost = `{"format":"isoscope-history","version":1,"initial":{"x":0,"y":0}}
{"id":3,"session":0,"ops":[["r","y",0,{"lock":true}],["w","y",1]]}
{"id":4,"session":1,"ops":[["r","y",0,{"lock":true}],["w","y",2]]}
`

func TestCheckModelFlags(t *testing.T) {
	cases := []cliCase{
		{"start timestamps ignored", staleStart, []string{"check", "--checker", "sat", "-"}, ExitHolds, "serializable holds", ""},
		{"start-order module", staleStart, []string{"check", "--module", "start-order", "-"}, ExitViolation, "--rt-->", ""},
		{"start-order at si", staleStart, []string{"check", "--level", "si", "--module", "start-order", "-"}, ExitViolation, "modules: start-order", ""},
		{"start-order without timestamps", lostUpdate, []string{"check", "--module", "start-order", "-"}, ExitBadInput, "", "lacks start_ts"},
		{"innodb lost update is allowed", innodbLost, []string{"check", "--level", "rr", "--module", "innodb-rr", "-"}, ExitHolds, "repeatable-read holds", ""},
		{"the same at si", innodbLost, []string{"check", "--level", "si", "-"}, ExitViolation, "lost-update", ""},
		{"innodb lost update through locking reads", innodbLockedLost, []string{"check", "--level", "rr", "--module", "innodb-rr", "-"}, ExitViolation, "T3 --rw(y)--> T4", ""},
		{"innodb-rr at another level", innodbLost, []string{"check", "--level", "si", "--module", "innodb-rr", "-"}, ExitBadInput, "", "check it at repeatable-read"},
		{"inferred external reads", ownBeforeRead, []string{"check", "--own-reads", "infer", "-"}, ExitHolds, "inferred from the history: external (of the reads after their transaction's write of the key, 0 saw that write, 1 did not)", ""},
		{"the default is still own", ownBeforeRead, []string{"check", "-"}, ExitViolation, "not-my-own-write", ""},
		{"a solver switch picks the solver", lostUpdate, []string{"check", "--level", "si", "--no-prune", "-"}, ExitViolation, "checker sat", ""},
		{"a named checker without the switches", lostUpdate, []string{"check", "--level", "si", "--checker", "mt", "--no-two-width", "-"}, ExitBadInput, "", "none of the solver's optimisations"},
		{"every switch", lostUpdate, []string{"check", "--level", "ser", "--no-prune", "--no-prioritize", "--no-two-width", "--no-chrono", "--no-unsat-search", "--dense-pairs", "-"}, ExitViolation, "lost-update", ""},
	}
	runCLICases(t, cases)
}

// TestCheckJSONModel: the JSON result names the modules run and the
// inferred read-your-own-writes policy, and leaves both out by default.
func TestCheckJSONModel(t *testing.T) {
	var doc struct {
		Outcome  string   `json:"outcome"`
		Modules  []string `json:"modules"`
		OwnReads *struct {
			Policy   string `json:"policy"`
			Inferred bool   `json:"inferred"`
			Own      int    `json:"reads_own"`
			External int    `json:"reads_external"`
		} `json:"own_reads"`
	}
	_, out, _ := run(t, ownBeforeRead, "check", "--json", "--own-reads", "infer", "-")
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if doc.OwnReads == nil || doc.OwnReads.Policy != "external" || !doc.OwnReads.Inferred || doc.OwnReads.External != 1 || doc.Outcome != "satisfied" {
		t.Errorf("own_reads %+v, outcome %s: %s", doc.OwnReads, doc.Outcome, out)
	}
	_, out, _ = run(t, innodbLost, "check", "--json", "--level", "rr", "--module", "innodb-rr", "-")
	doc.OwnReads = nil
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(doc.Modules) != 1 || doc.Modules[0] != "innodb-rr" || doc.OwnReads != nil {
		t.Errorf("modules %v, own_reads %+v: %s", doc.Modules, doc.OwnReads, out)
	}
	_, out, _ = run(t, lostUpdate, "check", "--json", "-")
	if strings.Contains(out, `"modules"`) || strings.Contains(out, `"own_reads"`) {
		t.Errorf("the default result names modules or a policy: %s", out)
	}
}

// TestNoUnsatSearchSwitch: --no-unsat-search reaches the solver. T3
// read x=1, which T1 and T2 both wrote, and y from before both of them —
// only the solver finds that every choice of its writer is a cycle —
// followed by a long serial run of read-modify-writes of another key with
// repeated values. With the encoding bound (--max-derived) between
// what the first window needs and what the whole history needs, the check
// finds T3's violation in the window; with the switch it is undecided
// (exit 3).
func TestNoUnsatSearchSwitch(t *testing.T) {
	var b strings.Builder
	b.WriteString("init: x=0 y=0 z=0 | s0: w x 1 w y 1 | s1: w x 1 w y 1 | s2: r x 1 r y 0")
	cur := 0
	for i := range 160 {
		next := 1 + i%2
		fmt.Fprintf(&b, " | s%d: r z %d w z %d", 3+i%4, cur, next)
		cur = next
	}
	h, err := history.Parse(b.String())
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	if err := native.Write(&file, h); err != nil {
		t.Fatal(err)
	}
	decided := false
	for bound := 1 << 20; bound >= 1; bound /= 2 {
		max := fmt.Sprint("--max-derived=", bound)
		with, out, _ := run(t, file.String(), "check", "--checker", "sat", "--no-holds", max, "-")
		without, out2, _ := run(t, file.String(), "check", "--checker", "sat", "--no-holds", "--no-unsat-search", max, "-")
		if with == ExitUnknown {
			break // too small for the windows as well
		}
		if with != ExitViolation || !strings.Contains(out, "T3 --rw(y)-->") {
			t.Fatalf("bound %d: exit %d: %s", bound, with, out)
		}
		if without == ExitViolation {
			continue // the whole history still fits
		}
		if without != ExitUnknown || !strings.Contains(out2, "more than the") {
			t.Fatalf("bound %d: with --no-unsat-search exit %d: %s", bound, without, out2)
		}
		decided = true
		break
	}
	if !decided {
		t.Fatal("no bound where the unsat search decides and the switch leaves the check undecided")
	}
}
