package diff

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// config is the part of one path's effective configuration worth comparing,
// grouped the way a reviewer thinks about it.
type config struct {
	Runtime      string
	Capabilities map[string]string // cap_* facts
	Identity     map[string]string // uid, gid, maps, no_new_privs, seccomp
	Mounts       []string
	NetworkRules []string // the nftables ruleset in force, line by line
	Addresses    []string // interface addresses, sorted
	Network      map[string]string
	Argv         []string
	Other        map[string]string
}

// fields lists the groups in print order with their labels.
func (c config) fields() []struct {
	Name string
	V    any
} {
	return []struct {
		Name string
		V    any
	}{
		{"runtime", c.Runtime}, {"capabilities", c.Capabilities}, {"identity", c.Identity},
		{"mounts", c.Mounts}, {"network rules", c.NetworkRules}, {"addresses", c.Addresses}, {"network", c.Network},
		{"command line", c.Argv}, {"other facts", c.Other},
	}
}

var identityFacts = map[string]bool{"uid": true, "gid": true, "uid_map": true, "gid_map": true,
	"no_new_privs": true, "seccomp": true, "hostname": true}

var networkFacts = map[string]bool{"resolv_conf": true, "routes": true}

// volatileFacts differ on every run whatever the configuration: namespace
// inode numbers, the session's namespace name, our own bookkeeping, and the
// host processes read from outside and the engine's (pids, command lines
// with per-run paths and ids); only their roles and errors stay.
func volatileFact(k string) bool {
	rest, ok := strings.CutPrefix(k, "outside.")
	if !ok {
		rest, ok = strings.CutPrefix(k, "engine.")
	}
	if ok {
		return !strings.HasSuffix(rest, "role") && !strings.HasSuffix(rest, "error")
	}
	return strings.HasPrefix(k, "ns.") || k == "netns" || k == "path" || k == "profile" || k == "profile_digest"
}

// normalizers replace per-run names and secrets with placeholders.
var normalizers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`/run/netns/gh-[0-9a-z-]+`), "/run/netns/<session>"},
	// A working folder of the harness: in its scratch folder (or, made by
	// versions before it, in /tmp), one placeholder for both.
	{regexp.MustCompile(`(/run/gatehouse/scratch|/tmp)/gatehouse-[^/\s"]+`), "<harness-dir>"},
	{regexp.MustCompile(`/run/gatehouse/gh-[0-9a-f]+/s[0-9]+-[0-9]+`), "/run/gatehouse/<session-dir>"},
	{regexp.MustCompile(`/run/gatehouse/init/[0-9a-f]+\.sock`), "/run/gatehouse/init/<session>.sock"},
	{regexp.MustCompile(`/storage/s[0-9]+\b`), "/storage/<session>"},
	{regexp.MustCompile(`/run/ghd-[0-9a-f]+/`), "/run/<lab-daemon>/"},
	{regexp.MustCompile(`sessions/[^/\s"]+\.files-[^/\s"]+`), "sessions/<session-files>"},
	{regexp.MustCompile(`\bghhost[0-9a-f]{16}`), "<nonce>"},
	{regexp.MustCompile(`(?i)ghc[0-9a-f]{16}|GHCANARY[0-9A-Za-z]*`), "<canary>"},
	{regexp.MustCompile(`ghbroker-[0-9a-f]+`), "<broker-token>"},
	{regexp.MustCompile(`\bgh[0-9a-z]{3,}p\b`), "<veth>"},
	{regexp.MustCompile(`fe80::[0-9a-f:]+`), "fe80::<link-local>"},
}

func normalize(s string) string {
	for _, n := range normalizers {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return s
}

// configOf extracts the groups from run.json's effective_config[path]
// (decoded JSON). Unknown shapes end up in Other, never dropped silently.
func configOf(raw any) config {
	c := config{Capabilities: map[string]string{}, Identity: map[string]string{},
		Network: map[string]string{}, Other: map[string]string{}}
	m, ok := raw.(map[string]any)
	if !ok {
		if raw != nil {
			c.Other["effective_config"] = normalize(fmt.Sprint(raw))
		}
		return c
	}
	for k, v := range m {
		switch k {
		case "runtime":
			c.Runtime = normalize(fmt.Sprint(v))
		case "mounts":
			c.Mounts = strs(v)
		case "argv":
			c.Argv = strs(v)
		case "target":
		case "facts":
			facts, _ := v.(map[string]any)
			for fk, fv := range facts {
				c.addFact(fk, normalize(fmt.Sprint(fv)))
			}
		default:
			c.Other[k] = normalize(fmt.Sprint(v))
		}
	}
	sort.Strings(c.Mounts)
	return c
}

func (c *config) addFact(k, v string) {
	switch {
	case volatileFact(k):
	case strings.HasPrefix(k, "cap_"):
		c.Capabilities[k] = v
	case identityFacts[k]:
		c.Identity[k] = v
	case k == "nft_ruleset":
		c.NetworkRules = lines(v)
	case k == "addrs":
		c.Addresses = addresses(v)
	case networkFacts[k]:
		c.Network[k] = v
	default:
		c.Other[k] = v
	}
}

func strs(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		out = append(out, normalize(fmt.Sprint(x)))
	}
	return out
}

func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// addresses keeps what the address list says about configuration: loopback
// as is, and for the session's own interface only the family and prefix
// length. Which lab subnet a session drew, and whether its IPv6 link-local
// address was up yet when it was read, differ from run to run.
func addresses(v string) []string {
	var out []string
	for _, a := range strings.Split(v, ",") {
		a = strings.TrimSpace(a)
		name, addr, ok := strings.Cut(a, " ")
		switch {
		case a == "" || strings.Contains(addr, "fe80::"):
			continue
		case !ok || name == "lo":
			out = append(out, a)
		default:
			family := "inet"
			if strings.Contains(addr, ":") {
				family = "inet6"
			}
			if _, bits, ok := strings.Cut(addr, "/"); ok {
				family += "/" + bits
			}
			out = append(out, name+" "+family)
		}
	}
	sort.Strings(out)
	return out
}
