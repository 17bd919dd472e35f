package isoscope

import (
	"bytes"
	"errors"
	"io"

	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/report/htmlreport"
)

// errNoCheck is the error of rendering a Result that Check did not make.
var errNoCheck = errors.New("the result is not one Check returned")

// WriteText writes the result as `isoscope check` prints it: the verdict,
// then each kind of anomaly with its count and its first few instances —
// its name, phenomenon, cycle and explanation, and the evidence of each
// edge.
func (r *Result) WriteText(w io.Writer) error {
	if r.checked == nil {
		return errNoCheck
	}
	return report.Text(w, r.checked, report.TextOptions{})
}

// WriteReport writes the HTML report of the result into dir (made if
// need be), as `isoscope check --report DIR` does: dir/index.html, the
// result as JSON in dir/result.json, and a picture of each anomaly shown.
func (r *Result) WriteReport(dir string) error {
	if r.checked == nil {
		return errNoCheck
	}
	var result bytes.Buffer
	if err := report.JSON(&result, r.checked); err != nil {
		return err
	}
	return htmlreport.WriteDir(dir, []htmlreport.Section{htmlreport.FromChecked(r.checked)}, result.Bytes(), htmlreport.Options{})
}
