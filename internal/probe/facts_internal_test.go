package probe

import (
	"os"
	"reflect"
	"testing"
)

func TestParseMountinfo(t *testing.T) {
	mi := "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n" +
		"23 22 0:5 / /my\\040dir rw,nosuid master:2 propagate_from:3 - tmpfs tmpfs rw\n" +
		"garbage line\n" +
		"24 22 0:6 / /proc rw - proc proc rw\n"
	want := []string{"/ ext4 rw,relatime", "/my\\040dir tmpfs rw,nosuid", "/proc proc rw"}
	if got := parseMountinfo(mi); !reflect.DeepEqual(got, want) {
		t.Errorf("parseMountinfo = %q, want %q", got, want)
	}
}

func TestReadFacts(t *testing.T) {
	f := ReadFacts()
	if len(f.Errors) > 0 {
		t.Logf("facts errors (may be normal here): %q", f.Errors)
	}
	if f.UID != os.Geteuid() || f.GID != os.Getegid() {
		t.Errorf("uid/gid %d/%d, want %d/%d", f.UID, f.GID, os.Geteuid(), os.Getegid())
	}
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if f.Namespaces["net"] != self {
		t.Errorf("net namespace %q, want %q", f.Namespaces["net"], self)
	}
	host, _ := os.Hostname()
	if f.Hostname != host || f.Kernel == "" || len(f.Mounts) == 0 || f.CapEff == "" {
		t.Errorf("facts incomplete: %+v", f)
	}
}
