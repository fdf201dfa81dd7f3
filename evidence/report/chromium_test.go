package report_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/report"
)

// chromium runs Debian's headless Chromium on one file and returns stdout.
// It runs in its own process group so that the renderer and GPU helpers
// die with it.
func chromium(t *testing.T, args ...string) string {
	t.Helper()
	out, _ := chromiumLog(t, args...)
	return out
}

// chromiumLog is chromium that also returns what the browser logged on
// stderr (with --enable-logging=stderr, console messages and CSP
// violations are lines with ":CONSOLE").
func chromiumLog(t *testing.T, args ...string) (string, string) {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed: scripts/setup.sh installs it (GATEHOUSE_WITH_CHROMIUM=1, the default), or apt-get install chromium")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
		"--force-color-profile=srgb", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // stray helpers, if any
	}
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return out.String(), errb.String()
}

// TestReportInChromium loads the report of a leaky run with hostile
// evidence in a real browser and checks what a person would see.
func TestReportInChromium(t *testing.T) {
	dir := writeFolder(t)
	if err := report.WriteFile(dir); err != nil {
		t.Fatal(err)
	}
	url := "file://" + filepath.Join(dir, evidence.ReportFile)
	dom, log := chromiumLog(t, "--enable-logging=stderr", "--v=0", "--dump-dom", url)
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, ":CONSOLE") { // a CSP violation or an error
			t.Errorf("the browser logged: %s", line)
		}
	}

	if strings.Contains(dom, "data-pwned=") {
		t.Error("an injected handler ran: body has data-pwned")
	}
	if regexp.MustCompile(`(?i)<script|<img`).MatchString(dom) {
		t.Error("the browser built a script or img element from evidence")
	}
	if !strings.Contains(dom, "&lt;script&gt;document.title=\"PWNED\"") {
		t.Error("the injected script is not shown as text")
	}
	if !regexp.MustCompile(`<title>Gatehouse run 20261130T100000Z-abcdef: FAIL</title>`).MatchString(dom) {
		t.Errorf("title is not the run's: %s", firstMatch(dom, `<title>.*</title>`))
	}
	// The verdict table as a reader sees it: gate, path, verdict per row.
	rows := regexp.MustCompile(`(?s)<tr><td><a href="#s\d">([^<]+)</a></td><td>([^<]+)</td><td><span class="v v-\w+">(\w+)</span>`).
		FindAllStringSubmatch(firstMatch(dom, `(?s)<table id="verdicts">.*?</table>`), -1)
	var got []string
	for _, r := range rows {
		got = append(got, r[1]+" "+r[2]+" "+r[3])
	}
	want := []string{"cloud-metadata normal PASS", "cloud-metadata assume-breach INCONCLUSIVE",
		"external-callback normal FAIL", "external-callback assume-breach FAIL"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("verdict table rows:\n got %q\nwant %q", got, want)
	}

	shot := filepath.Join(t.TempDir(), "report.png")
	if keep := os.Getenv("GATEHOUSE_REPORT_SCREENSHOT"); keep != "" {
		shot = keep // to look at it: GATEHOUSE_REPORT_SCREENSHOT=/tmp/report.png
	}
	chromium(t, "--hide-scrollbars", "--window-size=1280,1600", "--screenshot="+shot, url)
	st, err := os.Stat(shot)
	if err != nil || st.Size() < 10_000 {
		t.Errorf("screenshot missing or blank: %v", err)
	}
}

func firstMatch(s, re string) string {
	return regexp.MustCompile(re).FindString(s)
}
