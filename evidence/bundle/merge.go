package bundle

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// A merge folder ('gatehouse merge') is sealed like a run folder, with one
// attestation of its own: SHA256SUMS over its files, and a signed in-toto
// statement whose subjects are those files and whose predicate is the
// merge description (the shards and their SHA256SUMS digests).
const (
	MergeAttestFile  = AttestDir + "/merge.sigstore.json"
	MergePredicateV1 = "https://gatehouse.dev/merge/v1"
)

// MergeSchemaV1 is Merge's schema field.
const MergeSchemaV1 = "gatehouse.merge/v1"

// Merge is a merge folder's merge.json and its signed predicate
// (MergePredicateV1): the shards of one run group, each pinned by the
// digest of its SHA256SUMS.
type Merge struct {
	Schema     string       `json:"schema"` // MergeSchemaV1
	Group      string       `json:"group"`
	Created    time.Time    `json:"created"`
	Harness    string       `json:"harness_version"`
	Shards     []MergeShard `json:"shards"`
	Missing    []string     `json:"missing_shards,omitempty"` // "K/N" not in the index
	Superseded []string     `json:"superseded,omitempty"`     // "run: gate/path" replaced by a newer run
	Results    int          `json:"results"`
}

// MergeShard is one run of the group, as verified before the merge.
type MergeShard struct {
	Run          string    `json:"run"`
	Shard        string    `json:"shard,omitempty"`
	Dir          string    `json:"dir"`
	Profile      string    `json:"profile"`
	PolicyDigest string    `json:"policy_digest"`
	ImageDigest  string    `json:"image_digest,omitempty"`
	Ended        time.Time `json:"ended"`
	Signer       string    `json:"signer"`
	SumsSHA256   string    `json:"sha256sums"` // "sha256:" + SumsDigest of the shard
	Results      int       `json:"results"`
}

// MergedResult is one result in a merge folder's results.json: the
// result, and the run, shard and policy it came from.
type MergedResult struct {
	Run    string `json:"run"`
	Shard  string `json:"shard,omitempty"`
	Policy string `json:"policy_digest"`
	evidence.Result
}

// SealMerge writes SHA256SUMS and the signed merge statement into dir;
// predicate is the Merge (merge.json).
func SealMerge(ctx context.Context, dir string, predicate any, s Signer) error {
	snap, err := readFolder(ctx, dir, DefaultLimits)
	if err != nil {
		return fmt.Errorf("bundle: seal merge: %w", err)
	}
	if snap.hasSums || len(snap.attest) > 0 {
		return fail(ErrSealed, SumsFile, "", nil)
	}
	entries := make([]Entry, 0, len(snap.paths))
	for _, f := range snap.paths {
		entries = append(entries, Entry{Path: f, SHA256: snap.files[f].sha256})
	}
	sums := FormatSums(entries)
	subj, err := subjects(entries, hashBytes(sums), "")
	if err != nil {
		return err
	}
	pred, err := json.Marshal(predicate)
	if err != nil {
		return fmt.Errorf("bundle: seal merge: %w", err)
	}
	st := Statement[json.RawMessage]{Type: StatementType, Subject: subj, PredicateType: MergePredicateV1, Predicate: pred}
	signed, err := signStatement(ctx, s, st)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, AttestDir), 0o755); err != nil {
		return fmt.Errorf("bundle: seal merge: %w", err)
	}
	if err := writeAtomic(filepath.Join(dir, SumsFile), sums); err != nil {
		return fmt.Errorf("bundle: seal merge: %w", err)
	}
	if err := writeAtomic(filepath.Join(dir, filepath.FromSlash(MergeAttestFile)), signed); err != nil {
		return fmt.Errorf("bundle: seal merge: %w", err)
	}
	return nil
}

// VerifyMerge checks a sealed merge folder offline: its signature, that
// SHA256SUMS and every file match the signed subjects, none missing and
// none added. It returns the signed predicate.
func VerifyMerge(ctx context.Context, dir string, v Verifier) (json.RawMessage, error) {
	s, err := readFolder(ctx, dir, DefaultLimits)
	if err != nil {
		return nil, err
	}
	for _, a := range s.attest {
		if a != MergeAttestFile {
			return nil, fail(ErrExtraFile, a, "", nil)
		}
	}
	if len(s.attest) == 0 {
		return nil, fail(ErrUnsigned, MergeAttestFile, "", fmt.Errorf("attestation missing"))
	}
	pred, subj, err := verifyStatement[json.RawMessage](ctx, s, MergeAttestFile, MergePredicateV1, v)
	if err != nil {
		return nil, err
	}
	want, err := subjectMap(subj)
	if err != nil {
		return nil, err
	}
	if !s.hasSums {
		return nil, fail(ErrMissingFile, SumsFile, "", nil)
	}
	entries, err := checkSums(s, want)
	if err != nil {
		return nil, err
	}
	if err := checkFiles(s, entries, want); err != nil {
		return nil, err
	}
	return pred, nil
}

// SumsDigest is the hex SHA-256 of a sealed folder's SHA256SUMS: one
// digest that pins every file of the folder.
func SumsDigest(dir string) (string, error) {
	b, err := readSmall(dir, SumsFile)
	if err != nil {
		return "", err
	}
	return hashBytes(b), nil
}
