package profile_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

func needNFT(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: nft -c runs in a network namespace of its own")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("needs nft (apt-get install nftables)")
	}
}

// Each broken profile in testdata/broken has one mistake. Load refuses the
// ones it can see in the files alone; Check refuses the rest (it needs this
// machine, or mirrors what the targets refuse only at session start). Each
// error is a *profile.Error naming the file and line at fault.
func TestBrokenProfilesAreRefusedWithFileAndLine(t *testing.T) {
	for _, tc := range []struct {
		file  string
		check bool   // refused by Check, not Load
		where string // file the error names, relative to testdata/broken
		line  int
		field string
		msg   string
	}{
		{"bad-family.yaml", true, "bad-family.nft", 9, "egress", "conflicting protocols specified: ip vs. ip6"},
		{"bad-keyword.yaml", true, "bad-keyword.nft", 7, "egress", "syntax error"},
		{"missing-value.yaml", false, "missing-value.yaml", 11, "bwrap.args", `--ro-bind takes SRC DEST, but its DEST would be "--proc", an option`},
		{"unknown-option.yaml", false, "unknown-option.yaml", 11, "bwrap.args", "--ro-bnd is not a bubblewrap 0.8 option; did you mean --ro-bind?"},
		{"unknown-place.yaml", false, "unknown-place.yaml", 12, "bwrap.args", `no place named "storag"`},
		{"unknown-secret.yaml", false, "unknown-secret.yaml", 10, "env.GITHUB_TOKEN", `no secret named "github"`},
		{"broker-offline.yaml", false, "broker-offline.yaml", 9, "env.GATEHOUSE_BROKER_TOKEN", "provided only with a lab"},
		{"bad-docker-cap.yaml", false, "bad-docker-cap.yaml", 12, "docker.cap_add[1]", `"NET_ADMN" is not a capability`},
		{"bad-docker-mount.yaml", false, "bad-docker-mount.yaml", 11, "docker.mounts[1].source", `"cache" is not an absolute host path`},
		{"no-unshare-net.yaml", true, "no-unshare-net.yaml", 4, "network", "none needs --unshare-net"},
		{"stop-command-missing.yaml", true, "stop-command-missing.yaml", 12, "limits.stop_command", "/nonexistent/platform-stop"},
	} {
		t.Run(strings.TrimSuffix(tc.file, ".yaml"), func(t *testing.T) {
			file := filepath.Join("testdata", "broken", tc.file)
			p, err := kinds.Load(file)
			if tc.check {
				if err != nil {
					t.Fatalf("Load() = %v; want this one refused by Check", err)
				}
				if strings.HasSuffix(tc.where, ".nft") {
					needNFT(t)
				}
				err = p.Check(context.Background())
			}
			var pe *profile.Error
			if !errors.As(err, &pe) {
				t.Fatalf("error = %v, want *profile.Error", err)
			}
			want := filepath.Join("testdata", "broken", tc.where)
			if pe.File != want || pe.Line != tc.line || pe.Field != tc.field || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q\n(file %s line %d field %s); want file %s line %d field %s containing %q",
					err, pe.File, pe.Line, pe.Field, want, tc.line, tc.field, tc.msg)
			}
			if !strings.Contains(err.Error(), want+":"+strconv.Itoa(tc.line)+":") {
				t.Fatalf("message %q does not start with %s:%d", err, want, tc.line)
			}
		})
	}
}
