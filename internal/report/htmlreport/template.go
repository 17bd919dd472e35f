package htmlreport

import "html/template"

// pageTemplate is the report page. Everything it needs is inline: the
// style sheet below and the SVG pictures; it loads no script, font or
// image.
var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>` + css + `</style>
</head>
<body>
<header class="top"><h1>{{.Title}}</h1><nav>
{{- if .ResultHref}}<a href="{{.ResultHref}}">result (JSON)</a>{{end}}
{{- if .DotHref}}<a href="{{.DotHref}}">cycles (Graphviz DOT)</a>{{end}}
{{- if .Run}}<a href="#run">the run ↓</a>{{end}}</nav></header>
{{- if .Multi}}
<nav class="toc"><h2>Histories</h2><ul>{{range .Sections}}<li><a href="#{{.ID}}"><span class="pill {{.Outcome}}">{{.Outcome}}</span> {{.File}}</a></li>{{end}}</ul></nav>
{{- end}}
{{- range .Sections}}
<section class="history" id="{{.ID}}">
<div class="banner {{.Outcome}}">
<div class="file">{{.File}}</div>
<div class="verdict">{{.Verdict}}</div>
<div class="sub">checker <b>{{.Checker}}</b> · checked in {{.Elapsed}}{{if .Holds}} · still holds: {{range $i, $l := .Holds}}{{if $i}}, {{end}}<b>{{$l}}</b>{{end}}{{end}}</div>
{{- if .Reason}}<div class="sub">{{.Reason}}</div>{{end}}
{{- if .Caveat}}<div class="note">note: {{.Caveat}}</div>{{end}}
</div>
<dl class="stats">{{range .Stats}}<div><dt>{{.Label}}</dt><dd>{{.Value}}</dd></div>{{end}}</dl>
{{- if .Kinds}}
<h2 id="{{.ID}}-anomalies">Anomalies</h2>
<div class="overview">
<table class="kinds"><thead><tr><th>kind</th><th>phenomenon</th><th class="num">count</th></tr></thead><tbody>
{{- range .Kinds}}<tr><td><a href="#{{.ID}}">{{.Name}}</a></td><td>{{.Phenomenon}}</td><td class="num">{{.Count}}</td></tr>{{end}}
</tbody></table>
<div class="legend-box"><div class="legend-title">Dependency edges</div>{{$.Legend}}</div>
<div class="legend-box"><div class="legend-title">Operations</div><dl class="notation">
<div><dt><code>r x 1</code></dt><dd>read x, saw 1</dd></div>
<div><dt><code>w x 1</code></dt><dd>wrote 1 to x</dd></div>
<div><dt><code>r* x 1</code></dt><dd>locking read</dd></div>
<div><dt><code>d x</code></dt><dd>deleted x</dd></div>
<div><dt><code>a x 1</code></dt><dd>appended 1 to the list x</dd></div>
<div><dt><code>r x [1,2]</code></dt><dd>read the list x</dd></div>
<div><dt><code>scan 1 9 [1=a,4=b]</code></dt><dd>range read of keys 1 to 9</dd></div>
<div><dt><code>_</code></dt><dd>absent: no value (a key before its first write or after a delete; as a scan's upper end, no end)</dd></div>
</dl></div>
</div>
{{- range .Kinds}}
<section class="kind" id="{{.ID}}">
<h3>{{.Name}}{{if .Phenomenon}} <span class="ph">{{.Phenomenon}}</span>{{end}} <span class="count">{{.Count}}</span></h3>
<ol class="anomalies">
{{- range .Shown}}
<li class="anomaly" id="{{.ID}}">
<div class="a-head"><span class="a-title">{{.Title}}</span>{{if .Phenomenon}}<span class="ph">{{.Phenomenon}}</span>{{end}}<span class="a-links">{{if .PictureSVG}}<a href="{{.PictureSVG}}">picture (SVG)</a> <a href="{{.PictureDOT}}">DOT</a>{{end}}{{if .TimelineHref}}<a class="tl-link" href="{{.TimelineHref}}">on the timeline ↓</a>{{end}}</span></div>
<p class="explain">{{.Explanation}}</p>
{{- if .Chain}}<p class="chain"><code>{{.Chain}}</code></p>{{end}}
{{- if .Core}}<p class="note">{{.Core}}</p>{{end}}
{{- if .Edges}}<ul class="edges">{{range .Edges}}<li><code class="edge-name dep-{{.Dep}}">{{.Chain}}</code> {{.Text}}</li>{{end}}</ul>{{end}}
{{- if .BestNote}}<p class="note best">{{.BestNote}}</p>
{{- if .Forced}}<div class="edges-h">Every choice has these edges</div><ul class="edges forced">{{range .Forced}}<li><code class="edge-name dep-{{.Dep}}">{{.Chain}}</code> {{.Text}}</li>{{end}}</ul>{{end}}
{{- if .Chosen}}<div class="edges-h">The solver's choice</div><ul class="edges chosen">{{range .Chosen}}<li><code class="edge-name dep-{{.Dep}}">{{.Chain}}</code> {{.Text}}</li>{{end}}</ul>{{end}}
{{- end}}
<div class="a-body">
{{- if .Cycle}}<figure class="ring">{{.Cycle}}</figure>{{end}}
<div class="txns">
{{- range .Txns}}
<div class="txn{{if .Init}} init{{end}}" id="{{.ID}}"><div class="t-head">{{if .Href}}<a href="{{.Href}}" class="t-name">{{.Name}}</a>{{else}}<span class="t-name">{{.Name}}</span>{{end}}
{{- if .Session}}<span class="meta">session {{.Session}}</span>{{end}}<span class="status {{.Status}}">{{.Status}}</span>{{if .When}}<span class="meta">{{.When}}</span>{{end}}{{if .Timestamps}}<span class="meta">{{.Timestamps}}</span>{{end}}
{{- range .Tags}}<span class="tag {{.Class}}">{{.Text}}</span>{{end}}</div>
<div class="ops">{{range .Ops}}{{if .Gap}}<span class="gap">… {{.Gap}} more …</span>{{else}}<span class="{{.Class}}">{{.Text}}{{range .Tags}}<span class="tag {{.Class}}">{{.Text}}</span>{{end}}</span>{{end}}{{end}}</div></div>
{{- end}}
</div>
</div>
</li>
{{- end}}
</ol>
{{- if .More}}<p class="more">… and {{.More}} more {{.Name}} anomalies, not shown here (every one is in the JSON result).</p>{{end}}
</section>
{{- end}}
{{- end}}
{{- if .Timelines}}
<h2 id="{{.ID}}-timeline">Timeline</h2>
<p class="caption">Sessions as lanes, transactions as bars: <span class="sw committed"></span>committed <span class="sw aborted"></span>aborted <span class="sw unknown"></span>unknown. The anomalies' transactions are <span class="sw hl"></span>outlined and named; click one to go to its anomaly.</p>
{{- range .Timelines}}
<figure class="tl" id="{{.ID}}"><figcaption>{{.Title}} {{range $i, $l := .Links}}{{if $i}}, {{end}}<a href="{{$l.Href}}">{{$l.Text}}</a>{{end}}<span class="axis">{{if .Timed}}x: begin and end instants in order, not to scale{{else}}x: file order{{end}}</span></figcaption><div class="scroll">{{.SVG}}</div></figure>
{{- end}}
{{- if .NoTimeline}}<p class="more">{{.NoTimeline}} anomalies shown above have no timeline: the timelines' size limit was reached.</p>{{end}}
{{- end}}
</section>
{{- end}}
{{- with .Run}}
<section class="run" id="run">
<h2>Run</h2>
<p class="run-desc">{{.Description}}</p>
<dl class="stats">{{range .Stats}}<div><dt>{{.Label}}</dt><dd>{{.Value}}</dd></div>{{end}}</dl>
{{- range .Plots}}
<figure class="plot" id="{{.ID}}"><figcaption>{{.Title}}{{range .Links}} <a href="{{.Href}}">{{.Text}}</a>{{end}}</figcaption>
<div class="plot-svg">{{.SVG}}</div>
<p class="caption">{{.Caption}}</p></figure>
{{- end}}
</section>
{{- end}}
<footer>Generated by isoscope. This page is self-contained: it loads nothing from the network.</footer>
</body>
</html>
`))

const css = `
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#f6f8fa;--card:#fff;
--ww:#D55E00;--wr:#0072B2;--rw:#E69F00;--so:#009E73;--rt:#CC79A7;--pwr:#56B4E9;--prw:#8F6A2E;
--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue","Liberation Sans","DejaVu Sans",Arial,sans-serif}
code,.ops,.chain{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono","DejaVu Sans Mono",monospace}
a{color:#0969da;text-decoration:none}a:hover{text-decoration:underline}
header.top{display:flex;align-items:baseline;gap:24px;padding:14px 32px;background:#24292f;color:#fff}
header.top h1{margin:0;font-size:20px;font-weight:600}
header.top nav a{color:#c9d1d9;margin-right:18px;font-size:14px}
.toc,section.history,section.run{max-width:1240px;margin:0 auto;padding:0 32px}
section.run{padding-top:8px;padding-bottom:24px}.run-desc{margin:8px 0}
.toc h2{font-size:17px}.toc ul{list-style:none;padding:0}.toc li{margin:4px 0}
.pill{display:inline-block;min-width:80px;text-align:center;border-radius:10px;padding:0 8px;font-size:12px;color:#fff;background:var(--warn)}
.pill.satisfied{background:var(--ok)}.pill.violation{background:var(--bad)}
section.history{padding-top:24px;padding-bottom:24px}
.banner{border-radius:10px;padding:18px 24px;border-left:10px solid var(--warn);background:#fff8c5}
.banner.violation{border-color:var(--bad);background:#ffebe9}
.banner.satisfied{border-color:var(--ok);background:#dafbe1}
.banner .file{font-size:13px;color:var(--muted);word-break:break-all}
.banner .verdict{font-size:28px;font-weight:700;letter-spacing:.2px}
.banner.violation .verdict{color:#a40e26}.banner.satisfied .verdict{color:#116329}.banner.unknown .verdict{color:#7d4e00}
.banner .sub{color:var(--fg);margin-top:2px}
.note{color:var(--warn);font-size:14px}
.stats{display:flex;flex-wrap:wrap;gap:12px;margin:18px 0}
.stats div{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:8px 16px;min-width:120px}
.stats dt{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.5px}
.stats dd{margin:0;font-size:20px;font-weight:600;font-variant-numeric:tabular-nums}
h2{font-size:22px;margin:28px 0 10px;border-bottom:1px solid var(--line);padding-bottom:4px}
.overview{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}
table.kinds{border-collapse:collapse;background:var(--card);border:1px solid var(--line);border-radius:8px}
table.kinds th,table.kinds td{padding:5px 14px;border-bottom:1px solid var(--line);text-align:left}
table.kinds th{font-size:12px;color:var(--muted);text-transform:uppercase}
.num{text-align:right!important;font-variant-numeric:tabular-nums}
.legend-box{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:8px 14px;max-width:100%;overflow-x:auto}
dl.notation{display:grid;grid-template-columns:repeat(auto-fill,minmax(230px,1fr));gap:2px 18px;margin:4px 0 0;font-size:13px}
dl.notation div{display:flex;gap:8px;align-items:baseline}dl.notation dt{white-space:nowrap}dl.notation dd{margin:0;color:var(--muted)}
.legend-title{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.5px}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans","DejaVu Sans",Arial,sans-serif;fill:var(--fg)}
section.kind h3{font-size:19px;margin:26px 0 8px}
.ph{display:inline-block;font-size:12px;font-weight:600;border:1px solid #8250df;color:#8250df;border-radius:10px;padding:0 8px;margin-left:6px;vertical-align:middle}
.count{display:inline-block;font-size:13px;background:#24292f;color:#fff;border-radius:10px;padding:0 9px;margin-left:6px;vertical-align:middle}
ol.anomalies{list-style:none;padding:0;margin:0}
li.anomaly{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:14px 18px;margin:12px 0;scroll-margin-top:12px}
li.anomaly:target{box-shadow:0 0 0 3px #ffd33d}
.a-head{display:flex;align-items:center;gap:6px}.a-title{font-weight:700;font-size:16px}
.a-links{margin-left:auto;font-size:13px;display:flex;gap:12px}
ul.edges{margin:4px 0 10px;padding-left:18px;font-size:14px}ul.edges li{margin:2px 0}
.edge-name{font-size:12px;font-weight:600;white-space:nowrap;border-left:4px solid #59636e;padding-left:5px;margin-right:4px}
.edge-name.dep-ww{border-color:var(--ww)}.edge-name.dep-wr{border-color:var(--wr)}.edge-name.dep-rw{border-color:var(--rw)}
.edge-name.dep-so{border-color:var(--so)}.edge-name.dep-rt{border-color:var(--rt)}.edge-name.dep-pwr{border-color:var(--pwr)}.edge-name.dep-prw{border-color:var(--prw)}
.edges-h{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.5px;margin-top:6px}
ul.edges.chosen li{color:#7d4e00}
.tag.core{background:#8250df}
.explain{margin:6px 0;font-size:16px}
.chain{margin:4px 0 10px;font-size:13px;color:var(--muted);overflow-x:auto}
.a-body{display:flex;flex-wrap:wrap;gap:22px;align-items:flex-start}
figure{margin:0}figure.ring{flex:none;background:#fbfcfd;border:1px solid var(--line);border-radius:8px;padding:6px}
svg.cycle .node ellipse{fill:#fff;stroke:#24292f;stroke-width:1.6}
svg.cycle .node.init ellipse{fill:#eaeef2;stroke-dasharray:4 3}
svg.cycle .node text{font-weight:600}
svg.cycle a:hover ellipse{fill:#fff8c5}
.txns{flex:1;min-width:320px;display:flex;flex-direction:column;gap:8px}
.txn{border:1px solid var(--line);border-radius:8px;padding:6px 10px;scroll-margin-top:12px}
.txn.init{background:#f6f8fa}
.t-head{display:flex;flex-wrap:wrap;align-items:center;gap:8px;margin-bottom:4px}
.t-name{font-weight:700;font-size:15px}
.meta{font-size:12px;color:var(--muted)}
.status{font-size:11px;border-radius:8px;padding:0 7px;background:#ddf4e4;color:#116329}
.status.aborted{background:#ffebe9;color:#a40e26}.status.unknown{background:#eaeef2;color:#59636e}
.ops{display:flex;flex-wrap:wrap;gap:5px;font-size:13px}
.op{display:inline-flex;align-items:center;gap:6px;padding:1px 7px;border-radius:5px;background:#f6f8fa;border:1px solid #e4e8ec}
.op.hl{font-weight:700;border-width:2px}
.gap{color:var(--muted);font-style:italic;padding:1px 4px}
.tag{font:600 11px/1.6 system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans","DejaVu Sans",sans-serif;border-radius:8px;padding:0 6px;color:#fff;background:#59636e;white-space:nowrap}
.op.dep-ww{border-color:var(--ww);background:#fbe3d6}.tag.dep-ww{background:var(--ww)}
.op.dep-wr{border-color:var(--wr);background:#d9ebf6}.tag.dep-wr{background:var(--wr)}
.op.dep-rw{border-color:var(--rw);background:#fcefd2}.tag.dep-rw{background:#b07800}
.op.dep-so{border-color:var(--so);background:#d5f1e8}.tag.dep-so{background:var(--so)}
.op.dep-rt{border-color:var(--rt);background:#f6e3ee}.tag.dep-rt{background:#b0558a}
.op.dep-pwr{border-color:var(--pwr);background:#e0f1fb}.tag.dep-pwr{background:#2a86bb}
.op.dep-prw{border-color:var(--prw);background:#efe6d6}.tag.dep-prw{background:var(--prw)}
.op.bad{border-color:var(--bad);background:#ffebe9}.tag.bad{background:var(--bad)}
.op.rel{border-color:var(--warn);background:#fff8c5}.tag.rel{background:var(--warn)}
.more{color:var(--muted);font-style:italic}
.caption{color:var(--muted);font-size:14px}
.sw{display:inline-block;width:22px;height:11px;border-radius:3px;margin:0 4px 0 10px;vertical-align:middle;background:#a7d7b5}
.sw.aborted{background:#f4b4b4}.sw.unknown{background:#d0d7de}.sw.hl{background:#a7d7b5;outline:2.5px solid #24292f}
figure.tl{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:8px 12px;margin:12px 0;scroll-margin-top:12px}
figure.tl:target{box-shadow:0 0 0 3px #ffd33d}
figure.tl figcaption{font-size:14px;margin-bottom:6px}
.axis{float:right;color:var(--muted);font-size:12px}
.scroll{overflow-x:auto}
svg.timeline .lane-bg{fill:#f6f8fa}
svg.timeline .lane{fill:var(--muted)}
svg.timeline .bar{fill:#a7d7b5;stroke:#6fb485;stroke-width:1}
svg.timeline .bar.aborted{fill:#f4b4b4;stroke:#d27c7c}
svg.timeline .bar.unknown{fill:#d0d7de;stroke:#9aa4ae}
svg.timeline .bar.hl{fill:#2da44e;stroke:#24292f;stroke-width:2.5}
svg.timeline .bar.hl.aborted{fill:#cf222e}svg.timeline .bar.hl.unknown{fill:#8c959f}
svg.timeline .bar:target{stroke:#d4a72c;stroke-width:5}
svg.timeline .bar-name{fill:#24292f}
svg.timeline .bar-name.hl{font-weight:700}
figure.plot{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:8px 12px;margin:12px 0;max-width:820px}
figure.plot figcaption{font-size:15px;font-weight:600}figure.plot figcaption a{font-weight:400;font-size:13px;margin-left:10px}
.plot-svg svg{display:block;width:100%;height:auto}
.plot-svg svg text{font-family:"Liberation Sans",Arial,Helvetica,sans-serif!important}
footer{max-width:1240px;margin:0 auto;padding:16px 32px 40px;color:var(--muted);font-size:13px}
`
