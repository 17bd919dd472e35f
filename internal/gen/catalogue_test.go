package gen_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/workload"
)

// catalogueSeeds are the seeds TestCatalogueOutputs draws with.
var catalogueSeeds = []uint64{1, 7, 42, 2024}

// catalogueOutputs returns, for every workload the simulator and run
// draw from the one catalogue (internal/workload) and each of
// catalogueSeeds, a digest of what comes out: the simulator's history in
// the native format (with what it planted), or run's plan.
func catalogueOutputs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	digest := func(name string, h *history.History, extra string) {
		var b bytes.Buffer
		if err := native.Write(&b, h); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b.WriteString(extra)
		out[name] = fmt.Sprintf("%x", sha256.Sum256(b.Bytes()))[:16]
	}
	for _, seed := range catalogueSeeds {
		for _, mode := range []gen.Mode{gen.Serial, gen.SnapshotIsolation} {
			for _, dist := range []workload.Distribution{workload.Uniform, workload.Zipfian} {
				c := gen.Config{Txns: 300, Sessions: 5, Keys: 12, Dist: dist, Mode: mode, ReadOnlyRatio: 0.2, AbortRatio: 0.05, Seed: seed}
				if mode == gen.Serial {
					c.Plant = []anomaly.Kind{anomaly.LostUpdate, anomaly.WriteSkew}
				}
				h, planted, err := gen.Generate(c)
				if err != nil {
					t.Fatal(err)
				}
				digest(fmt.Sprintf("mt/%s/%s/%d", mode, dist, seed), h, fmt.Sprint(planted))
			}
		}
		h, err := gen.GenerateGeneral(gen.GeneralConfig{Txns: 200, Sessions: 4, Keys: 20, Ops: 6, ReadRatio: 0.4, DuplicateKeys: 0.3, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		digest(fmt.Sprintf("general/%d", seed), h, "")
		for _, w := range gen.RangeWorkloads() {
			for _, mixed := range []bool{false, true} {
				if mixed && w != gen.BlindW {
					continue
				}
				for _, mode := range []gen.Mode{gen.Serial, gen.SnapshotIsolation} {
					h, err := gen.GenerateRange(gen.RangeConfig{Workload: w, Mode: mode, Txns: 150, Sessions: 4, Keys: 30, Values: gen.RepeatedValues,
						GlobalScans: true, BlindWMixed: mixed, Fault: 0.1, Seed: seed})
					if err != nil {
						t.Fatal(err)
					}
					digest(fmt.Sprintf("%s/mixed=%t/%s/%d", w, mixed, mode, seed), h, "")
				}
			}
		}
		for _, w := range workload.Workloads() {
			pc := workload.PlanConfig{Workload: w, Sessions: 4, Txns: 200, Keys: 20, Dist: workload.Zipfian, ReadRatio: -1}
			if w == workload.General {
				pc.Duplicates = 0.3
			}
			p, err := workload.NewPlan(pc, rand.New(rand.NewPCG(seed, seed^0x5eed)))
			if err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("plan/%s/%d", w, seed)] = fmt.Sprintf("%x", sha256.Sum256(fmt.Appendf(nil, "%+v", p)))[:16]
		}
	}
	return out
}

