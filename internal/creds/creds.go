// Package creds finds credential-shaped values in text, files and
// environments by the shapes real providers issue, for the probe's hunt,
// and names the credentials a sandbox wrapper made for a session, for the
// exec target. A value found is carried as its type, place and hash
// (wire.CredHash), never in clear.
package creds

import (
	"bytes"
	"math"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// Cred is a credential-shaped value a hunt came across. The value itself
// never leaves the probe: only its type, where it was, and its SHA-256,
// which lets the harness tell its own values (it knows their hashes) from
// anything else, and lets an auditor check a suspected key offline.
type Cred struct {
	Type   string // e.g. "aws-access-key-id", "openai-key", "named-secret"
	SHA256 string // hex
	Where  string // path, "env:NAME", "pid N environ:NAME"
}

// credShapes are the formats real providers issue, most specific first: a
// later shape never reports a span an earlier one already took (sk-ant-
// is Anthropic's, not OpenAI's). group is the submatch that is the value.
var credShapes = []struct {
	typ   string
	re    *regexp.Regexp
	group int
	mixed bool // the value must mix letters and digits (fewer false positives)
}{
	{"aws-access-key-id", regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), 0, true},
	{"aws-secret-access-key", regexp.MustCompile(`(?i)aws_secret_access_key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})(?:[^A-Za-z0-9/+=]|$)`), 1, true},
	{"github-token", regexp.MustCompile(`\b(?:ghp|gho|ghs|ghu|ghr)_[A-Za-z0-9]{36,255}\b`), 0, true},
	{"github-token", regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{22,255}`), 0, true},
	{"anthropic-key", regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{32,}`), 0, true},
	{"openai-key", regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}`), 0, true},
	{"slack-token", regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`), 0, true},
	{"google-api-key", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`), 0, false},
	{"jwt", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), 0, false},
	{"url-password", regexp.MustCompile(`\b[a-zA-Z][a-zA-Z0-9+.-]{1,15}://[^\s:/@]{1,128}:([^\s@/]{6,256})@`), 1, false},
}

// namedRE is an assignment to a secret-sounding name in a file
// (password = ..., "token": "...", API_KEY: ...).
var namedRE = regexp.MustCompile(`(?i)\b([A-Za-z0-9_.-]*(?:key|token|secret|password|passwd|credentials?|auth)[A-Za-z0-9_.-]*)["']?\s*[:=]\s*["']?([^\s"',;]{16,512})`)

// secretName is a variable name that says it holds a secret (notSecretName
// excepts names that say it holds a place or a public value: a public key
// is no secret, whatever its entropy).
var secretName = regexp.MustCompile(`(?i)(key|token|secret|password|passwd|credential|auth)`)

// notSecretName are names with a secret-sounding word that hold where a
// secret is, or what it is called, not the secret.
var notSecretName = regexp.MustCompile(`(?i)(public|pubkey|(_pub|_file|_path|_dir|_url|_uri|_endpoint|_host|_sock|_name|_type|_header|_id|_arn|_region|_length|_size)$)`)

// netrcRE is a .netrc password: human-chosen, so no entropy rule.
var netrcRE = regexp.MustCompile(`\bpassword\s+(\S{6,256})`)

