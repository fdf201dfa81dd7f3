package termsafe_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
)

func TestEscape(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{"plain text is kept", "GET /x HTTP/1.1 from 10.0.0.2", "GET /x HTTP/1.1 from 10.0.0.2"},
		{"non-ASCII letters are kept", "naïve 日本語 Ωmega café", "naïve 日本語 Ωmega café"},
		{"NUL is escaped", "a\x00b", `a\x00b`},
		{"ESC CSI clear screen is escaped", "\x1b[2J\x1b[Hok", `\x1b[2J\x1b[Hok`},
		{"OSC window title ending in BEL is escaped", "\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
		{"OSC 52 clipboard write is escaped", "\x1b]52;c;cm0gLXJmIH4K\x1b\\", `\x1b]52;c;cm0gLXJmIH4K\x1b\`},
		{"CR overwrite is escaped", "FAIL: canary at callback\rPASS", `FAIL: canary at callback\rPASS`},
		{"BS overwrite is escaped", "FAIL\b\b\b\bPASS", `FAIL\x08\x08\x08\x08PASS`},
		{"newline and tab are escaped", "a\nb\tc", `a\nb\tc`},
		{"DEL is escaped", "a\x7fb", `a\u007fb`},
		{"C1 NEL and CSI are escaped", "a\u0085b\u009b2Jc", `a\u0085b\u009b2Jc`},
		{"bidi override disguising an extension is escaped", "report\u202etxt.exe", `report\u202etxt.exe`},
		{"bidi embeddings and pop are escaped", "\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`},
		{"bidi isolates are escaped", "\u2066x\u2067y\u2068z\u2069", `\u2066x\u2067y\u2068z\u2069`},
		{"bidi marks are escaped", "\u200e\u200f\u061c", `\u200e\u200f\u061c`},
		{"zero-width characters are escaped", "ad\u200bmin\u200c\u200d\u2060\ufeff", `ad\u200bmin\u200c\u200d\u2060\ufeff`},
		{"soft hyphen and fillers are escaped", "a\u00adb\u3164c\u115fd", `a\u00adb\u3164c\u115fd`},
		{"line and paragraph separators are escaped", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"variation selector is escaped", "x\ufe0f", `x\ufe0f`},
		{"tag characters (invisible ASCII) are escaped as surrogate pairs", "ok\U000e0041\U000e0042", `ok\udb40\udc41\udb40\udc42`},
		{"invalid UTF-8 bytes are escaped", "a\xffb\xc3", `a\xffb\xc3`},
		{"a lone continuation byte is escaped", "a\x80b", `a\x80b`},
		{"an encoded surrogate is invalid", "a\xed\xa0\x80b", `a\xed\xa0\x80b`},
		{"a valid U+FFFD is kept", "a\ufffdb", "a\ufffdb"},
		{"all at once", "\x1b]0;t\x07report\u202etxt.exe\rOK\u0085\xfe", `\x1b]0;t\x07report\u202etxt.exe\rOK\u0085\xfe`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := termsafe.Escape(tt.in)
			if got != tt.want {
				t.Fatalf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
			}
			assertInert(t, got, false)
		})
	}
}

func TestLinesKeepsLayoutOnly(t *testing.T) {
	got := termsafe.Lines("a\tb\nc\r\x1b[31md\u202e")
	if want := "a\tb\nc\\r\\x1b[31md\\u202e"; got != want {
		t.Fatalf("Lines = %q, want %q", got, want)
	}
	assertInert(t, got, true)
}

// assertInert: nothing a terminal acts on, nothing that reorders or hides
// text, and valid UTF-8.
func assertInert(t *testing.T, s string, layout bool) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("not valid UTF-8: %q", s)
	}
	for _, r := range s {
		if termsafe.Hidden(r) && !(layout && (r == '\n' || r == '\t')) {
			t.Errorf("hidden character %U left in %q", r, s)
		}
	}
}

func TestHiddenLeavesTextAlone(t *testing.T) {
	for _, r := range []rune{' ', 'a', '~', '\\', 'é', 'Ω', 'а', '日', '€', '…', '↳', '✓', '\u00a0', '\u0301', '😀'} {
		if termsafe.Hidden(r) {
			t.Errorf("%U (%q) is escaped, but it is text", r, r)
		}
	}
}

func TestTruncateNeverSplitsACharacter(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 8, "abcde…"},
		{"日本語日本語", 10, "日本…"},
		{"aé日😀", 8, "aé…"},
	} {
		got := termsafe.Truncate(tt.in, tt.n)
		if got != tt.want || len(got) > max(tt.n, len(tt.in)) || !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestWriterEscapesEveryWrite(t *testing.T) {
	var out bytes.Buffer
	w := termsafe.NewWriter(&out, nil)
	for _, s := range []string{"line one\n", "evil\x1b[2J\rPASS\u202e\n", "tab\tkept\n"} {
		if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if want := "line one\nevil\\x1b[2J\\rPASS\\u202e\ntab\tkept\n"; out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}

func TestWriterJoinsACharacterSplitAcrossWrites(t *testing.T) {
	var out bytes.Buffer
	w := termsafe.NewWriter(&out, nil)
	in := []byte("é\u202e日")
	for _, b := range in { // one byte a write
		if _, err := w.Write([]byte{b}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := `é\u202e日`; out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}

func TestWriterFlushEscapesAnUnfinishedSequence(t *testing.T) {
	var out bytes.Buffer
	w := termsafe.NewWriter(&out, nil)
	_, _ = w.Write([]byte("ok\xe2\x80"))
	if out.String() != "ok" {
		t.Fatalf("before flush: %q", out.String())
	}
	_ = w.Flush()
	if want := `ok\xe2\x80`; out.String() != want {
		t.Fatalf("after flush: %q, want %q", out.String(), want)
	}
}

func TestWriterRedactsBeforeEscaping(t *testing.T) {
	var out bytes.Buffer
	w := termsafe.NewWriter(&out, func(s string) string { return strings.ReplaceAll(s, "SECRET", "<canary>") })
	_, _ = w.Write([]byte("got SECRET\x1b[0m\n"))
	if want := "got <canary>\\x1b[0m\n"; out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}

// A JSON document through a Writer is still JSON, with the same values,
// and holds nothing hidden.
func TestWriterKeepsJSONValid(t *testing.T) {
	in := map[string]string{
		"c0": "\x00\x1b[2J\r\b\x07", "del": "\x7f", "c1": "\u0085\u009b", "bidi": "report\u202etxt.exe\u2066",
		"zw": "\u200b\u200d\ufeff", "tag": "\U000e0041", "sep": "\u2028\u2029", "bad": "\xff\xc3", "text": "日本 ✓",
	}
	b, err := json.MarshalIndent(in, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := termsafe.NewWriter(&out, nil)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	assertInert(t, out.String(), true)
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("not JSON after the writer: %v\n%s", err, out.String())
	}
	var want map[string]string
	_ = json.Unmarshal(b, &want) // what encoding/json itself gives back (invalid UTF-8 as U+FFFD)
	for k, v := range want {
		if back[k] != v {
			t.Errorf("%s: %q after the writer, %q before", k, back[k], v)
		}
	}
}

func TestRawUnwraps(t *testing.T) {
	var out bytes.Buffer
	w := termsafe.NewWriter(&out, nil)
	if termsafe.Raw(w) != &out || termsafe.Raw(&out) != &out || w.Unwrap() != &out {
		t.Fatal("Raw did not return the writer underneath")
	}
}
