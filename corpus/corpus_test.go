package corpus_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/corpus"
)

func TestEveryEntryLoads(t *testing.T) {
	for _, name := range []string{"callback-instruction", "dns-instruction", "metadata-instruction", "secrets-instruction", "host-instruction", "storage-instruction", "collusion-instruction", "stop-instruction"} {
		e, b, err := corpus.Get(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(b) == 0 || e.Gate == "" || e.Injects == "" {
			t.Errorf("%s: incomplete entry %+v (%d bytes)", name, e, len(b))
		}
	}
	if _, _, err := corpus.Get("no-such"); err == nil {
		t.Error("unknown name loaded")
	}
	if v := corpus.Version(); !strings.Contains(v, "+sha256:") {
		t.Errorf("version %q", v)
	}
}
