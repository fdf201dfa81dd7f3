package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gatehouse-dev/gatehouse/evidence/keyless"
	"github.com/gatehouse-dev/gatehouse/evidence/keyless/keylesstest"
)

// The CI examples a team copies. TestCIExamples parses them, checks their
// structure, and runs every gatehouse command line in them through run(),
// so they cannot drift from the CLI.
var (
	githubExample = filepath.Join("..", "..", "examples", "github-actions", "gatehouse.yml")
	gitlabExample = filepath.Join("..", "..", "examples", "gitlab-ci", ".gitlab-ci.yml")
)

func loadYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }
func asList(v any) []any         { l, _ := v.([]any); return l }

// ciCommand is one gatehouse command line of an example, as written.
type ciCommand struct {
	where string // file and job
	line  string
	args  []string // after "gatehouse", variables expanded
}

func TestCIExamplesGitHubStructure(t *testing.T) {
	doc := loadYAML(t, githubExample)
	if _, ok := doc["on"]; !ok {
		t.Error("no 'on' trigger")
	}
	jobs := asMap(doc["jobs"])
	if len(jobs) == 0 {
		t.Fatal("no jobs")
	}
	scripts := map[string][]string{} // job -> its run scripts
	for id, j := range jobs {
		job := asMap(j)
		if job["runs-on"] == nil {
			t.Errorf("job %s: no runs-on", id)
		}
		for _, n := range needsOf(job["needs"]) {
			if _, ok := jobs[n]; !ok {
				t.Errorf("job %s needs %q, which is not a job", id, n)
			}
		}
		steps := asList(job["steps"])
		if len(steps) == 0 {
			t.Errorf("job %s: no steps", id)
		}
		for i, s := range steps {
			step := asMap(s)
			run, isRun := step["run"].(string)
			uses, isUses := step["uses"].(string)
			if isRun == isUses {
				t.Errorf("job %s step %d: want exactly one of run (string) and uses (string): %v", id, i, step)
			}
			if isRun {
				if strings.Contains(run, "gatehouse") && strings.Contains(run, "${{") {
					t.Errorf("job %s step %d: an expression inside a run script; pass it through env", id, i)
				}
				scripts[id] = append(scripts[id], run)
			}
			if isUses && !strings.Contains(uses, "@") {
				t.Errorf("job %s step %d: uses %q is not pinned to a version", id, i, uses)
			}
		}
	}
	gates, seal, release := asMap(jobs["gates"]), asMap(jobs["seal"]), asMap(jobs["release"])
	// The runner that runs the sandbox has no way to sign; the one that
	// signs runs no sandbox.
	if got, ok := asMap(gates["permissions"])["id-token"]; ok {
		t.Errorf("gates job: permissions id-token is %v: the job that runs the sandbox must not be able to sign", got)
	}
	if got := asMap(seal["permissions"])["id-token"]; got != "write" {
		t.Errorf("seal job: permissions id-token is %v, want write (keyless signing)", got)
	}
	if !slices.Contains(needsOf(seal["needs"]), "gates") || !strings.Contains(fmt.Sprint(seal["if"]), "cancelled()") {
		t.Errorf("seal job: needs %v, if %v; want the gates job, and to run after a FAIL too", seal["needs"], seal["if"])
	}
	if !slices.Contains(needsOf(release["needs"]), "seal") {
		t.Errorf("release job does not need the seal job: %v", release["needs"])
	}
	if cond, _ := release["if"].(string); !strings.Contains(cond, "refs/tags/") {
		t.Errorf("release job runs on %q, want tags only", cond)
	}
	want := map[string][]string{
		"gates":   {"make -C \"$GATEHOUSE_SRC\" build", "gatehouse doctor", "gatehouse run --profile"},
		"seal":    {"gatehouse seal --keyless", "gatehouse push --to oci-layout:"},
		"release": {"gatehouse verify --from oci-layout:", "gatehouse gate --policy", "--certificate-identity"},
	}
	for job, subs := range want {
		all := strings.Join(scripts[job], "\n")
		for _, s := range subs {
			if !strings.Contains(all, s) {
				t.Errorf("job %s runs no %q", job, s)
			}
		}
	}
	checkSigningApart(t, "github-actions", scripts)
	if !usesStep(gates, "actions/upload-artifact@", "unsigned-runs/") || !usesStep(seal, "actions/download-artifact@", "unsigned-runs") {
		t.Error("the unsigned run folder is not uploaded by the gates job and downloaded by the seal job")
	}
	if p := stepWith(gates, "actions/upload-artifact@"); !strings.Contains(p, "!unsigned-runs/gatehouse-index.db") {
		t.Errorf("the gates job uploads its index too (%q): the seal job must keep its own", p)
	}
	if !usesStep(seal, "actions/upload-artifact@", "gatehouse-runs/") || !usesStep(release, "actions/download-artifact@", "") {
		t.Error("the sealed run folder is not uploaded by the seal job and downloaded by the release job")
	}
}

