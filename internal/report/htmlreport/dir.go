package htmlreport

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
)

// The files of a report directory.
const (
	PageFile   = "index.html"
	ResultFile = "result.json"
	DOTFile    = "cycles.dot"
)

// WriteDir writes dir/index.html, dir/result.json (result as given,
// unless it is nil), when some anomaly is a cycle dir/cycles.dot, and a
// picture of each anomaly the page shows, NAME.svg and NAME.dot
// (Pictures: lost-update-1.svg); it removes those it does not
// write, left by an earlier report.
func WriteDir(dir string, secs []Section, result []byte, o Options) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string][]byte{}
	if result != nil {
		o.ResultHref = ResultFile
		files[ResultFile] = result
	}
	cycles := false
	for _, s := range secs {
		for i := range s.Anomalies {
			cycles = cycles || s.Anomalies[i].IsCycle()
		}
	}
	if cycles {
		o.DotHref = DOTFile
		var b bytes.Buffer
		if err := WriteDOT(&b, secs, o); err != nil {
			return err
		}
		files[DOTFile] = b.Bytes()
	}
	o.Pictures = true
	for _, p := range Pictures(secs, o) {
		files[p.Name+".svg"], files[p.Name+".dot"] = p.SVG, p.DOT
	}
	var page bytes.Buffer
	if err := Write(&page, secs, o); err != nil {
		return err
	}
	files[PageFile] = page.Bytes()
	stale, err := stalePictures(dir, files)
	if err != nil {
		return err
	}
	for _, name := range append([]string{ResultFile, DOTFile}, stale...) {
		if _, ok := files[name]; ok {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	names := slices.Sorted(maps.Keys(files))
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// pictureFile matches the names of anomalies' pictures (PictureName).
var pictureFile = regexp.MustCompile(`^(h[0-9]+-)?([a-z-]+)-[0-9]+\.(svg|dot)$`)

// stalePictures lists the anomaly pictures in dir that an earlier report
// wrote and this one does not.
func stalePictures(dir string, files map[string][]byte) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		m := pictureFile.FindStringSubmatch(e.Name())
		if m == nil || e.IsDir() {
			continue
		}
		if _, ok := anomaly.ParseKind(m[2]); !ok {
			continue
		}
		if _, ok := files[e.Name()]; !ok {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
