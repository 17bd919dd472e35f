package htmlreport

import (
	"bytes"
	"fmt"
	"html/template"
)

// Run is the workload run a report is about (isoscope run --report): what
// ran where, its figures, and pictures of it. The page shows it above the
// histories' sections.
type Run struct {
	// Description says what ran where, in a sentence.
	Description string
	// Stats are the run's figures (committed per second, abort rate, …).
	Stats []Stat
	// Plots are pictures of the run, shown in order.
	Plots []Plot
}

// Stat is one labelled figure.
type Stat struct{ Label, Value string }

// Plot is a picture drawn elsewhere (by runplot), shown inline.
type Plot struct {
	// ID is the figure's anchor on the page; Title and Caption say what
	// it shows and how to read it.
	ID, Title, Caption string
	// SVG is a standalone SVG document of the plotting library: the page
	// inlines it from its <svg> element on, and vouches for it.
	SVG []byte
	// Links are the picture's files, e.g. {"SVG", "throughput.svg"}.
	Links []Link
}

// Link is a link to a file beside the page.
type Link struct{ Text, Href string }

type runView struct {
	Description string
	Stats       []Stat
	Plots       []plotView
}

type plotView struct {
	ID, Title, Caption string
	SVG                template.HTML
	Links              []Link
}

// buildRun prepares the run's part of the page: every plot's SVG is
// inlined without its XML declaration and leading comments.
func buildRun(r *Run) (*runView, error) {
	if r == nil {
		return nil, nil
	}
	v := &runView{Description: r.Description, Stats: r.Stats}
	for _, p := range r.Plots {
		i := bytes.Index(p.SVG, []byte("<svg"))
		if i < 0 {
			return nil, fmt.Errorf("htmlreport: plot %q is not an SVG document", p.Title)
		}
		// The SVG is trusted: isoscope drew it, and the library escapes
		// its text.
		v.Plots = append(v.Plots, plotView{ID: p.ID, Title: p.Title, Caption: p.Caption, Links: p.Links,
			SVG: template.HTML(bytes.TrimSpace(p.SVG[i:]))})
	}
	return v, nil
}
