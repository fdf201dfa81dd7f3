package main

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/targets/bwrap"
	"github.com/gatehouse-dev/gatehouse/internal/targets/docker/dockerkind"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// crossSessionGates are the session gates and their neighbours: a mistake in
// how sessions are isolated must FAIL cross-session and leave the others
// as the hardened profile has them, except where it really opens them too.
const crossSessionGates = "cross-session,foreign-storage,host-access,long-lived-secret,reusable-state"

// sessionMistakes are testdata profiles that are bwrap-hardened with one
// change each (TestSessionMistakeProfilesAreOneChange checks that). Before
// the writable-mount, /var/tmp, /proc and message-queue channels, the
// shared pid namespace and the shared /var/tmp PASSed cross-session (and
// the shared IPC namespace FAILed through SysV shared memory only).
var sessionMistakes = []struct {
	profile string
	// channels are the cross-session receive attempts that must be among
	// the FAIL's crossings on both paths; none: cross-session must PASS.
	channels []string
	// fail are the other gates that must FAIL (the mistake really opens
	// them); every gate not named must PASS with a positive control.
	fail []string
	// persist are reusable-state searches that must be among its FAIL's
	// crossings on both paths (when it is in fail).
	persist []string
	edit    func(args []string) []string // the one change to bwrap-hardened's args
}{
	// The host's pid namespace: each sees the other's command lines (and
	// host-access sees the host's namespace shared).
	{"mistake-shared-pid", []string{"receive-proc-cmdline"}, []string{"host-access"}, nil, without("--unshare-pid")},
	// Shared by every session of the host, so by the next one too.
	{"mistake-shared-var-tmp", []string{"receive-var-tmp-file", "receive-writable-mounts"}, []string{"reusable-state"},
		[]string{"search-var-tmp", "search-mount:/var/tmp"},
		addAfterClearenv("--bind", "{{place:shared}}/tmp", "/var/tmp")},
	// The host's IPC namespace: both kinds of shared IPC. (reusable-state
	// leaves nothing in IPC objects, so it PASSes: see docs/gates.md.)
	{"mistake-shared-ipc", []string{"receive-posix-mqueue", "receive-sysv-shm"}, []string{"host-access"}, nil, without("--unshare-ipc")},
	// A cache kept per runner slot: never shared by sessions at the same
	// time, handed to the slot's next session.
	{"mistake-shared-cache", nil, []string{"reusable-state"},
		[]string{"search-home-cache", "search-mount:/home/agent/.cache"},
		addAfterClearenv("--bind", "{{place:cache}}", "/home/agent/.cache")},
	{"harmless-ro-share", nil, nil, nil, addAfterClearenv("--ro-bind", "/usr/share", "/usr/share")},
	// The same tree elsewhere: tens of thousands of files every "@mounts"
	// search used to walk, INCONCLUSIVE on a busy machine ("the search
	// there is not on record (partial)"). It is /usr's own folder, read-only
	// and unwritable: skipped by identity, with its reason in the report.
	{"harmless-ro-share-elsewhere", nil, nil, nil, addAfterClearenv("--ro-bind", "/usr/share", "/opt/share")},
	{"harmless-private-var-tmp", nil, nil, nil, addAfterClearenv("--tmpfs", "/var/tmp")},
}

func without(arg string) func([]string) []string {
	return func(a []string) []string {
		return slices.DeleteFunc(slices.Clone(a), func(s string) bool { return s == arg })
	}
}

func addAfterClearenv(add ...string) func([]string) []string {
	return func(a []string) []string {
		i := slices.Index(a, "--clearenv")
		return slices.Concat(a[:i+1], add, a[i+1:])
	}
}

