package cli

import (
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/cluster"
	"github.com/isoscope/isoscope/internal/format/registry"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/nemesis"
	"github.com/isoscope/isoscope/internal/workload"
)

// flagValues returns the values the shell may complete for cmd's flag
// name (nil: the flag takes no fixed set, e.g. a number or a file).
func flagValues(cmd string, name string) []string {
	switch name {
	case "level":
		if cmd == "serve" {
			return []string{"snapshot-isolation", "si", "serializable", "ser"}
		}
		var out []string
		for _, l := range level.All() {
			out = append(out, l.Name)
			if l.Short != "" && l.Short != l.Name {
				out = append(out, l.Short)
			}
		}
		return out
	case "checker":
		return append([]string{"auto"}, check.Names()...)
	case "format", "from":
		return append([]string{"auto"}, registry.Names()...)
	case "to":
		var out []string
		for _, f := range registry.Formats() {
			if f.Write != nil {
				out = append(out, f.Name)
			}
		}
		return out
	case "workload":
		if cmd == "gen" {
			out := []string{"mt", "general"}
			for _, w := range gen.RangeWorkloads() {
				out = append(out, w.String())
			}
			return out
		}
		var out []string
		for _, w := range workload.Workloads() {
			out = append(out, w.String())
		}
		return out
	case "cluster":
		var out []string
		for _, k := range cluster.Kinds {
			out = append(out, string(k))
		}
		return out
	case "dist":
		return []string{"uniform", "zipfian", "hotspot", "exponential"}
	case "isolation":
		return []string{"serializable", "repeatable-read", "read-committed", "read-uncommitted"}
	case "own-reads":
		return []string{"own", "external", "either", "infer"}
	case "module":
		var out []string
		for name := range check.Modules() {
			out = append(out, name)
		}
		out = append(out, check.InnoDBRRModule)
		slices.Sort(out)
		return out
	case "mode":
		return []string{"serial", "si", "causal"}
	case "log-format":
		return []string{"text", "json"}
	case "drop":
		return []string{"instants", "timestamps", "version-order"}
	case "plant":
		var out []string
		for _, k := range gen.PlantableKinds() {
			out = append(out, k.String())
		}
		return out
	case "ts-fault":
		return []string{"early-commit", "skew"}
	case "faults":
		out := []string{"all"}
		for _, k := range append(slices.Clone(nemesis.Kinds), nemesis.PrimaryKinds...) {
			out = append(out, string(k))
		}
		return out
	case "values":
		if cmd == "gen" {
			return []string{"default", "unique", "repeated"}
		}
	case "pieces":
		if cmd == "publish" {
			return []string{"binary", "json"}
		}
	}
	return nil
}

// completeFlagValues lets the shell complete the values of every flag of
// root's commands that takes one of a fixed set (`isoscope completion
// bash` writes the script).
func completeFlagValues(root *cobra.Command) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if values := flagValues(c.Name(), f.Name); values != nil {
				// Registered once per flag; an error means it already is.
				_ = c.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
