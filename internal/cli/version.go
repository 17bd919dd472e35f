package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionText is what `isoscope version` and `isoscope --version` print:
// the module version, the commit it was built from (with "+dirty" when
// the tree had changes, and the commit's time), and the Go version.
func versionText() string {
	version, commit, when, dirty := "(devel)", "unknown", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if dirty {
		commit += "+dirty"
	}
	if when != "" {
		commit += " (" + when + ")"
	}
	return fmt.Sprintf("isoscope %s\ncommit %s\n%s %s/%s\n", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newVersionCommand(std IO) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "print isoscope's version, the commit it was built from and the Go version",
		Args:    wantArgs(0, 0, "", ""),
		Example: "  isoscope version",
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprint(std.Stdout, versionText())
			return err
		},
	}
}