// checkSigningApart: a job that runs sandboxes ('gatehouse run' without
// --check) signs nothing, and a job that signs runs no sandbox.
func checkSigningApart(t *testing.T, file string, scripts map[string][]string) {
	t.Helper()
	for job, ss := range scripts {
		runs, signs := false, false
		for _, c := range scriptCommands(t, job, strings.Join(ss, "\n"), ciVars("sandbox/profile.yaml", "ci/trusted_root.json")) {
			switch {
			case len(c.args) > 0 && c.args[0] == "run" && !slices.Contains(c.args, "--check"):
				runs = true
				if slices.Contains(c.args, "--key") || slices.Contains(c.args, "--keyless") {
					t.Errorf("%s job %s: %s: signs in the process that runs the sandbox", file, job, c.line)
				}
			case len(c.args) > 0 && c.args[0] == "seal":
				signs = true
			}
		}
		if runs && signs {
			t.Errorf("%s job %s both runs the sandbox and seals", file, job)
		}
	}
}

func stepWith(job map[string]any, uses string) string {
	for _, s := range asList(job["steps"]) {
		step := asMap(s)
		if u, _ := step["uses"].(string); strings.HasPrefix(u, uses) {
			p, _ := asMap(step["with"])["path"].(string)
			return p
		}
	}
	return ""
}

