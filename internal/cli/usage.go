package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/format/registry"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/suggest"
	"github.com/isoscope/isoscope/internal/workload"
)

// flagGroupKey is the flag annotation that puts a flag under a heading of
// its own in a command's help (flagGroups lists the headings).
const flagGroupKey = "isoscope_group"

// The flag groups a command's help shows after its everyday flags.
const (
	groupLimits    = "limits"
	groupCheck     = "check"
	groupModel     = "model"
	groupCollector = "collector"
	groupAdvanced  = "advanced"
)

// flagGroups are the help's flag headings, in the order shown: the
// everyday flags (no group) first, the solver's switches last.
var flagGroups = []struct{ id, title string }{
	{"", "Flags"},
	{groupCheck, "Checking the history"},
	{groupCollector, "Online checking (--collector)"},
	{groupModel, "Model (what a history is checked against)"},
	{groupLimits, "Reading limits"},
	{groupAdvanced, "Advanced (the solver's switches and bounds, for measuring it)"},
}

// helpWidth is the width the help wraps flag descriptions at.
const helpWidth = 100

// inGroup puts the flags named under the help heading group.
func inGroup(f *pflag.FlagSet, group string, names ...string) {
	for _, n := range names {
		if err := f.SetAnnotation(n, flagGroupKey, []string{group}); err != nil {
			panic(fmt.Sprintf("flag group %s: %v", group, err)) // a flag name mistyped in the code
		}
	}
}

// flagGroup is the help heading a flag is under ("" for the everyday
// flags).
func flagGroup(f *pflag.Flag) string {
	if g := f.Annotations[flagGroupKey]; len(g) > 0 {
		return g[0]
	}
	return ""
}

// usage writes a command's usage: how to call it, its examples, its
// subcommands, and its flags under the headings of flagGroups (then the
// flags every command takes).
func usage(c *cobra.Command) error {
	var b strings.Builder
	b.WriteString("Usage:")
	if c.Runnable() && c.HasParent() { // the root runs only to refuse an unknown command
		b.WriteString("\n  " + c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n  " + c.CommandPath() + " [command]")
	}
	if c.HasExample() {
		b.WriteString("\n\nExamples:\n" + c.Example)
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n\nAvailable Commands:")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(&b, "\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	local := c.LocalFlags()
	for _, g := range flagGroups {
		set := pflag.NewFlagSet(g.title, pflag.ContinueOnError)
		local.VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && flagGroup(f) == g.id {
				set.AddFlag(f)
			}
		})
		if set.HasAvailableFlags() {
			b.WriteString("\n\n" + g.title + ":\n" + strings.TrimRight(set.FlagUsagesWrapped(helpWidth), " \n"))
		}
	}
	if c.HasAvailableInheritedFlags() {
		b.WriteString("\n\nGlobal Flags:\n" + strings.TrimRight(c.InheritedFlags().FlagUsagesWrapped(helpWidth), " \n"))
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n\nUse \"%s [command] --help\" for more information about a command.", c.CommandPath())
	}
	b.WriteString("\n")
	_, err := fmt.Fprint(c.OutOrStderr(), b.String())
	return err
}

// flagError turns a flag that cannot be parsed into bad usage (exit
// status 2). An unknown flag gets the command's flags nearest to it
// ("did you mean --level?") and where the flags are listed.
func flagError(c *cobra.Command, err error) error {
	var missing *pflag.NotExistError
	if !errors.As(err, &missing) {
		return badInput(err)
	}
	var names []string
	for _, set := range []*pflag.FlagSet{c.Flags(), c.InheritedFlags()} {
		set.VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				names = append(names, f.Name)
			}
		})
	}
	typed, shown := missing.GetSpecifiedName(), "--"+missing.GetSpecifiedName()
	if short := missing.GetSpecifiedShortnames(); short != "" {
		// -level: a long flag given with one dash reads as shorthands.
		typed, shown = short, "-"+short
	}
	near := suggest.Closest(typed, names)
	for i := range near {
		near[i] = "--" + near[i]
	}
	q := ""
	if len(near) > 0 {
		q = ";" + suggest.DidYouMean(near)
	}
	return badInput(fmt.Errorf("unknown flag %s%s (%s --help lists the flags)", shown, q, c.CommandPath()))
}

