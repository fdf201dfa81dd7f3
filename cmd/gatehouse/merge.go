package main

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/evidence/index"
	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
)

const mergeHelp = `Usage: gatehouse merge --group ID (--key cosign.key | --keyless --trusted-root FILE)
                       [--db PATH] [--out DIR]

Writes one combined report over the runs of a run group (the shards of
'gatehouse run --shard K/N --group ID'), found in the index: a folder
merge-<group>-<time> under --out with merge.json (every shard: its run, shard,
policy, image, signer and the sha256 of its SHA256SUMS, which pins every file
of that shard), results.json (every result once, its run and shard named)
and report.html. Each shard's bundle is verified first with the merge's own
signer (the key's public half, or the keyless identity), so the shards must
be signed by the same signer as the merge; a shard that does not verify is
refused, and so is an unsigned one. When a gate, path and scenario of the same
policy and image is in several runs (a re-run shard), the newest is merged
and the older runs are listed as superseded. Shards K/N of a group that are
not in the index are listed as missing. The merge folder is then sealed:
SHA256SUMS and attestations/merge.sigstore.json, a signed in-toto statement
(predicate https://gatehouse.dev/merge/v1, the merge.json content) whose
subjects are the folder's files; 'gatehouse merge --verify DIR' checks it.

A merge is a report: it does not decide a release ('gatehouse gate' does,
from the signed shards themselves). Exit codes: 0 merged (or verified), 1 a
shard or the merge does not verify, or the group has no runs, 2 usage.

Example:
  gatehouse merge --group "$CI_PIPELINE_ID" --key cosign.key --db runs/gatehouse-index.db --out runs
  gatehouse merge --verify runs/merge-1234-20260302T120000Z --key cosign.pub

Flags:
`