func needsOf(v any) []string {
	switch n := v.(type) {
	case string:
		return []string{n}
	case []any:
		var out []string
		for _, x := range n {
			if s, ok := x.(string); ok {
				out = append(out, s)
			} else if s, ok := asMap(x)["job"].(string); ok { // GitLab's {job: NAME}
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func usesStep(job map[string]any, uses, path string) bool {
	for _, s := range asList(job["steps"]) {
		step := asMap(s)
		u, _ := step["uses"].(string)
		p, _ := asMap(step["with"])["path"].(string)
		if strings.HasPrefix(u, uses) && strings.Contains(p, path) {
			return true
		}
	}
	return false
}

// gitlabReserved are top-level keys of .gitlab-ci.yml that are not jobs.
var gitlabReserved = []string{"stages", "variables", "default", "include", "workflow", "image", "services",
	"before_script", "after_script", "cache"}

// gitlabJobs resolves each job's extends (one level is all the example uses,
// but chains work) and returns the jobs with their effective keys.
func gitlabJobs(t *testing.T, doc map[string]any) map[string]map[string]any {
	t.Helper()
	var resolve func(name string, depth int) map[string]any
	resolve = func(name string, depth int) map[string]any {
		j := asMap(doc[name])
		if j == nil || depth > 10 {
			t.Errorf("extends %q: no such job (or a loop)", name)
			return nil
		}
		out := map[string]any{}
		var bases []string
		switch e := j["extends"].(type) {
		case string:
			bases = []string{e}
		case []any:
			for _, x := range e {
				bases = append(bases, fmt.Sprint(x))
			}
		}
		for _, b := range bases {
			for k, v := range resolve(b, depth+1) {
				out[k] = v
			}
		}
		for k, v := range j {
			out[k] = v
		}
		return out
	}
	jobs := map[string]map[string]any{}
	for name := range doc {
		if slices.Contains(gitlabReserved, name) || strings.HasPrefix(name, ".") {
			continue
		}
		jobs[name] = resolve(name, 0)
	}
	return jobs
}

func TestCIExamplesGitLabStructure(t *testing.T) {
	doc := loadYAML(t, gitlabExample)
	var stages []string
	for _, s := range asList(doc["stages"]) {
		stages = append(stages, fmt.Sprint(s))
	}
	if len(stages) == 0 {
		t.Fatal("no stages")
	}
	jobs := gitlabJobs(t, doc)
	for name, job := range jobs {
		if len(asList(job["script"])) == 0 {
			t.Errorf("job %s: no script", name)
		}
		if st, _ := job["stage"].(string); !slices.Contains(stages, st) {
			t.Errorf("job %s: stage %q is not in stages %v", name, st, stages)
		}
		for _, n := range needsOf(job["needs"]) {
			if _, ok := jobs[n]; !ok {
				t.Errorf("job %s needs %q, which is not a job", name, n)
			}
		}
	}
	gates, seal, release := jobs["gates"], jobs["seal"], jobs["release"]
	if gates == nil || seal == nil || release == nil {
		t.Fatalf("want jobs gates, seal and release, have %v", slices.Collect(mapsKeys(jobs)))
	}
	if tok, ok := gates["id_tokens"]; ok {
		t.Errorf("gates job: id_tokens %v: the job that runs the sandbox must not be able to sign", tok)
	}
	tok := asMap(asMap(seal["id_tokens"])["SIGSTORE_ID_TOKEN"])
	if tok["aud"] != "sigstore" {
		t.Errorf("seal job: id_tokens.SIGSTORE_ID_TOKEN.aud = %v, want sigstore (seal --keyless reads it)", tok["aud"])
	}
	art := asMap(gates["artifacts"])
	if art["when"] != "always" || !slices.ContainsFunc(asList(art["paths"]), func(p any) bool { return p == "unsigned-runs/" }) ||
		!slices.ContainsFunc(asList(art["exclude"]), func(p any) bool { return strings.HasPrefix(fmt.Sprint(p), "unsigned-runs/gatehouse-index.db") }) {
		t.Errorf("gates job: artifacts %v, want unsigned-runs/ uploaded always, its index left out", art)
	}
	if sa := asMap(seal["artifacts"]); sa["when"] != "always" || !slices.ContainsFunc(asList(sa["paths"]), func(p any) bool { return p == "gatehouse-runs/" }) {
		t.Errorf("seal job: artifacts %v, want gatehouse-runs/ uploaded always", sa)
	}
	if !slices.Contains(needsOf(seal["needs"]), "gates") || seal["when"] != "always" {
		t.Errorf("seal job: needs %v, when %v; want gates, and always (a FAIL is sealed too)", seal["needs"], seal["when"])
	}
	if !slices.Contains(needsOf(release["needs"]), "seal") {
		t.Errorf("release job does not need seal: %v", release["needs"])
	}
	if before := strings.Join(toStrings(gates["before_script"]), "\n"); !strings.Contains(before, "make -C \"$GATEHOUSE_SRC\" build") {
		t.Errorf("gatehouse is not built with make build:\n%s", before)
	}
	scripts := map[string][]string{}
	for name, job := range jobs {
		scripts[name] = toStrings(job["script"])
	}
	checkSigningApart(t, "gitlab-ci", scripts)
}

func mapsKeys(m map[string]map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range asList(v) {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// exampleCommands returns every gatehouse command line of both examples,
// with variables expanded from vars (an unknown variable fails the test).
func exampleCommands(t *testing.T, vars map[string]string) []ciCommand {
	return exampleCommandsFrom(t, githubExample, gitlabExample, vars)
}

func exampleCommandsFrom(t *testing.T, github, gitlab string, vars map[string]string) []ciCommand {
	t.Helper()
	var cmds []ciCommand
	gh := loadYAML(t, github)
	for id, j := range asMap(gh["jobs"]) {
		for _, s := range asList(asMap(j)["steps"]) {
			if run, ok := asMap(s)["run"].(string); ok {
				cmds = append(cmds, scriptCommands(t, "github-actions job "+id, run, vars)...)
			}
		}
	}
	gl := loadYAML(t, gitlab)
	for name, job := range gitlabJobs(t, gl) {
		for _, key := range []string{"before_script", "script"} {
			for _, line := range toStrings(job[key]) {
				cmds = append(cmds, scriptCommands(t, "gitlab-ci job "+name, line, vars)...)
			}
		}
	}
	return cmds
}

// scriptCommands splits a shell script into simple commands and keeps the
// gatehouse ones (run directly or through sudo).
func scriptCommands(t *testing.T, where, script string, vars map[string]string) []ciCommand {
	t.Helper()
	script = strings.ReplaceAll(script, "\\\n", " ")
	var out []ciCommand
	for _, line := range strings.Split(script, "\n") {
		words, err := shellWords(line, vars)
		if err != nil {
			t.Errorf("%s: %q: %v", where, line, err)
			continue
		}
		for _, cmd := range words {
			for len(cmd) > 0 && (cmd[0] == "sudo" || strings.HasPrefix(cmd[0], "-") && cmd[0] != "--" ||
				strings.Contains(cmd[0], "=") && !strings.HasPrefix(cmd[0], "=")) {
				cmd = cmd[1:]
			}
			if len(cmd) > 0 && cmd[0] == "gatehouse" {
				out = append(out, ciCommand{where: where, line: strings.TrimSpace(line), args: cmd[1:]})
			}
		}
	}
	return out
}

// shellWords splits one line the way sh would for the simple commands the
// examples use: quotes, backslashes, $VAR and ${VAR}, comments, and the
// operators ; & && || | ending a command. Globs expand against the
// current folder (kept as written when nothing matches, as sh does).
func shellWords(line string, vars map[string]string) ([][]string, error) {
	var cmds [][]string
	var cur []string
	var w strings.Builder
	inWord, glob := false, false
	endWord := func() {
		if inWord {
			word := w.String()
			if m := shellGlob(word); glob && len(m) > 0 {
				cur = append(cur, m...)
			} else {
				cur = append(cur, word)
			}
		}
		w.Reset()
		inWord, glob = false, false
	}
	endCmd := func() {
		endWord()
		if len(cur) > 0 {
			cmds = append(cmds, cur)
		}
		cur = nil
	}
	expand := func(s string, i int) (int, error) { // s[i] == '$'
		j := i + 1
		var name string
		if j < len(s) && s[j] == '{' {
			k := strings.IndexByte(s[j:], '}')
			if k < 0 {
				return 0, fmt.Errorf("unterminated ${")
			}
			name, j = s[j+1:j+k], j+k+1
		} else {
			for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			name = s[i+1 : j]
		}
		if name == "" {
			return 0, fmt.Errorf("a bare $ or $(...): not understood here")
		}
		v, ok := vars[name]
		if !ok {
			return 0, fmt.Errorf("variable %s is not defined for the test", name)
		}
		w.WriteString(v)
		inWord = true
		return j, nil
	}
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			endWord()
			i++
		case c == '#' && !inWord:
			endCmd()
			return cmds, nil
		case c == ';' || c == '&' || c == '|':
			endCmd()
			i++
			if i < len(line) && (line[i] == '&' || line[i] == '|') {
				i++
			}
		case c == '\'':
			k := strings.IndexByte(line[i+1:], '\'')
			if k < 0 {
				return nil, fmt.Errorf("unterminated '")
			}
			w.WriteString(line[i+1 : i+1+k])
			inWord, i = true, i+k+2
		case c == '"':
			i++
			inWord = true
			for {
				if i >= len(line) {
					return nil, fmt.Errorf("unterminated \"")
				}
				if line[i] == '"' {
					i++
					break
				}
				if line[i] == '$' {
					j, err := expand(line, i)
					if err != nil {
						return nil, err
					}
					i = j
					continue
				}
				if line[i] == '\\' && i+1 < len(line) {
					i++
				}
				w.WriteByte(line[i])
				i++
			}
		case c == '$':
			j, err := expand(line, i)
			if err != nil {
				return nil, err
			}
			i = j
		case c == '\\' && i+1 < len(line):
			w.WriteByte(line[i+1])
			inWord, i = true, i+2
		default:
			if c == '*' || c == '?' {
				glob = true
			}
			w.WriteByte(c)
			inWord = true
			i++
		}
	}
	endCmd()
	return cmds, nil
}

// shellGlob matches a word as sh does: "dir/*/" only folders, each with
// its slash.
func shellGlob(word string) []string {
	dirsOnly := strings.HasSuffix(word, "/")
	m, _ := filepath.Glob(strings.TrimSuffix(word, "/"))
	if !dirsOnly {
		return m
	}
	var out []string
	for _, p := range m {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			out = append(out, p+"/")
		}
	}
	return out
}

// TestCIExamplesCommandsParse runs each gatehouse command line of both
// examples through run() with --help appended: every flag before it must
// be one the verb has, with a value of the right type (an unknown verb or
// flag is exit 2), so the examples cannot drift from the CLI.
func TestCIExamplesCommandsParse(t *testing.T) {
	cmds := exampleCommands(t, ciVars("sandbox/profile.yaml", "ci/trusted_root.json"))
	seen := map[string]int{}
	for _, c := range cmds {
		if len(c.args) == 0 {
			t.Errorf("%s: bare gatehouse: %s", c.where, c.line)
			continue
		}
		seen[c.args[0]]++
		args := append(append([]string(nil), c.args...), "--help")
		if r := gatehouse(t, context.Background(), args...); r.code != exitOK {
			t.Errorf("%s: %s\n  flags do not parse (exit %d): %s", c.where, c.line, r.code, firstLine(r.stderr))
		}
	}
	// Each example has doctor, run --check, run in its gates job, seal and
	// push in its seal job, and verify, gate in its release job.
	for verb, n := range map[string]int{"doctor": 2, "run": 4, "seal": 2, "push": 2, "verify": 2, "gate": 2} {
		if seen[verb] != n {
			t.Errorf("%d 'gatehouse %s' lines in the examples, want %d (%v)", seen[verb], verb, n, seen)
		}
	}
}

// ciVars are the variables the examples use, as CI would set them.
func ciVars(profile, trustedRoot string) map[string]string {
	return map[string]string{
		"GATEHOUSE_SRC": "third_party/gatehouse", "GATEHOUSE_PROFILE": profile, "GATEHOUSE_TRUSTED_ROOT": trustedRoot,
		"GATEHOUSE_IDENTITY": "https://github.com/team/app/.github/workflows/gatehouse.yml@refs/tags/v1.0.0",
		"GATEHOUSE_ISSUER":   klIssuer,
		"RUNNER_TEMP":        os.TempDir(), "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "t", "ACTIONS_ID_TOKEN_REQUEST_URL": "http://127.0.0.1/",
		"GITHUB_SHA": "0123abc", "GITHUB_RUN_ID": "42", "GITHUB_RUN_ATTEMPT": "1",
		"CI_COMMIT_SHA": "0123abc", "CI_PIPELINE_ID": "42", "CI_JOB_ID": "7",
	}
}

// TestCIExamplesCommandsRun goes further than flag parsing: each command
// runs for real against the team example's profile and a trusted root, in
// a folder standing in for the CI workspace, and must get past its usage
// checks (required flags, keyless flags complete, the profile valid):
//   - run --check: exit 0 (the profile checks, nothing runs);
//   - run (the keyless one): run --check with the same flags, since a real
//     run would seal through the public Fulcio and Rekor;
//   - seal: the run folder holds a planted link, exit 1 (refused, not
//     usage: the keyless flags, token and trusted root were accepted);
//   - push: the archive is not a bundle, exit 1 (refused, not usage);
//   - verify --from: the layout is empty, exit 1 (not verified, not usage);
//   - gate: there is no evidence, exit 1 (refused, not usage);
//   - doctor: flags only (it probes the machine; TestDoctor covers it).
func TestCIExamplesCommandsRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: run --check checks the egress ruleset with nft in a scratch namespace")
	}
	profile, err := filepath.Abs(filepath.Join("..", "..", "examples", "team", "sandbox.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	vs, err := keylesstest.New()
	if err != nil {
		t.Fatal(err)
	}
	tr := filepath.Join(ws, "trusted_root.json")
	if _, err := vs.WriteTrustedRoot(tr, false); err != nil {
		t.Fatal(err)
	}
	ex := []string{githubExample, gitlabExample}
	for i := range ex {
		if ex[i], err = filepath.Abs(ex[i]); err != nil {
			t.Fatal(err)
		}
	}
	// The workspace: the examples' relative paths and globs resolve here.
	t.Chdir(ws)
	if err := os.MkdirAll("gatehouse-runs", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("gatehouse-runs", "not-a-bundle.tar.gz"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// What the gates job leaves for the seal job: a run folder, here one a
	// guest planted a link in, which seal must refuse (after its keyless
	// flags, token and trusted root were all accepted).
	planted := filepath.Join("unsigned-runs", "20260102T030405Z-ab12")
	if err := os.MkdirAll(filepath.Join(planted, "traces"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/hostname", filepath.Join(planted, "traces", "model.jsonl")); err != nil {
		t.Fatal(err)
	}
	vars := ciVars(profile, tr)
	vars["RUNNER_TEMP"] = ws
	if err := os.WriteFile(filepath.Join(ws, "oidc-token"), []byte(keylesstest.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(keyless.TokenEnv, keylesstest.Token) // GitLab's id_tokens
	cmds := exampleCommandsFrom(t, ex[0], ex[1], vars)
	ctx := context.Background()
	for _, c := range cmds {
		args, want, why := c.args, exitViolation, ""
		switch c.args[0] {
		case "doctor":
			continue
		case "run":
			if !slices.Contains(args, "--check") {
				args = append(append([]string(nil), args...), "--check")
			}
			want = exitOK
		case "seal":
			why = "traces/model.jsonl is a symlink"
		case "push":
			why = "refused"
		case "verify":
			why = "no such evidence"
		case "gate":
			why = "no index"
		default:
			t.Errorf("%s: %s: no expectation for verb %q", c.where, c.line, c.args[0])
			continue
		}
		r := gatehouse(t, ctx, args...)
		if r.code != want || !strings.Contains(r.stderr, why) {
			t.Errorf("%s: %s\n  exit %d, want %d with %q:\n%s", c.where, c.line, r.code, want, why, r.stderr)
		}
	}
}