func TestOneMistakeSessionProfiles(t *testing.T) {
	needSandbox(t)
	for _, tt := range sessionMistakes {
		t.Run(tt.profile, func(t *testing.T) {
			before := leftovers()
			r := runProfileAt(t, filepath.Join("testdata", "profiles", tt.profile+".yaml"), crossSessionGates)
			if len(r.results) != 10 {
				t.Fatalf("want 10 results (5 gates x 2 paths), got %d\nstdout:\n%s\nstderr:\n%s", len(r.results), r.stdout, r.stderr)
			}
			code := exitOK
			if len(tt.channels) > 0 || len(tt.fail) > 0 {
				code = exitViolation
			}
			if r.code != code {
				t.Errorf("exit %d, want %d", r.code, code)
			}
			for _, res := range r.results {
				mustFail := (res.Gate == "cross-session" && len(tt.channels) > 0) || slices.Contains(tt.fail, res.Gate)
				switch {
				case mustFail && res.Verdict != evidence.Fail:
					t.Errorf("%s/%s: %s (%s), want FAIL", res.Gate, res.Path, res.Verdict, res.Reason)
				case !mustFail && (res.Verdict != evidence.Pass || !res.Control):
					t.Errorf("%s/%s: %s (%s), want PASS with a positive control", res.Gate, res.Path, res.Verdict, res.Reason)
				}
				if res.Gate == "cross-session" {
					checkChannels(t, res, tt.channels)
				}
				if res.Gate == "reusable-state" {
					checkPersisted(t, res, tt.persist)
				}
			}
			if tt.profile == "harmless-ro-share-elsewhere" {
				// What was left out is on record, with why.
				b, _ := os.ReadFile(filepath.Join(r.dir, "traces", "probe-attempts.jsonl"))
				if !strings.Contains(string(b), "not searched: /opt/share: read-only system software (the same folder as /usr/share)") {
					t.Errorf("no attempt records that /opt/share was skipped, and why")
				}
			}
			assertNothingLeft(t, r.stdout)
			assertNoPlaces(t, before, r.stdout)
		})
	}
}

// checkChannels: a FAIL names each channel that proved the crossing, in
// its reason and its crossings; a PASS says the sessions overlapped.
func checkChannels(t *testing.T, res evidence.Result, channels []string) {
	t.Helper()
	for _, ch := range channels {
		seen := false
		for _, c := range res.Crossings {
			seen = seen || (c.Attempt == ch && c.Owner != c.SeenBy && c.Where != "")
		}
		if !seen || !strings.Contains(res.Reason, ch) {
			t.Errorf("cross-session/%s: %s not named as a crossing: %s; %+v", res.Path, ch, res.Reason, res.Crossings)
		}
	}
	if len(channels) == 0 && (!strings.Contains(res.Reason, "every receive shared at least") || res.Timings["overlap_min_ms"] < 500) {
		t.Errorf("cross-session/%s: PASS without the overlap it rests on: %s (timings %v)", res.Path, res.Reason, res.Timings)
	}
}

// Each session one-mistake profile is bwrap-hardened with exactly its one
// change: the same bwrap args but for it, the same everything else, and
// the same egress ruleset byte for byte.
func TestSessionMistakeProfilesAreOneChange(t *testing.T) {
	base, err := kinds.Load(profilePath("bwrap-hardened.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	nft, _ := os.ReadFile(profilePath("bwrap-hardened.nft"))
	copied, _ := os.ReadFile(filepath.Join("testdata", "profiles", "bwrap-hardened.nft"))
	if len(nft) == 0 || string(nft) != string(copied) {
		t.Fatal("testdata/profiles/bwrap-hardened.nft differs from the shipped ruleset")
	}
	for _, tt := range sessionMistakes {
		p, err := kinds.Load(filepath.Join("testdata", "profiles", tt.profile+".yaml"))
		if err != nil {
			t.Fatalf("%s: %v", tt.profile, err)
		}
		if want := tt.edit(bwrap.SectionOf(base).Args); !reflect.DeepEqual(bwrap.SectionOf(p).Args, want) || reflect.DeepEqual(want, bwrap.SectionOf(base).Args) {
			t.Errorf("%s: bwrap args\n%q\nwant bwrap-hardened's with one change:\n%q", tt.profile, bwrap.SectionOf(p).Args, want)
		}
		rest := func(a *profile.Profile) []any {
			return []any{a.Target, a.Network, a.Egress, a.Resolver, a.Env, a.Paths, a.Limits, a.SecretProcess, *dockerkind.SpecOf(a)}
		}
		if !reflect.DeepEqual(rest(p), rest(base)) {
			t.Errorf("%s differs from bwrap-hardened in more than its bwrap args", tt.profile)
		}
	}
}