func runMerge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := newFlagSet(ctx, "merge")
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, mergeHelp); fl.PrintDefaults() }
	group := fl.String("group", "", "run group to merge (required)")
	db := fl.String("db", index.DefaultPath("gatehouse-runs"), "SQLite index the shards are recorded in")
	out := fl.String("out", "gatehouse-runs", "folder that receives the merge folder")
	key := fl.String("key", "", "cosign private key to sign the merge with (password from COSIGN_PASSWORD); with --verify, the public key")
	check := fl.String("verify", "", "verify a merge folder instead of writing one")
	var sf signFlags
	sf.register(fl)
	pos, err := parseArgs(fl, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("merge: unexpected argument %q", pos[0])
	}
	if *check != "" {
		return verifyMerge(ctx, *check, *key, stdout)
	}
	if *group == "" {
		return usagef("merge: --group ID is required (the run group the shards were run with)")
	}
	s, err := loadSealer("merge", *key, sf)
	if err != nil {
		return err
	}
	if s == nil {
		return usagef("merge: a merge is signed: give --key cosign.key (or --keyless)")
	}
	ix, err := openIndex(ctx, *db)
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	defer ix.Close()
	rows, err := ix.Group(ctx, *group)
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	if len(rows) == 0 {
		return refusedf("merge: the index %s holds no run of group %q", *db, *group)
	}
	v, err := s.SelfVerifier()
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	doc := bundle.Merge{Schema: bundle.MergeSchemaV1, Group: *group, Created: time.Now().UTC(), Harness: evidence.HarnessVersion()}
	var merged []bundle.MergedResult
	// Oldest first: a newer run's result replaces an older one's.
	at := map[string]int{}
	for _, row := range rows {
		if row.KeyFingerprint == "" {
			return refusedf("merge: run %s (%s) is unsigned: only signed shards are merged", row.ID, row.Dir)
		}
		ver, err := verifyBundle(ctx, row.Dir, v)
		if err != nil {
			return refusedf("merge: run %s (%s) does not verify as signed by %s: %s", row.ID, row.Dir, v.Identity(), explain(err))
		}
		sums, err := bundle.SumsDigest(row.Dir)
		if err != nil {
			return fmt.Errorf("merge: run %s: %w", row.ID, err)
		}
		doc.Shards = append(doc.Shards, bundle.MergeShard{Run: ver.Run.ID, Shard: ver.Run.Shard, Dir: row.Dir, Profile: ver.Run.Profile,
			PolicyDigest: ver.Run.PolicyDigest, ImageDigest: ver.Run.ImageDigest, Ended: ver.Run.End, Signer: ver.Signer,
			SumsSHA256: "sha256:" + sums, Results: len(ver.Results)})
		for _, r := range ver.Results {
			k := strings.Join([]string{ver.Run.PolicyDigest, ver.Run.ImageDigest, r.Gate, r.Path, r.Scenario}, "\x00")
			m := bundle.MergedResult{Run: ver.Run.ID, Shard: ver.Run.Shard, Policy: ver.Run.PolicyDigest, Result: r}
			if i, dup := at[k]; dup {
				doc.Superseded = append(doc.Superseded, fmt.Sprintf("%s: %s/%s (by %s)", merged[i].Run, r.Gate, r.Path, ver.Run.ID))
				merged[i] = m
				continue
			}
			at[k] = len(merged)
			merged = append(merged, m)
		}
	}
	doc.Missing = missingShards(rows)
	doc.Results = len(merged)
	sort.SliceStable(merged, func(i, j int) bool {
		a, b := merged[i], merged[j]
		if a.Gate != b.Gate {
			return a.Gate < b.Gate
		}
		return a.Path < b.Path
	})
	dir, err := writeMerge(ctx, *out, doc, merged, s)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "merged %d run(s) of group %s, %d result(s), signed by %s\n", len(doc.Shards), *group, len(merged), s.Identity())
	for _, sh := range doc.Shards {
		fmt.Fprintf(stdout, "  run %s shard %-5s %s  SHA256SUMS %s\n", sh.Run, orDash(sh.Shard), sh.Profile, sh.SumsSHA256)
	}
	if len(doc.Missing) > 0 {
		fmt.Fprintf(stdout, "missing shards: %s\n", strings.Join(doc.Missing, ", "))
	}
	fmt.Fprintf(stdout, "merge: %s\n", dir)
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// missingShards lists the K/N a group's shards name but the index lacks.
func missingShards(rows []index.Run) []string {
	have := map[string]bool{}
	n := 0
	for _, r := range rows {
		sh, err := features.ParseShard(r.Shard)
		if err != nil {
			continue
		}
		have[sh.String()] = true
		n = max(n, sh.N)
	}
	var out []string
	for k := 1; k <= n; k++ {
		if s := (features.Shard{K: k, N: n}).String(); !have[s] {
			out = append(out, s)
		}
	}
	return out
}

// writeMerge writes the merge folder under a hidden name, seals it and only
// then gives it its final name: no merge folder is ever named unsigned.
func writeMerge(ctx context.Context, out string, doc bundle.Merge, merged []bundle.MergedResult, s sealer) (string, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("merge: %w", err)
	}
	name := "merge-" + safeName(doc.Group) + "-" + doc.Created.Format("20060102T150405Z")
	tmp, err := os.MkdirTemp(out, "."+name+"-")
	if err != nil {
		return "", fmt.Errorf("merge: %w", err)
	}
	defer os.RemoveAll(tmp) // gone once renamed
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("merge: %w", err)
	}
	write := func(name string, f func(io.Writer) error) error {
		file, err := os.Create(filepath.Join(tmp, name))
		if err != nil {
			return err
		}
		if err := f(file); err != nil {
			file.Close()
			return err
		}
		return file.Close()
	}
	err = errors.Join(
		write(evidence.MergeFile, func(w io.Writer) error { return writeJSON(w, doc) }),
		write(evidence.ResultsFile, func(w io.Writer) error { return writeJSON(w, merged) }),
		write(evidence.ReportFile, func(w io.Writer) error { return writeMergeReport(w, doc, merged) }),
	)
	if err != nil {
		return "", fmt.Errorf("merge: write: %w", err)
	}
	if err := bundle.SealMerge(ctx, tmp, doc, s); err != nil {
		return "", fmt.Errorf("merge: %w", err)
	}
	final := filepath.Join(out, name)
	if err := os.Rename(tmp, final); err != nil {
		return "", fmt.Errorf("merge: %w", err)
	}
	if abs, err := filepath.Abs(final); err == nil {
		final = abs
	}
	return final, nil
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, s)
}