// unknownChoice is the usage error for a flag given a value none of known
// takes: it names the flag, the known values nearest to the one given,
// and every known value comma-separated. also are further values the
// flag takes that are suggested but not listed (aliases).
func unknownChoice(flag, what, value string, known []string, also ...string) error {
	return blameFlag(flag, suggest.Unknown(what, value, known, also...))
}

// blameFlag is err as bad usage of flag: the message starts with the
// flag's name, so that it is not taken for a fault of an input file.
func blameFlag(flag string, err error) error {
	return badInput(fmt.Errorf("%s: %w", flag, err))
}

// wantArgs accepts from least to most (-1: any number) arguments and
// otherwise says what the command wants: "check needs a history:
// isoscope check [flags] FILE… (note)", "gen takes no arguments …".
func wantArgs(least, most int, what, note string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) >= least && (most < 0 || len(args) <= most) {
			return nil
		}
		name := strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
		line := c.UseLine()
		if note != "" {
			line += " " + note
		}
		switch {
		case len(args) < least:
			return badInput(fmt.Errorf("%s needs %s: %s", name, what, line))
		case most == 0:
			return badInput(fmt.Errorf("%s takes no arguments, only flags (got %q): %s", name, args[0], line))
		}
		return badInput(fmt.Errorf("%s takes %s, not %d arguments: %s", name, what, len(args), line))
	}
}

// checkFormatFlag refuses a format flag (--format, --from) naming a
// format no reader has (auto detects one).
func checkFormatFlag(flag, name string) error {
	if name == "" || name == "auto" {
		return nil
	}
	if _, err := registry.Lookup(name); err != nil {
		return unknownChoice(flag, "format", name, append([]string{"auto"}, registry.Names()...))
	}
	return nil
}

// checkCheckerFlag refuses a --checker no checker has (auto chooses one).
func checkCheckerFlag(name string) error {
	if name == "" || name == "auto" || slices.Contains(check.Names(), name) {
		return nil
	}
	return unknownChoice("--checker", "checker", name, append([]string{"auto"}, check.Names()...))
}

// workloadNames are the workloads run takes.
func workloadNames() []string {
	var names []string
	for _, w := range workload.Workloads() {
		names = append(names, w.String())
	}
	return names
}

// plantableNames are the anomaly kinds gen plants.
func plantableNames() []string {
	var names []string
	for _, k := range gen.PlantableKinds() {
		names = append(names, k.String())
	}
	return names
}

// unknownCommand runs when isoscope is given no command it knows: with
// no argument it prints the help; otherwise it is bad usage naming the
// commands nearest to the one given.
func unknownCommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return c.Help()
	}
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	q := ""
	if near := suggest.Closest(args[0], names); len(near) > 0 {
		q = ";" + suggest.DidYouMean(near)
	}
	return badInput(fmt.Errorf("unknown command %q%s (%s --help lists the commands)", args[0], q, c.CommandPath()))
}

// rootFlagError is flagError for the root command, given the arguments
// isoscope was called with: a flag the root does not take after an
// unknown command ("isoscope gne --txns 3") is the command's fault, not
// the flag's.
func rootFlagError(args []string) func(*cobra.Command, error) error {
	return func(c *cobra.Command, err error) error {
		if !c.HasParent() {
			if name := firstArg(c.Flags(), args); name != "" {
				return unknownCommand(c, []string{name})
			}
		}
		return flagError(c, err)
	}
}

// firstArg returns the first of args that is neither a flag of f nor a
// flag's value ("" if there is none).
func firstArg(f *pflag.FlagSet, args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case strings.HasPrefix(a, "--") && !strings.Contains(a, "="):
			if fl := f.Lookup(a[2:]); fl != nil && fl.NoOptDefVal == "" {
				i++ // the flag's value
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
		default:
			return a
		}
	}
	return ""
}

// distNames are the key distributions gen and run take.
func distNames() []string {
	var names []string
	for _, d := range workload.Distributions() {
		names = append(names, d.String())
	}
	return names
}