// catalogueGolden are catalogueOutputs as they were before the simulator
// took its mini-transaction shapes, workload names and operation mixes
// from internal/workload: the catalogue moved, and no history, planted
// anomaly or plan changed by a byte (so neither did any verdict).
var catalogueGolden = map[string]string{
	"blindw/mixed=false/serial/1":            "17c335c21c5fa6c4",
	"blindw/mixed=false/serial/2024":         "a774068a3a422f9e",
	"blindw/mixed=false/serial/42":           "821ed7377e370cf1",
	"blindw/mixed=false/serial/7":            "b1b3eb133b717689",
	"blindw/mixed=false/si/1":                "9987254814c0b860",
	"blindw/mixed=false/si/2024":             "8461d05b1af62adc",
	"blindw/mixed=false/si/42":               "216af50e7aa33be2",
	"blindw/mixed=false/si/7":                "1a6b76a504c5f6e6",
	"blindw/mixed=true/serial/1":             "ae9f9daf763ba820",
	"blindw/mixed=true/serial/2024":          "92b32293149a7450",
	"blindw/mixed=true/serial/42":            "9d07796cb1593a6b",
	"blindw/mixed=true/serial/7":             "e2b2a20250c9683e",
	"blindw/mixed=true/si/1":                 "088ad028593d4d57",
	"blindw/mixed=true/si/2024":              "c7257235e1a06f6f",
	"blindw/mixed=true/si/42":                "31216ca7de33535a",
	"blindw/mixed=true/si/7":                 "be013d6165fd1534",
	"general/1":                              "8bd5b5d185930a40",
	"general/2024":                           "abe2971db240fd59",
	"general/42":                             "fe1f1900f8aa58d2",
	"general/7":                              "580fe7f046500d88",
	"mt/serial/uniform/1":                    "8a6d74bbcb181aa5",
	"mt/serial/uniform/2024":                 "5e602e328824a648",
	"mt/serial/uniform/42":                   "b7718f552140d4b1",
	"mt/serial/uniform/7":                    "09fcd01294624250",
	"mt/serial/zipfian/1":                    "d93ef6706f5c5f2b",
	"mt/serial/zipfian/2024":                 "c4c826a1db19e106",
	"mt/serial/zipfian/42":                   "a5a7c859b9ac9b03",
	"mt/serial/zipfian/7":                    "780bb679cb55c590",
	"mt/si/uniform/1":                        "4d9b5339eb1ae0f5",
	"mt/si/uniform/2024":                     "64a104be7b125772",
	"mt/si/uniform/42":                       "4e783aac35b50564",
	"mt/si/uniform/7":                        "15f227474e65fce8",
	"mt/si/zipfian/1":                        "133068e132b6ced1",
	"mt/si/zipfian/2024":                     "47e4faca4b8fd024",
	"mt/si/zipfian/42":                       "83e8e6dde044a240",
	"mt/si/zipfian/7":                        "648d16723a4907de",
	"plan/blindw/1":                          "e7f1174c623cdca0",
	"plan/blindw/2024":                       "1b9c630396597e9f",
	"plan/blindw/42":                         "da1461802525939c",
	"plan/blindw/7":                          "4a3ee3e58a98e98c",
	"plan/general/1":                         "13d26f7c482ab523",
	"plan/general/2024":                      "6eb9dc2fdbc61371",
	"plan/general/42":                        "8ab7ceaaf1540592",
	"plan/general/7":                         "e339753c9c00ad66",
	"plan/list-append/1":                     "758177d912affcaf",
	"plan/list-append/2024":                  "b1d4bcf89682e903",
	"plan/list-append/42":                    "09ce2f13a615e194",
	"plan/list-append/7":                     "be3f1d9d12b4b739",
	"plan/lwt/1":                             "e26cd5dc732f1da4",
	"plan/lwt/2024":                          "b2b32d258be06388",
	"plan/lwt/42":                            "923da42155f03e50",
	"plan/lwt/7":                             "6734065aa74d3d95",
	"plan/mt/1":                              "2a8977b553d4e9d9",
	"plan/mt/2024":                           "4f78af49f3dd3b57",
	"plan/mt/42":                             "5bd03a09643d31bd",
	"plan/mt/7":                              "e85efb2049a5b650",
	"plan/randombench/1":                     "8573a8a00384dfee",
	"plan/randombench/2024":                  "2b00c36dfe431ce0",
	"plan/randombench/42":                    "2166d3a8eea79379",
	"plan/randombench/7":                     "7fab848ffee83597",
	"plan/randomrange/1":                     "8e20af4579497ec8",
	"plan/randomrange/2024":                  "5cc46619866bb1cd",
	"plan/randomrange/42":                    "987eb41888f71ab6",
	"plan/randomrange/7":                     "f9f3ee942a518af0",
	"plan/randomrmwrange/1":                  "962bfcb3e7d89077",
	"plan/randomrmwrange/2024":               "3d7d8d9072f8eda3",
	"plan/randomrmwrange/42":                 "e15e73775c9ec6c2",
	"plan/randomrmwrange/7":                  "02281554fe26e2f5",
	"plan/range/1":                           "77d064b8987882c8",
	"plan/range/2024":                        "c9cdf2ca624cac4d",
	"plan/range/42":                          "e01a3b7f268e6653",
	"plan/range/7":                           "c9c12a403e1f4e63",
	"randombench/mixed=false/serial/1":       "27b14d87c4b92fec",
	"randombench/mixed=false/serial/2024":    "cb3badc974a3e28a",
	"randombench/mixed=false/serial/42":      "78badf878bf9ace3",
	"randombench/mixed=false/serial/7":       "f18896338a323630",
	"randombench/mixed=false/si/1":           "9464cbda1d70f411",
	"randombench/mixed=false/si/2024":        "e400215f5fe8195d",
	"randombench/mixed=false/si/42":          "fd755888e5d28860",
	"randombench/mixed=false/si/7":           "4a4ab21727ded866",
	"randomrange/mixed=false/serial/1":       "8418683c85688dc2",
	"randomrange/mixed=false/serial/2024":    "9de4f423f4846041",
	"randomrange/mixed=false/serial/42":      "7ac2d1d941ffd546",
	"randomrange/mixed=false/serial/7":       "daecd186589a2703",
	"randomrange/mixed=false/si/1":           "aa2b467ee0c4cc0d",
	"randomrange/mixed=false/si/2024":        "7f17ceee7d9a7534",
	"randomrange/mixed=false/si/42":          "570a06c01e157d22",
	"randomrange/mixed=false/si/7":           "77e480bfd57b516a",
	"randomrmwrange/mixed=false/serial/1":    "a43986aa40521613",
	"randomrmwrange/mixed=false/serial/2024": "1791dcfa366fc47f",
	"randomrmwrange/mixed=false/serial/42":   "8416471a0da61464",
	"randomrmwrange/mixed=false/serial/7":    "bc65b49c76983c05",
	"randomrmwrange/mixed=false/si/1":        "0274340e0219745a",
	"randomrmwrange/mixed=false/si/2024":     "ea1c9504f02befed",
	"randomrmwrange/mixed=false/si/42":       "7ae2ce37565cf0e9",
	"randomrmwrange/mixed=false/si/7":        "695f5b8d8908d882",
}

// TestCatalogueOutputs holds the simulator's histories and run's plans,
// for every workload and a few seeds, to catalogueGolden.
func TestCatalogueOutputs(t *testing.T) {
	got := catalogueOutputs(t)
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if want, ok := catalogueGolden[k]; !ok || got[k] != want {
			t.Errorf("%s: digest %s, want %s", k, got[k], want)
		}
	}
	for k := range catalogueGolden {
		if _, ok := got[k]; !ok {
			t.Errorf("%s: no longer drawn", k)
		}
	}
}
