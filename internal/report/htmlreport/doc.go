// Package htmlreport renders check results as a self-contained HTML page
// and as Graphviz DOT.
//
// The page (Write) shows, for each history, the verdict, the level, the
// checker and the history's statistics; the anomalies grouped by kind
// with counts (the first Options.PerKind of each); for each anomaly its
// name, phenomenon and explanation, its cycle drawn as a ring of
// transactions (CycleSVG: edges coloured and labelled by dependency kind
// and key) with each edge's evidence in a sentence (a best-found cycle's
// edges every choice has apart from those the solver chose), and the
// operations of its transactions with those that make its edges
// highlighted (a core's other transactions too); and a timeline of the
// sessions around the anomalies' transactions (the whole history when it
// is small). Pictures are SVG drawn here, inline; styles are inline; the
// page loads nothing. For isoscope run, Options.Run adds the workload run
// after the verdicts and anomalies: what ran, its figures, and its plots
// (SVG drawn by package runplot, inlined).
//
// WriteDOT writes the same cycles as Graphviz DOT: one digraph with a
// cluster per anomaly. Pictures makes one picture per shown anomaly, as a
// standalone SVG and a DOT file (lost-update-1.svg), for beside the page.
//
// Rendering is pure: it takes sections, made by FromChecked from a typed
// check result — a history just checked, or a saved JSON result resolved
// against its history (report.ReadDocuments and report.Resolve), which
// renders the same page — and writes to an io.Writer. Writing files is
// the CLI's business.
package htmlreport
