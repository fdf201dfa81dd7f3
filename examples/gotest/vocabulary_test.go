package gotest_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every step phrase registered in internal/steps/ has its line in docs/ci.md, so a
// team writing its own features sees the whole vocabulary.
func TestStepVocabularyIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/ci.md")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../../internal/steps/*.go")
	step := regexp.MustCompile("sc\\.Step\\(`\\^(.+?)\\$`")
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range step.FindAllStringSubmatch(string(b), -1) {
			n++
			// The documented line shows literal text where the regexp has a
			// capture: compare the text before the first group, and after
			// the last.
			phrase := strings.TrimSuffix(m[1], ":")
			head, tail := phrase, ""
			if i := strings.IndexByte(phrase, '('); i >= 0 {
				head = phrase[:i]
				if j := strings.LastIndexByte(phrase, ')'); j > i {
					tail = phrase[j+1:]
				}
			}
			if !strings.Contains(string(doc), "`"+head) || (tail != "" && !strings.Contains(string(doc), tail)) {
				t.Errorf("%s: step %q is not in docs/ci.md's vocabulary", filepath.Base(f), m[1])
			}
		}
	}
	if n < 15 {
		t.Fatalf("found only %d step registrations in internal/steps/*.go: the pattern no longer matches them", n)
	}
}
