//go:build long

// The browser test starts headless Chromium (about 7 CPU-seconds), so it
// runs with the tests tagged long (scripts/check-long).

package report

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// The browser test renders the report of the sample run in headless
// Chromium, driven by chromedriver over its W3C WebDriver HTTP API on
// loopback. It checks what a reader sees: every plot decoded by the
// browser with a non-zero size, the cluster tables with their rows, no
// script running from a hostile document, and it saves a screenshot of the
// whole page to $NEARDUP_SCREENSHOT_DIR (or the test's temporary
// directory). It is skipped when chromium or chromedriver is missing
// (Debian: apt-get install -y chromium chromium-driver), unless
// NEARDUP_REQUIRE_BROWSER is set, as CI sets it.

// chromeFlags keep Chromium off the network: this machine refuses its
// background connections.
var chromeFlags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1280,1024",
}

func lookChromium() (browser, driver string, ok bool) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	driver, err := exec.LookPath("chromedriver")
	return browser, driver, browser != "" && err == nil
}

// webdriver is a minimal W3C WebDriver client.
type webdriver struct {
	t       *testing.T
	base    string
	session string
}

func (w *webdriver) call(method, path string, body any) json.RawMessage {
	w.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			w.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	url := w.base + path
	if w.session != "" {
		url = w.base + "/session/" + w.session + path
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		w.t.Fatalf("webdriver %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out struct {
		Value json.RawMessage `json:"value"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil || resp.StatusCode != http.StatusOK {
		w.t.Fatalf("webdriver %s %s: status %d: %.500s", method, path, resp.StatusCode, b)
	}
	return out.Value
}

// script runs JavaScript in the page and decodes its result into v.
func (w *webdriver) script(js string, v any) {
	w.t.Helper()
	raw := w.call("POST", "/execute/sync", map[string]any{"script": js, "args": []any{}})
	if err := json.Unmarshal(raw, v); err != nil {
		w.t.Fatalf("script result %.200s: %v", raw, err)
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startDriver(t *testing.T, driver, browser string) *webdriver {
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, driver, "--port="+strconv.Itoa(port), "--allowed-ips=127.0.0.1")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
	})
	w := &webdriver{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(w.base + "/status")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("chromedriver did not start: %v\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	args := append([]string{"--user-data-dir=" + t.TempDir()}, chromeFlags...)
	raw := w.call("POST", "/session", map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName":        "chrome",
		"goog:chromeOptions": map[string]any{"binary": browser, "args": args},
	}}})
	var s struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(raw, &s); err != nil || s.SessionID == "" {
		t.Fatalf("new session: %.500s", raw)
	}
	w.session = s.SessionID
	t.Cleanup(func() { w.call("DELETE", "", nil) })
	return w
}

func TestBrowser(t *testing.T) {
	browser, driver, ok := lookChromium()
	switch {
	case !ok && os.Getenv("NEARDUP_REQUIRE_BROWSER") != "":
		t.Fatal("NEARDUP_REQUIRE_BROWSER is set but chromium or chromedriver is missing (apt-get install -y chromium chromium-driver)")
	case !ok:
		t.Skip("chromium and chromedriver are not installed (apt-get install -y chromium chromium-driver)")
	}
	r, html := renderedSample(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "neardup-report.html")
	if err := os.WriteFile(page, html, 0o644); err != nil {
		t.Fatal(err)
	}

	w := startDriver(t, driver, browser)
	w.call("POST", "/url", map[string]any{"url": "file://" + page})
	var got struct {
		Title  string
		Images []struct {
			Alt, Src                                   string
			Width, Height, NaturalWidth, NaturalHeight int
			Complete                                   bool
		}
		Tables    int
		Rows      []int
		Scripts   int
		Removed   string
		Documents string
		Hostile   bool
		Height    int
		// Download is the removed-ids link's download name, IDs its
		// decoded content's line count; T2S says the --t2s note is shown.
		Download string
		IDs      int
		T2S      bool
	}
	w.script(`
const imgs = [...document.querySelectorAll('img')].map(i => ({Alt: i.alt, Src: i.src.slice(0, 22),
  Width: i.width, Height: i.height, NaturalWidth: i.naturalWidth, NaturalHeight: i.naturalHeight, Complete: i.complete}));
const tables = [...document.querySelectorAll('table.members')];
return {Title: document.title, Images: imgs, Tables: tables.length,
  Rows: tables.map(t => t.querySelectorAll('tr.removed').length),
  Scripts: document.querySelectorAll('script').length,
  Removed: document.getElementById('n-removed').textContent,
  Documents: document.getElementById('n-documents').textContent,
  Hostile: [...document.querySelectorAll('td.doc')].some(td => td.textContent.includes("<script>document.title='pwned'</script>")),
  Height: document.documentElement.scrollHeight,
  Download: (document.getElementById('removed-ids') || {download: ''}).download,
  IDs: (() => { const a = document.getElementById('removed-ids'); if (!a) return -1;
    return atob(a.href.split(',')[1]).trim().split('\n').length; })(),
  T2S: [...document.querySelectorAll('p.warn')].some(p => p.offsetHeight > 0 && p.textContent.includes('--t2s'))};`, &got)

	if got.Title != "neardup dedup report" {
		t.Errorf("title %q: a document's script ran or the page is wrong", got.Title)
	}
	if got.Scripts != 0 {
		t.Errorf("%d script elements in the page, want 0", got.Scripts)
	}
	if !got.Hostile {
		t.Error("the hostile document is not shown as text")
	}
	if len(got.Images) < 3 {
		t.Errorf("%d plots, want at least 3 (similarity, sizes, stages)", len(got.Images))
	}
	for _, im := range got.Images {
		if !im.Complete || im.NaturalWidth == 0 || im.NaturalHeight == 0 || im.Width == 0 || im.Height == 0 || im.Src != "data:image/png;base64," {
			t.Errorf("plot %q not shown: %+v", im.Alt, im)
		}
	}
	if got.Tables != len(r.Stats.Examples) || got.Tables < 10 {
		t.Errorf("%d cluster tables, want %d (at least 10)", got.Tables, len(r.Stats.Examples))
	}
	for i, n := range got.Rows {
		if n == 0 {
			t.Errorf("cluster table %d has no removed documents", i+1)
		}
	}
	if got.Download != "removed-ids.txt" || got.IDs != r.Stats.Removed {
		t.Errorf("removed-ids download %q with %d ids, want removed-ids.txt with %d", got.Download, got.IDs, r.Stats.Removed)
	}
	if !got.T2S {
		t.Error("the note that --t2s would join the Traditional and Simplified verses is not shown")
	}
	if got.Removed != Number(r.Stats.Removed) || got.Documents != Number(r.Stats.Documents) {
		t.Errorf("summary shows %s documents, %s removed; want %d, %d", got.Documents, got.Removed, r.Stats.Documents, r.Stats.Removed)
	}

	// Screenshot of the whole page.
	w.call("POST", "/window/rect", map[string]any{"width": 1280, "height": min(max(got.Height, 1024), 16000)})
	raw := w.call("GET", "/screenshot", nil)
	var b64 string
	if err := json.Unmarshal(raw, &b64); err != nil {
		t.Fatal(err)
	}
	shot, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	im, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if colors := distinctColors(im, 64); im.Bounds().Dx() < 800 || colors < 32 {
		t.Errorf("screenshot is %v with %d distinct colours: the page looks blank", im.Bounds(), colors)
	}
	out := os.Getenv("NEARDUP_SCREENSHOT_DIR")
	if out == "" {
		out = dir
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(out, "neardup-report.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %v: %s", im.Bounds().Size(), path)

	checkStagedPage(t, w, r, dir)
}

// checkStagedPage shows the sample run as a staged job reports it
// (stagedVariant) in the browser: its plots decode, it has every cluster
// table, and its tasks' usage is shown in place of the stage times.
func checkStagedPage(t *testing.T, w *webdriver, r *Run, dir string) {
	var buf bytes.Buffer
	v := stagedVariant(r)
	if err := Write(&buf, v, Options{}); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "staged-report.html")
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	w.call("POST", "/url", map[string]any{"url": "file://" + page})
	var got struct {
		Images, Decoded, Tables, UsageRows int
		Stages                             bool
	}
	w.script(`
const imgs = [...document.querySelectorAll('img')];
const usage = document.getElementById('task-stages');
return {Images: imgs.length, Decoded: imgs.filter(i => i.complete && i.naturalWidth > 0 && i.width > 0).length,
  Tables: document.querySelectorAll('table.members').length,
  UsageRows: usage && usage.offsetHeight > 0 ? usage.querySelectorAll('tr').length - 1 : -1,
  Stages: !!document.getElementById('stages')};`, &got)
	if got.Images < 2 || got.Decoded != got.Images {
		t.Errorf("staged report: %d of %d plots shown, want all of at least 2 (similarity, sizes)", got.Decoded, got.Images)
	}
	if got.Tables != len(r.Stats.Examples) {
		t.Errorf("staged report: %d cluster tables, want %d", got.Tables, len(r.Stats.Examples))
	}
	if got.UsageRows != len(v.Tasks) || got.Stages {
		t.Errorf("staged report: %d rows of the tasks' usage shown (want %d), stage times shown: %v", got.UsageRows, len(v.Tasks), got.Stages)
	}
}

// distinctColors counts the colours of im, up to limit.
func distinctColors(im image.Image, limit int) int {
	seen := map[[4]uint32]bool{}
	b := im.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bb, a := im.At(x, y).RGBA()
			seen[[4]uint32{r, g, bb, a}] = true
			if len(seen) >= limit {
				return len(seen)
			}
		}
	}
	return len(seen)
}
