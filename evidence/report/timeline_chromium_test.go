package report_test

import (
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/report"
)

// TestTimelineInChromium opens the report of one leaky session that has
// every kind of record in a real browser: the shipped page logs nothing
// (no CSP violation, no error), the SVG lays out at a real size, and a
// screenshot shows each kind of mark in its lane, in time order.
//
// No golden image is kept: fonts and anti-aliasing differ between
// machines, so the screenshot is checked for what must hold anywhere (its
// size, the marks' colours, which lane is above which, which mark is left
// of which) instead of pixel for pixel.
func TestTimelineInChromium(t *testing.T) {
	run, results, hits, attempts, alerts := timelineInput()
	dir := writeRun(t, run, results, hits, attempts, alerts, "")
	if err := report.WriteFile(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, evidence.ReportFile)
	url := "file://" + path

	t.Run("the report as shipped", func(t *testing.T) {
		dom, log := chromiumLog(t, "--enable-logging=stderr", "--v=0", "--dump-dom", url)
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, ":CONSOLE") {
				t.Errorf("the browser logged: %s", line)
			}
		}
		if n := strings.Count(dom, `<svg class="timeline"`); n != 1 {
			t.Errorf("%d timelines in the DOM, want 1", n)
		}
		if regexp.MustCompile(`(?i)<script|<img|<foreignobject`).MatchString(dom) {
			t.Error("the browser built a script, img or foreignObject element from evidence")
		}
		if !strings.Contains(dom, "egress &lt;script&gt;") {
			t.Error("the hostile alert rule is not shown as text in its tooltip")
		}
	})

	t.Run("the SVG has a real size", func(t *testing.T) {
		// A copy without the CSP, with a script that writes each
		// timeline's laid-out size onto <body>: the shipped page runs no
		// script, so it cannot be measured as it is.
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		csp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy"[^>]*>`)
		if !csp.Match(b) {
			t.Fatal("the report has no CSP meta")
		}
		page := csp.ReplaceAllString(string(b), "")
		page = strings.Replace(page, "</body>", `<script>document.body.setAttribute("data-tl",
Array.from(document.querySelectorAll("svg.timeline")).map(s => { const r = s.getBoundingClientRect(); return Math.round(r.width) + "x" + Math.round(r.height) }).join(","))</script></body>`, 1)
		measure := filepath.Join(t.TempDir(), "measure.html")
		if err := os.WriteFile(measure, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		dom := chromium(t, "--window-size=1280,1000", "--dump-dom", "file://"+measure)
		m := regexp.MustCompile(`data-tl="(\d+)x(\d+)"`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("no size measured: %s", firstMatch(dom, `<body[^>]*>`))
		}
		w, _ := strconv.Atoi(m[1])
		h, _ := strconv.Atoi(m[2])
		if w < 600 || h < 100 {
			t.Errorf("timeline laid out at %dx%d", w, h)
		}
	})

	t.Run("screenshot", func(t *testing.T) {
		shot := filepath.Join(t.TempDir(), "timeline.png")
		if keep := os.Getenv("GATEHOUSE_TIMELINE_SCREENSHOT"); keep != "" {
			shot = keep // to look at it: GATEHOUSE_TIMELINE_SCREENSHOT=/tmp/timeline.png
		}
		chromium(t, "--hide-scrollbars", "--window-size=1280,2000", "--screenshot="+shot, url)
		f, err := os.Open(shot)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		img, err := png.Decode(f)
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 2000 {
			t.Fatalf("screenshot is %v, want 1280x2000", b.Size())
		}
		// The marks' colours (timeline_svg.go) and the least each must
		// cover: a bar, ticks, diamonds and circles a few pixels wide.
		marks := []struct {
			name string
			rgb  [3]uint8
			min  int
		}{
			{"attempt bars", [3]uint8{0x09, 0x69, 0xda}, 2000},
			{"forbidden hit", [3]uint8{0xcf, 0x22, 0x2e}, 15},
			{"allowed hit", [3]uint8{0x1a, 0x7f, 0x37}, 15},
			{"alerts", [3]uint8{0xfb, 0x8c, 0x00}, 40},
			{"stop and response", [3]uint8{0x82, 0x50, 0xdf}, 100},
		}
		boxes := make([]box, len(marks))
		for i, mk := range marks {
			boxes[i] = find(img, mk.rgb)
			if boxes[i].n < mk.min {
				t.Errorf("%s: %d pixels of #%02x%02x%02x, want at least %d", mk.name, boxes[i].n, mk.rgb[0], mk.rgb[1], mk.rgb[2], mk.min)
			}
		}
		if t.Failed() {
			return
		}
		attempt, forbidden, allowed, alert, response := boxes[0], boxes[1], boxes[2], boxes[3], boxes[4]
		// Lanes top to bottom: attempts, kernel, hits: callback, hits:
		// inference, alerts, stop / response.
		order := []box{attempt, forbidden, allowed, alert, response}
		for i := 1; i < len(order); i++ {
			if order[i-1].cy() >= order[i].cy() {
				t.Errorf("%s (y %.0f) is not above %s (y %.0f)", marks[i-1].name, order[i-1].cy(), marks[i].name, order[i].cy())
			}
		}
		// One axis for all lanes: the forbidden hit (320 ms) lies right of
		// where the first attempt starts (100 ms) and left of the first
		// response effect; the control hit (1.9 s) left of the last
		// effect (2.1 s, the right end of the axis).
		if !(float64(attempt.x0) < forbidden.cx() && forbidden.cx() < allowed.cx() && allowed.cx() < float64(response.x1)) {
			t.Errorf("marks not in time order: attempt from x %d, forbidden hit x %.0f, control hit x %.0f, last effect to x %d",
				attempt.x0, forbidden.cx(), allowed.cx(), response.x1)
		}
		// All of it in one figure, not spread over the page.
		all := union(boxes...)
		if all.y1-all.y0 > 400 || all.x1-all.x0 < 600 {
			t.Errorf("the marks span %dx%d px: not one timeline", all.x1-all.x0, all.y1-all.y0)
		}
	})
}

// box is where pixels of one colour are in an image.
type box struct {
	n              int
	x0, y0, x1, y1 int
	sx, sy         int
}

func (b box) cx() float64 { return float64(b.sx) / float64(b.n) }
func (b box) cy() float64 { return float64(b.sy) / float64(b.n) }

func (b box) String() string {
	return fmt.Sprintf("%d px in (%d,%d)-(%d,%d)", b.n, b.x0, b.y0, b.x1, b.y1)
}

// find counts the pixels within a small distance of rgb (anti-aliasing
// and colour conversion may move a channel by a few steps).
func find(img image.Image, rgb [3]uint8) box {
	b := box{x0: 1 << 30, y0: 1 << 30, x1: -1, y1: -1}
	near := func(a uint32, want uint8) bool {
		d := int(a>>8) - int(want)
		return d >= -8 && d <= 8
	}
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near(pr, rgb[0]) && near(pg, rgb[1]) && near(pb, rgb[2]) {
				b.n++
				b.sx, b.sy = b.sx+x, b.sy+y
				b.x0, b.y0, b.x1, b.y1 = min(b.x0, x), min(b.y0, y), max(b.x1, x), max(b.y1, y)
			}
		}
	}
	return b
}

func union(bs ...box) box {
	u := bs[0]
	for _, b := range bs[1:] {
		u.x0, u.y0, u.x1, u.y1 = min(u.x0, b.x0), min(u.y0, b.y0), max(u.x1, b.x1), max(u.y1, b.y1)
	}
	return u
}