// InFile finds credentials in the head of a file; where is its path.
// A file that is a mounted secret by where it is or its name is the bare
// value: its whole content counts.
func InFile(b []byte, where string) []Cred {
	out := InText(b, where)
	if len(out) == 0 && secretFile(where) {
		v := string(bytes.TrimSpace(b))
		if len(v) >= 8 && len(v) <= 4096 && !strings.ContainsAny(v, " \t\n\r\x00") {
			if c, ok := credOf("secret-file", v, where); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

// InText finds credentials in text (a file, a socket's answer, a
// command line, an environment value); where names the place.
func InText(b []byte, where string) []Cred {
	var out []Cred
	var taken [][2]int
	add := func(typ, v string, span [2]int) {
		for _, t := range taken {
			if span[0] < t[1] && t[0] < span[1] {
				return
			}
		}
		taken = append(taken, span)
		if c, ok := credOf(typ, v, where); ok {
			out = append(out, c)
		}
	}
	for _, blk := range pemBlocks(b) {
		add("private-key", string(b[blk[0]:blk[1]]), blk)
	}
	for _, sh := range credShapes {
		for _, m := range sh.re.FindAllSubmatchIndex(b, 64) {
			s, e := m[2*sh.group], m[2*sh.group+1]
			v := string(b[s:e])
			if sh.mixed && !mixed(v) {
				continue
			}
			add(sh.typ, v, [2]int{m[0], m[1]})
		}
	}
	for _, m := range namedRE.FindAllSubmatchIndex(b, 64) {
		name, v := string(b[m[2]:m[3]]), string(b[m[4]:m[5]])
		if namedSecret(name, v) {
			add("named-secret", v, [2]int{m[4], m[5]})
		}
	}
	base := filepath.Base(where)
	if base == ".netrc" || base == "_netrc" {
		for _, m := range netrcRE.FindAllSubmatchIndex(b, 64) {
			add("netrc-password", string(b[m[2]:m[3]]), [2]int{m[2], m[3]})
		}
	}
	return out
}

// InEnv finds credentials in NAME=VALUE entries; where prefixes the
// name ("env:", "pid 12 environ:").
func InEnv(entries []string, where string) []Cred {
	var out []Cred
	for _, kv := range entries {
		name, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			continue
		}
		cs := InText([]byte(v), where+name)
		if len(cs) == 0 && namedSecret(name, v) {
			if c, ok := credOf("named-secret", v, where+name); ok {
				cs = append(cs, c)
			}
		}
		out = append(out, cs...)
	}
	return out
}

// credOf makes a Cred, except for values Gatehouse planted: those carry
// the canary prefix, are reported in clear as canaries, and must not be
// counted twice.
func credOf(typ, v, where string) (Cred, bool) {
	if strings.Contains(v, wire.HuntPrefix) {
		return Cred{}, false
	}
	return Cred{Type: typ, SHA256: wire.CredHash(v), Where: where}, true
}

// namedSecret: a secret-sounding name holding a value that looks random
// (long, mixed, high entropy), not a path, URL, flag or placeholder.
func namedSecret(name, v string) bool {
	if !secretName.MatchString(name) || notSecretName.MatchString(name) {
		return false
	}
	lv := strings.ToLower(v)
	switch {
	case len(v) < 16 || len(v) > 512,
		strings.ContainsAny(v[:1], "/.~$"),
		strings.Contains(v, "://"), strings.ContainsAny(v, " \t{}<>"),
		strings.Contains(lv, "xxxx"), strings.Contains(lv, "changeme"), strings.Contains(lv, "example"),
		strings.Contains(lv, "placeholder"), strings.Contains(lv, "redacted"):
		return false
	}
	return mixed(v) && entropy(v) >= 3.5
}

// mixed: letters and digits both appear.
func mixed(v string) bool {
	return strings.ContainsAny(v, "0123456789") && strings.IndexFunc(v, func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
	}) >= 0
}

// entropy is the Shannon entropy of v in bits per byte.
func entropy(v string) float64 {
	var n [256]int
	for i := 0; i < len(v); i++ {
		n[v[i]]++
	}
	e := 0.0
	for _, c := range n {
		if c > 0 {
			p := float64(c) / float64(len(v))
			e -= p * math.Log2(p)
		}
	}
	return e
}

// secretFile: a file whose whole content is a credential by where it is
// (Docker and Kubernetes secrets, a service-account token) or its name.
var secretFileName = regexp.MustCompile(`(?i)^(token|.*secret.*|.*password.*|.*passwd.*|.*api[-_]?key.*)$`)

func secretFile(p string) bool {
	return strings.Contains(p, "/secrets/") || secretFileName.MatchString(filepath.Base(p))
}

var (
	pemBegin = []byte("-----BEGIN ")
	pemEnd   = []byte("-----END ")
)

// pemBlocks returns the spans of PEM private-key blocks, each through its
// END line (or the end of b when the head cut it off).
func pemBlocks(b []byte) [][2]int {
	var out [][2]int
	for off := 0; off < len(b) && len(out) < 16; {
		i := bytes.Index(b[off:], pemBegin)
		if i < 0 {
			break
		}
		s := off + i
		eol := bytes.IndexByte(b[s:], '\n')
		if eol < 0 {
			eol = len(b) - s
		}
		if !bytes.Contains(b[s:s+eol], []byte("PRIVATE KEY-----")) {
			off = s + len(pemBegin)
			continue
		}
		e := len(b)
		if j := bytes.Index(b[s:], pemEnd); j >= 0 {
			e = s + j
			if k := bytes.Index(b[e+len(pemEnd):], []byte("-----")); k >= 0 {
				e += len(pemEnd) + k + len("-----")
			}
		}
		out = append(out, [2]int{s, e})
		off = e
	}
	return out
}

// WrapperSession returns, by hash, the credentials a sandbox
// wrapper made for one session and handed its command through the
// environment: the password of each proxy URL it names in a *_PROXY
// variable (srt and codex put a per-run token there), and every credential
// found in a variable that carries one of those passwords (srt's
// GIT_SSH_COMMAND relays through the same proxy). given lists the values
// the team's own profile handed the wrapper: those are never the wrapper's.
func WrapperSession(env []string, given map[string]bool) map[string]string {
	var passwords []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.HasSuffix(strings.ToUpper(k), "_PROXY") || given[v] {
			continue
		}
		if u, err := url.Parse(strings.TrimSpace(v)); err == nil && u.User != nil {
			if p, ok := u.User.Password(); ok && len(p) >= 8 {
				passwords = append(passwords, p)
			}
		}
	}
	out := map[string]string{}
	if len(passwords) == 0 {
		return out
	}
	for _, p := range passwords {
		out[wire.CredHash(p)] = "proxy password"
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if given[v] {
			continue
		}
		for _, p := range passwords {
			if !strings.Contains(v, p) {
				continue
			}
			for _, c := range InEnv([]string{kv}, "") {
				out[c.SHA256] = "in " + k
			}
			break
		}
	}
	return out
}
