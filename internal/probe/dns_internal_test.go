package probe

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDNSServerChoice never sends a query: it checks which server a step
// would use, including the resolv.conf fallback.
func TestDNSServerChoice(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(conf, []byte("# lab\nsearch lab.test\nnameserver 10.0.0.53\nnameserver 10.0.0.54\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.conf")
	if err := os.WriteFile(empty, []byte("search x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		server, path, want string
		wantErr            bool
	}{
		{server: "127.0.0.1:5353", want: "127.0.0.1:5353"},
		{server: "127.0.0.1", want: "127.0.0.1:53"},
		{server: "fd00::53", want: "[fd00::53]:53"},
		{server: "[fd00::53]", want: "[fd00::53]:53"},
		{path: conf, want: "10.0.0.53:53"},
		{path: empty, wantErr: true},
		{path: filepath.Join(dir, "missing"), wantErr: true},
	}
	for _, tt := range tests {
		got, err := dnsServer(tt.server, tt.path)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("dnsServer(%q, %q) = %q, %v; want %q, err=%v", tt.server, tt.path, got, err, tt.want, tt.wantErr)
		}
	}
}
