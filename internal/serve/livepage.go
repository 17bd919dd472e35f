package serve

// livePage is the live page GET / serves: inline styles and script only;
// it fetches nothing but /v1/state, /v1/violations?after=SEQ and the
// pictures of violations, from the service itself, twice a second. Text
// from findings goes into the page as text (textContent), pictures as
// data: images, never as markup.
const livePage = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>isoscope serve</title>
<style>
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#f6f8fa;--card:#fff;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue","Liberation Sans","DejaVu Sans",Arial,sans-serif}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono","DejaVu Sans Mono",monospace}
header{display:flex;align-items:baseline;gap:20px;padding:14px 32px;background:#24292f;color:#fff}
header h1{margin:0;font-size:20px;font-weight:600}
header .level{color:#c9d1d9}
#status{margin-left:auto;font-size:13px;color:#c9d1d9}
#status::before{content:"";display:inline-block;width:9px;height:9px;border-radius:50%;background:#8c959f;margin-right:7px}
#status.ok::before{background:#2da44e}#status.err::before{background:var(--bad)}
main{max-width:1240px;margin:0 auto;padding:8px 32px 40px}
.banner{border-radius:10px;padding:14px 22px;margin:18px 0;border-left:10px solid var(--ok);background:#dafbe1}
.banner.bad{border-color:var(--bad);background:#ffebe9}
.banner .verdict{font-size:24px;font-weight:700}
.banner.bad .verdict{color:#a40e26}.banner .verdict{color:#116329}
.banner.warn{border-color:var(--warn);background:#fff8c5}.banner.warn .verdict{color:#7d4e00}
.banner .warning{color:var(--warn);font-weight:600;margin:4px 0 2px;border-left:4px solid var(--warn);padding-left:8px}
.stats{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:12px;margin:0}
.stats div{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:8px 14px}
.stats dt{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.5px}
.stats dd{margin:0;font-size:20px;font-weight:600;font-variant-numeric:tabular-nums}
.stats dd small{font-size:12px;color:var(--muted);font-weight:400}
h2{font-size:20px;margin:26px 0 10px;border-bottom:1px solid var(--line);padding-bottom:4px}
#kinds{display:flex;flex-wrap:wrap;gap:8px;margin:8px 0}
#kinds span{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:1px 10px;font-size:13px}
#kinds b{margin-left:6px}
ol#violations{list-style:none;padding:0;margin:0}
li.violation{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:12px 16px;margin:10px 0}
li.violation.fresh{animation:fresh 2s ease-out}
@keyframes fresh{from{box-shadow:0 0 0 4px #ffd33d}to{box-shadow:none}}
.v-head{display:flex;flex-wrap:wrap;align-items:center;gap:8px}
.v-kind{font-weight:700;font-size:16px}
.ph{font-size:12px;font-weight:600;border:1px solid #8250df;color:#8250df;border-radius:10px;padding:0 8px}
.pending{font-size:12px;border-radius:10px;padding:0 8px;background:#fff8c5;color:#7d4e00}
.meta{font-size:12px;color:var(--muted)}
.seq{margin-left:auto}
.explain{margin:6px 0;font-size:15px}
.v-body{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.v-facts{font-size:13px;color:var(--muted)}
.v-facts code{color:var(--fg)}
figure{margin:0}figure img{display:block;max-width:100%;border:1px solid var(--line);border-radius:8px;background:#fff}
#empty{color:var(--muted);font-style:italic}
#token{display:none;margin:18px 0;background:#fff8c5;border:1px solid #d4a72c;border-radius:8px;padding:10px 14px}
#token input{font:inherit;padding:2px 6px;width:24em}
footer{color:var(--muted);font-size:13px;margin-top:30px}
</style>
</head>
<body>
<header><h1>isoscope serve</h1><span class="level" id="level"></span><span id="status">connecting…</span></header>
<main>
<div id="token">This service wants a bearer token: <input id="token-input" type="password" autocomplete="off" aria-label="bearer token"> <button id="token-use" type="button">use it</button> <span class="meta">(or open the page as /#token=…)</span></div>
<div class="banner" id="banner"><div class="verdict" id="verdict">no violation so far</div><div class="warning" id="warning" role="alert" hidden></div><div class="meta" id="since"></div></div>
<dl class="stats">
<div><dt>transactions checked</dt><dd id="checked">–</dd></div>
<div><dt>rate</dt><dd><span id="rate">–</span> <small>/s</small></dd></div>
<div><dt>lag</dt><dd id="lag">–</dd></div>
<div><dt>pending verdicts</dt><dd id="pending">–</dd></div>
<div><dt>checker memory</dt><dd id="memory">–</dd></div>
<div><dt>Go heap</dt><dd id="heap">–</dd></div>
<div><dt>in memory / spilled</dt><dd id="held">–</dd></div>
<div><dt>queue</dt><dd id="queue">–</dd></div>
<div><dt>set aside</dt><dd id="skipped">–</dd></div>
<div><dt>refused batches</dt><dd id="refused">–</dd></div>
<div><dt>retries taken once</dt><dd id="duplicates">–</dd></div>
<div><dt>connections</dt><dd id="conns">–</dd></div>
</dl>
<h2>Violations <span class="meta" id="vcount"></span></h2>
<div id="kinds"></div>
<p class="meta">In the pictures, each transaction's box gives its start_ts and commit_ts (when it has them) and its operations at issue: <code>r x 1</code> read x and saw 1, <code>w x 1</code> wrote 1 to x, <code>a x 1</code> appended 1 to the list x, <code>_</code> absent (no value: a key before its first write or after a delete).</p>
<p id="empty">None yet: violations appear here as they become final.</p>
<ol id="violations"></ol>
<footer>This page loads nothing but the service's own state and violations; it refreshes twice a second.</footer>
</main>
<script>
(() => {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const shown = 200; // violations kept on the page
  let token = "";
  const m = location.hash.match(/token=([^&]+)/);
  if (m) {
    token = decodeURIComponent(m[1]);
    sessionStorage.setItem("isoscope-token", token);
    history.replaceState(null, "", location.pathname);
  } else {
    token = sessionStorage.getItem("isoscope-token") || "";
  }
  let last = 0, total = 0, busy = false;
  const counts = new Map();
  const opts = () => ({cache: "no-store", headers: token ? {Authorization: "Bearer " + token} : {}});
  async function get(path) {
    const r = await fetch(path, opts());
    if (r.status === 401) throw new Error("unauthorized");
    if (!r.ok) throw new Error(path + ": " + r.status);
    return r;
  }
  const int = (n) => Number(n).toLocaleString("en-US");
  function bytes(b) {
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return (i ? b.toFixed(1) : b) + " " + u[i];
  }
  function secs(s) {
    if (s < 0.001) return (s * 1e6).toFixed(0) + " µs";
    if (s < 1) return (s * 1e3).toFixed(1) + " ms";
    if (s < 120) return s.toFixed(2) + " s";
    return Math.round(s / 60) + " min";
  }
  function status(ok, text) {
    const el = $("status");
    el.className = ok ? "ok" : "err";
    el.textContent = text;
  }
  function set(id, text) { $(id).textContent = text; }
  function state(st) {
    set("level", "checks " + st.level + " online");
    set("checked", int(st.checked));
    set("rate", int(Math.round(st.rate)));
    set("lag", secs(st.lag_seconds));
    set("pending", int(st.pending_verdicts));
    set("memory", bytes(st.memory_estimate_bytes));
    set("heap", bytes(st.heap_bytes));
    set("held", int(st.transactions_in_memory) + " / " + int(st.transactions_spilled));
    set("queue", int(st.queue_batches) + " / " + int(st.queue_max));
    set("skipped", int(st.skipped));
    let refused = 0;
    for (const k in st.refused) refused += st.refused[k];
    set("refused", int(refused));
    set("duplicates", int(st.duplicates));
    set("conns", int(st.connections_open));
    total = st.violations;
    const up = (Date.parse(st.now) - Date.parse(st.started)) / 1000;
    set("since", "up " + secs(up) + " · " + int(st.checked) + " transactions checked");
    // Suppressed findings are a warning beside the verdict, in the
    // warning colour: the verdict may miss violations.
    const warnings = st.warnings || [];
    set("verdict", total ? st.level + " VIOLATED: " + int(total) + (total === 1 ? " violation" : " violations") :
      warnings.length ? "no violation reported so far" : "no violation so far");
    set("warning", warnings.map((w) => "⚠ " + w).join(" "));
    $("warning").hidden = !warnings.length;
    $("banner").className = total ? "banner bad" : warnings.length ? "banner warn" : "banner";
    set("vcount", total ? "(" + int(total) + ")" : "");
  }
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  // notation writes a key or value of a finding as the explanations and
  // the pictures do: a string bare unless it could be read as another
  // value, null as _ (absent), a list as [1,2].
  function notation(x) {
    if (x === null || x === undefined) return "_";
    if (Array.isArray(x)) return "[" + x.map(notation).join(",") + "]";
    if (typeof x === "string" && (x === "" || x === "null" || /[\s"|,]/.test(x) || isFinite(Number(x)) || /^[+-]?(inf(inity)?|nan)$/i.test(x))) return JSON.stringify(x);
    return String(x);
  }
  // txnName names a transaction as the explanations do: T5, or its string
  // id, or the initial state.
  function txnName(x) { return x === "init" ? "the initial state" : typeof x === "number" ? "T" + x : String(x); }
  async function picture(fig, seq) {
    try {
      const svg = await (await get("/v1/violations/" + seq + "/picture.svg")).text();
      const img = el("img");
      img.alt = "the violation's transactions and operations";
      img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svg);
      fig.appendChild(img);
    } catch (e) {
      fig.remove();
    }
  }
  function kinds() {
    const box = $("kinds");
    box.replaceChildren();
    for (const [k, n] of [...counts].sort()) {
      const s = el("span", "", k);
      s.appendChild(el("b", "", int(n)));
      box.appendChild(s);
    }
  }
  function add(v) {
    counts.set(v.kind, (counts.get(v.kind) || 0) + 1);
    const li = el("li", "violation fresh");
    li.id = "v" + v.seq;
    li.dataset.kind = v.kind;
    const head = el("div", "v-head");
    head.appendChild(el("span", "v-kind", v.kind));
    if (v.phenomenon) head.appendChild(el("span", "ph", v.phenomenon));
    if (v.pending) head.appendChild(el("span", "pending", "pending"));
    if (v.stream) head.appendChild(el("span", "meta", "stream " + v.stream));
    head.appendChild(el("span", "meta seq", "#" + v.seq + " · " + new Date(v.at).toLocaleTimeString()));
    li.appendChild(head);
    li.appendChild(el("p", "explain", v.explanation || v.kind));
    const body = el("div", "v-body");
    const facts = el("div", "v-facts");
    const line = (label, value) => {
      const d = el("div", "", label + " ");
      d.appendChild(el("code", "", value));
      facts.appendChild(d);
    };
    line("transactions", (v.transactions || []).map(txnName).join(", "));
    if (v.key !== undefined) line("key", notation(v.key) + (v.value !== undefined && v.value !== null ? " = " + notation(v.value) : ""));
    if (v.streams) line("streams", v.streams.join(", "));
    body.appendChild(facts);
    const fig = el("figure");
    body.appendChild(fig);
    li.appendChild(body);
    const list = $("violations");
    list.insertBefore(li, list.firstChild);
    while (list.children.length > shown) list.lastChild.remove();
    $("empty").style.display = "none";
    picture(fig, v.seq);
  }
  async function poll() {
    if (busy) return;
    busy = true;
    try {
      const st = await (await get("/v1/state")).json();
      state(st);
      if (st.last_seq > last) {
        const text = await (await get("/v1/violations?after=" + last)).text();
        for (const l of text.split("\n")) {
          if (!l) continue;
          const v = JSON.parse(l);
          if (v.seq <= last) continue;
          last = v.seq;
          add(v);
        }
        kinds();
      }
      status(true, "live · updated " + new Date().toLocaleTimeString());
      $("token").style.display = "none";
    } catch (e) {
      status(false, e.message);
      if (e.message === "unauthorized") $("token").style.display = "block";
    } finally {
      busy = false;
    }
  }
  $("token-use").addEventListener("click", () => {
    token = $("token-input").value;
    sessionStorage.setItem("isoscope-token", token);
    poll();
  });
  poll();
  setInterval(poll, 500);
})();
</script>
</body>
</html>
`
