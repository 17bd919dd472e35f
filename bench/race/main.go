// Command race runs isoscope and porcupine's checker (bench/porcupine)
// alternately on the same sets of logs, compares their verdicts file by
// file, and prints, per set, the median CPU time (user + system) and peak
// resident memory of each whole process, as a Markdown table: the
// performance race of docs/benchmarks.md. bench/race.sh builds both and
// runs it.
//
//	race -isoscope BIN -porcupine BIN [-runs N] NAME=GLOB…
//
// Each set is every file GLOB matches, checked by one process of each:
// `isoscope check --level sser FILE…` and `porcupine-race FILE…`.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	isoscope := flag.String("isoscope", "", "the isoscope binary")
	porcupine := flag.String("porcupine", "", "the porcupine-race binary (bench/porcupine)")
	runs := flag.Int("runs", 5, "timed runs of each tool per set (the median is reported)")
	flag.Parse()
	if *isoscope == "" || *porcupine == "" || flag.NArg() == 0 || *runs < 1 {
		fmt.Fprintln(os.Stderr, "usage: race -isoscope BIN -porcupine BIN [-runs N] NAME=GLOB…")
		os.Exit(2)
	}
	fmt.Println("| log set | files | verdicts (isoscope = porcupine) | isoscope CPU | porcupine CPU | ratio | isoscope peak RSS | porcupine peak RSS |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- |")
	failed := false
	for _, arg := range flag.Args() {
		name, glob, ok := strings.Cut(arg, "=")
		files, err := filepath.Glob(glob)
		if !ok || err != nil || len(files) == 0 {
			fmt.Fprintf(os.Stderr, "race: %s: no files\n", arg)
			failed = true
			continue
		}
		row, err := race(*isoscope, *porcupine, *runs, name, files)
		if err != nil {
			fmt.Fprintf(os.Stderr, "race: %s: %v\n", name, err)
			failed = true
			continue
		}
		fmt.Println(row)
	}
	if failed {
		os.Exit(1)
	}
}

// race runs one set and returns its table row.
func race(isoscope, porcupine string, runs int, name string, files []string) (string, error) {
	same, verdicts, err := compare(isoscope, porcupine, files)
	if err != nil {
		return "", err
	}
	iso := append([]string{isoscope, "check", "--level", "sser"}, files...)
	por := append([]string{porcupine}, files...)
	var isoCPU, porCPU []time.Duration
	var isoRSS, porRSS []int64
	for range runs {
		// Alternately, so that the machine's other load falls on both.
		for _, c := range []struct {
			argv []string
			cpu  *[]time.Duration
			rss  *[]int64
		}{{iso, &isoCPU, &isoRSS}, {por, &porCPU, &porRSS}} {
			cpu, rss, err := measure(c.argv)
			if err != nil {
				return "", err
			}
			*c.cpu, *c.rss = append(*c.cpu, cpu), append(*c.rss, rss)
		}
	}
	ic, pc := median(isoCPU), median(porCPU)
	return fmt.Sprintf("| %s | %d | %d of %d | %s (%s–%s) | %s (%s–%s) | %.3f | %d MB | %d MB |",
		name, len(files), same, verdicts, ms(ic), ms(slices.Min(isoCPU)), ms(slices.Max(isoCPU)),
		ms(pc), ms(slices.Min(porCPU)), ms(slices.Max(porCPU)), float64(ic)/float64(pc),
		median(isoRSS)>>10, median(porRSS)>>10), nil
}

// measure runs argv to its end (exit status 0 or 1: a violation is a
// result) with its output discarded, and returns the CPU time (user and
// system) and the peak resident memory, in KB, of it and the processes it
// waited for.
func measure(argv []string) (time.Duration, int64, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		return 0, 0, fmt.Errorf("%s: %v\n%s", argv[0], err, stderr.String())
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0, errors.New("no resource usage from the system")
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return cpu, ru.Maxrss, nil
}

// compare runs both tools once on files and counts the files on which
// their verdicts agree; a file on which they disagree is named on
// standard error.
func compare(isoscope, porcupine string, files []string) (same, n int, err error) {
	out, err := output(append([]string{isoscope, "check", "--level", "sser", "--json"}, files...))
	if err != nil {
		return 0, 0, err
	}
	iso := map[string]string{}
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		var d struct{ File, Outcome string }
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return 0, 0, fmt.Errorf("isoscope's JSON: %v", err)
		}
		if d.File == "" {
			d.File = files[0] // one file: the result does not name it
		}
		iso[d.File] = map[string]string{"satisfied": "linearizable", "violation": "NOT linearizable"}[d.Outcome]
	}
	if out, err = output(append([]string{porcupine}, files...)); err != nil {
		return 0, 0, err
	}
	por := map[string]string{}
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		if file, verdict, ok := strings.Cut(sc.Text(), ": "); ok {
			por[file] = verdict
		}
	}
	for _, f := range files {
		n++
		if iso[f] != "" && iso[f] == por[f] {
			same++
		} else {
			fmt.Fprintf(os.Stderr, "race: %s: isoscope says %q, porcupine %q\n", f, iso[f], por[f])
		}
	}
	return same, n, nil
}

// output runs argv (exit status 0 or 1) and returns its standard output.
func output(argv []string) ([]byte, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		return nil, fmt.Errorf("%s: %v\n%s", argv[0], err, stderr.String())
	}
	return out, nil
}

func median[T int64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }
