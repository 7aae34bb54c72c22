package replay_test

import (
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/replay"
	"github.com/turnguard/turnguard/internal/testkit/guardiantest"
)

// chromium finds a Chromium to render with. CI installs Debian's package
// and sets TURNGUARD_REQUIRE_CHROMIUM, so there a missing browser fails the
// test instead of skipping it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("TURNGUARD_REQUIRE_CHROMIUM") != "" {
		t.Fatal("no Chromium found (apt-get install chromium)")
	}
	t.Skip("no Chromium found (apt-get install chromium); CI runs this test")
	return ""
}

// TestHTMLRendersInChromium writes the taint-window session as an HTML
// report and renders it with headless Chromium: the DOM must hold the
// session id and the deny, and a screenshot must show them — a dark
// header, and the deny's red.
func TestHTMLRendersInChromium(t *testing.T) {
	browser := chromium(t)
	_, built := loadScenario(t, filepath.Join("..", "..", "testdata", "scenarios", "taint-window.yaml"))
	rs := guardiantest.DefaultRules(t)
	rec := newRecorder(t, rs)
	rec.publishStepwise(built.Messages)
	rec.finish()
	src := rec.source()
	session := built.Messages[0].SessionID
	tl, err := replay.BuildTimeline(context.Background(), src, rec.guardian(), rs, wholeRange(t, src), "default", session)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "timeline.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := replay.WriteHTML(f, tl); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, external := range []string{"<script", "src=", "href=", "@import", "url("} {
		if strings.Contains(string(raw), external) {
			t.Errorf("the report is not self-contained: it has %q", external)
		}
	}

	run := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
			"--user-data-dir=" + filepath.Join(dir, "profile"), "--window-size=1280,900"}
		cmd := exec.CommandContext(ctx, browser, append(append(base, args...), "file://"+page)...)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
		}
		return stdout.String()
	}

	dom := run("--dump-dom")
	for _, want := range []string{"Session " + session, `data-decision="deny"`, `<b id="deny-count">1</b>`, "alert TG-TAINT-001", "set untrusted_content"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered DOM lacks %q", want)
		}
	}

	shot := filepath.Join(dir, "shot.png")
	run("--screenshot=" + shot)
	img := decodePNG(t, shot)
	b := img.Bounds()
	if b.Dx() != 1280 || b.Dy() != 900 {
		t.Fatalf("screenshot is %dx%d", b.Dx(), b.Dy())
	}
	colors := map[[3]uint32]bool{}
	var header, denyRed, nonWhite int
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			colors[[3]uint32{r, g, bl}] = true
			if r < 245 || g < 245 || bl < 245 {
				nonWhite++
			}
			if near(r, g, bl, 0x14, 0x21, 0x3d) && y < 120 {
				header++
			}
			if near(r, g, bl, 0xb3, 0x26, 0x1e) {
				denyRed++
			}
		}
	}
	t.Logf("screenshot: %d colours, %d non-white pixels, %d header pixels, %d deny-red pixels", len(colors), nonWhite, header, denyRed)
	if len(colors) < 50 || nonWhite < b.Dx()*b.Dy()/10 {
		t.Errorf("the screenshot looks empty: %d colours, %d non-white pixels", len(colors), nonWhite)
	}
	if header < 1280*50 {
		t.Errorf("no header band in the screenshot (%d pixels)", header)
	}
	if denyRed < 100 {
		t.Errorf("no deny red in the screenshot (%d pixels)", denyRed)
	}
}

func near(r, g, b, wr, wg, wb uint32) bool {
	d := func(a, b uint32) uint32 {
		if a > b {
			return a - b
		}
		return b - a
	}
	return d(r, wr) < 12 && d(g, wg) < 12 && d(b, wb) < 12
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}
