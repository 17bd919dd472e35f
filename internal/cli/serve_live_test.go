package cli

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// cleanBatch returns n committed transactions of one session that write
// key k in turn, each reading the previous value: no violation. Ids start
// at first, timestamps at ts.
func cleanBatch(first, n int, k string, ts int) string {
	var b strings.Builder
	prev := "null"
	for i := range n {
		v := fmt.Sprint(first + i)
		fmt.Fprintf(&b, `{"id":%d,"session":"load","start_ts":%d,"commit_ts":%d,"ops":[["r",%q,%s],["w",%q,%s]]}`+"\n",
			first+i, ts+2*i, ts+2*i+1, k, prev, k, v)
		prev = v
	}
	return b.String()
}

// headless starts headless Chromium (exe) in a window 1280 pixels wide
// and height high, and returns a browser context with opts (90 s at
// most) and its cancel.
func headless(t *testing.T, exe string, height int, opts ...chromedp.ContextOption) (context.Context, context.CancelFunc) {
	t.Helper()
	ctx, cancelTimeout := context.WithTimeout(context.Background(), 90*time.Second)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, height),
	)
	ctx, cancelCtx := chromedp.NewContext(ctx, opts...)
	return ctx, func() {
		cancelCtx()
		cancelAlloc()
		cancelTimeout()
	}
}

// TestServeLivePageInBrowser opens serve's live page in headless
// Chromium: the page shows the state; a violation posted to the service
// appears on the open page within a second, with its explanation and its
// picture, without a reload; the page made no request beyond the service
// itself. It saves a screenshot.
func TestServeLivePageInBrowser(t *testing.T) {
	exe := chromium(t)
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &announcer{addr: make(chan string, 1)}
	var stdout lockedWriter
	code := make(chan int, 1)
	go func() {
		code <- Main(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--memory-mb", "0", "--timeout", "300ms"}, nil, &stdout, stderr)
	}()
	defer func() {
		cancel()
		if c := <-code; c != ExitHolds {
			t.Errorf("serve: exit %d: %s", c, stderr.String())
		}
	}()
	var addr string
	select {
	case addr = <-stderr.addr:
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not start: %s", stderr.String())
	}
	base := "http://" + addr
	post := func(batch string) {
		t.Helper()
		resp, err := http.Post(base+"/v1/transactions", "application/x-ndjson", strings.NewReader(batch))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("post: %s", resp.Status)
		}
	}
	post(cleanBatch(1000, 300, "load", 1000))

	var (
		mu       sync.Mutex
		requests []string
	)
	bctx, bcancel := headless(t, exe, 1000, chromedp.WithListener(func(ev any) {
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			mu.Lock()
			requests = append(requests, e.Request.URL)
			mu.Unlock()
		case *network.EventWebSocketCreated:
			mu.Lock()
			requests = append(requests, e.URL)
			mu.Unlock()
		}
	}))
	defer bcancel()
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	eval := func(js string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return s
	}
	// The page shows the state once it has polled.
	waitFor := func(what, js string, within time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		for eval(js) != "true" {
			if time.Since(start) > within {
				t.Fatalf("%s: not within %v; the page says %q", what, within, eval(`document.body.innerText.slice(0, 600)`))
			}
			time.Sleep(20 * time.Millisecond)
		}
		return time.Since(start)
	}
	waitFor("the state", `String(document.getElementById("checked").textContent === "300")`, 10*time.Second)
	if got := eval(`document.querySelectorAll("li.violation").length + ""`); got != "0" {
		t.Fatalf("%s violations before any", got)
	}

	// A lost update, posted while the page is open, appears within a
	// second.
	post(`{"id":1,"session":0,"start_ts":10,"commit_ts":20,"ops":[["r","x",null],["w","x",1]]}
{"id":2,"session":1,"start_ts":15,"commit_ts":25,"ops":[["r","x",null],["w","x",2]]}
`)
	took := waitFor("the violation on the page", `String(document.querySelectorAll("li.violation").length >= 1)`, time.Second)
	t.Logf("the violation appeared %v after it was posted", took)
	card := eval(`document.querySelector("li.violation").innerText`)
	for _, want := range []string{"lost-update", "G-SIa", "T1", "T2", "lost", "transactions T1, T2", `key x`} {
		if !strings.Contains(card, want) {
			t.Errorf("the card lacks %q: %s", want, card)
		}
	}
	waitFor("the picture", `String(!!document.querySelector("li.violation figure img") && document.querySelector("li.violation figure img").complete && document.querySelector("li.violation figure img").naturalWidth > 0)`, 5*time.Second)
	// The picture shows the timestamps the explanation cites.
	pic := eval(`decodeURIComponent(document.querySelector("li.violation figure img").src)`)
	for _, want := range []string{"start_ts 10 commit_ts 20", "start_ts 15 commit_ts 25"} {
		if !strings.Contains(pic, want) {
			t.Errorf("the picture lacks %q: %s", want, pic)
		}
	}
	if v := eval(`document.getElementById("verdict").textContent`); !strings.Contains(v, "snapshot-isolation VIOLATED: 1 violation") {
		t.Errorf("verdict %q", v)
	}

	// More traffic for the screenshot: a concurrent write, and a stale
	// read that becomes final after --timeout.
	post(cleanBatch(2000, 200, "load2", 5000))
	post(`{"id":3,"session":2,"start_ts":30,"commit_ts":40,"ops":[["w","y",1]]}
{"id":4,"session":3,"start_ts":35,"commit_ts":45,"ops":[["w","y",2]]}
{"id":5,"session":4,"start_ts":50,"commit_ts":55,"ops":[["r","x",null],["w","z",1]]}
`)
	waitFor("three violations", `String(document.querySelectorAll("li.violation").length >= 3)`, 5*time.Second)
	time.Sleep(700 * time.Millisecond) // the pictures load, the rate settles
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(artifacts(t), "serve-live.png")
	if err := os.WriteFile(p, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", p, len(shot))

	mu.Lock()
	defer mu.Unlock()
	if len(requests) < 3 {
		t.Errorf("saw %d requests: is the network listener working?", len(requests))
	}
	for _, r := range requests {
		// A picture shown as a data: image is not a request to anywhere.
		if !strings.HasPrefix(r, base+"/") && !strings.HasPrefix(r, "data:image/svg+xml") {
			t.Errorf("the page made a request beyond the service: %s", r)
		}
	}
}