// verifyMerge checks a merge folder's signature and files (public key).
func verifyMerge(ctx context.Context, dir, key string, stdout io.Writer) error {
	if key == "" {
		return usagef("merge --verify: give --key cosign.pub")
	}
	v, err := loadVerifierFor("merge", verifyFlags{key: key})
	if err != nil {
		return err
	}
	pred, err := bundle.VerifyMerge(ctx, dir, v)
	if err != nil {
		return refusedf("merge: %s does not verify: %s", dir, explain(err))
	}
	fmt.Fprintf(stdout, "merge %s verified, signed by %s\n%s\n", dir, v.Identity(), pred)
	return nil
}

// writeMergeReport renders report.html: markup escaped by html/template,
// what disguises text (bidi controls, invisible characters, C1) shown as
// escapes (docs/evidence.md, "What is printed").
func writeMergeReport(w io.Writer, doc bundle.Merge, merged []bundle.MergedResult) error {
	tw := termsafe.NewWriter(w, nil)
	if err := mergeReport.Execute(tw, struct {
		Doc     bundle.Merge
		Results []bundle.MergedResult
	}{doc, merged}); err != nil {
		return err
	}
	return tw.Flush()
}

var mergeReport = template.Must(template.New("merge").Funcs(template.FuncMap{"redact": evidence.Redact}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>Gatehouse merge {{.Doc.Group}}</title>
<style>body{font-family:sans-serif}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}
.PASS{color:#060}.FAIL{color:#a00;font-weight:bold}.INCONCLUSIVE{color:#a60}</style></head><body>
<h1>Run group {{.Doc.Group}}</h1>
<p>{{len .Doc.Shards}} run(s), {{.Doc.Results}} result(s), merged {{.Doc.Created.Format "2006-01-02T15:04:05Z07:00"}} by gatehouse {{.Doc.Harness}}.
The signed shards themselves are the evidence; this report is signed as a whole (attestations/merge.sigstore.json).</p>
{{with .Doc.Missing}}<p class="FAIL">Missing shards: {{range .}}{{.}} {{end}}</p>{{end}}
<h2>Shards</h2>
<table><tr><th>run</th><th>shard</th><th>profile</th><th>policy</th><th>image</th><th>ended</th><th>SHA256SUMS</th><th>results</th></tr>
{{range .Doc.Shards}}<tr><td>{{.Run}}</td><td>{{.Shard}}</td><td>{{.Profile}}</td><td>{{.PolicyDigest}}</td><td>{{.ImageDigest}}</td><td>{{.Ended.Format "2006-01-02T15:04:05Z07:00"}}</td><td><code>{{.SumsSHA256}}</code></td><td>{{.Results}}</td></tr>
{{end}}</table>
{{with .Doc.Superseded}}<h2>Superseded by a newer run</h2><ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
<h2>Results</h2>
<table><tr><th>gate</th><th>path</th><th>verdict</th><th>shard</th><th>run</th><th>why</th></tr>
{{range .Results}}<tr><td>{{.Gate}}</td><td>{{.Path}}</td><td class="{{.Verdict}}">{{.Verdict}}</td><td>{{.Shard}}</td><td>{{.Run}}</td><td>{{redact .Reason}}</td></tr>
{{end}}</table></body></html>
`))
