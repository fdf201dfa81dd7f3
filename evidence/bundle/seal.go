package bundle

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// Seal writes SHA256SUMS and the two signed attestations into a complete run
// folder. It may be called on the runner's "<id>.partial" folder before the
// final rename (the best order: a run that dies is never both named final
// and signed) or on the final folder. It refuses a run with Complete=false
// and a folder that is already sealed.
func Seal(ctx context.Context, dir string, s Signer) error {
	// Every file is read once: the statements are made from the bytes
	// that are hashed, never from a second read.
	snap, err := readFolder(ctx, dir, DefaultLimits)
	if err != nil {
		return fmt.Errorf("bundle: seal: %w", err)
	}
	run, err := readRun(snap)
	if err != nil {
		return err
	}
	if !run.Complete {
		return fail(ErrIncomplete, evidence.RunFile, "complete", nil)
	}
	for _, f := range snap.paths {
		if f == ImageSubject { // would collide with the image digest subject
			return failf(ErrUnsafePath, f, "", "a root file may not be named %q", ImageSubject)
		}
	}
	if snap.hasSums || len(snap.attest) > 0 {
		return fail(ErrSealed, SumsFile, "", nil)
	}
	entries := make([]Entry, 0, len(snap.paths))
	for _, f := range snap.paths {
		entries = append(entries, Entry{Path: f, SHA256: snap.files[f].sha256})
	}
	results, err := readResults(snap)
	if err != nil {
		return err
	}
	if err := checkPolicy(run, entries); err != nil {
		return err
	}
	sums := FormatSums(entries)
	subj, err := subjects(entries, hashBytes(sums), run.ImageDigest)
	if err != nil {
		return fail(ErrMalformed, evidence.RunFile, "image_digest", err)
	}
	tr := Statement[TestResult]{Type: StatementType, Subject: subj, PredicateType: TestResultType,
		Predicate: testResult(results, policyConfig(entries))}
	rp := Statement[RunPredicate]{Type: StatementType, Subject: subj, PredicateType: RunPredicateV1,
		Predicate: RunPredicate{Run: run, Scenarios: scenarioRefs(results), SumsSHA256: hashBytes(sums)}}
	trBytes, err := signStatement(ctx, s, tr)
	if err != nil {
		return err
	}
	rpBytes, err := signStatement(ctx, s, rp)
	if err != nil {
		return err
	}
	// SHA256SUMS first, the test-result attestation last: a seal that dies
	// part-way leaves a folder that fails verification as unsigned.
	if err := os.MkdirAll(filepath.Join(dir, AttestDir), 0o755); err != nil {
		return fmt.Errorf("bundle: seal: %w", err)
	}
	for _, w := range []struct {
		name string
		b    []byte
	}{{SumsFile, sums}, {RunAttestFile, rpBytes}, {TestResultFile, trBytes}} {
		if err := writeAtomic(filepath.Join(dir, filepath.FromSlash(w.name)), w.b); err != nil {
			return fmt.Errorf("bundle: seal: %w", err)
		}
	}
	return nil
}

// signStatement serializes the statement once, signs those bytes, and
// returns the Sigstore bundle JSON to write verbatim.
func signStatement[P any](ctx context.Context, s Signer, st Statement[P]) ([]byte, error) {
	payload, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("bundle: seal: %w", err)
	}
	pb, err := s.SignDSSE(ctx, InTotoPayload, payload)
	if err != nil {
		return nil, fmt.Errorf("bundle: sign %s: %w", st.PredicateType, err)
	}
	out, err := protojson.Marshal(pb)
	if err != nil {
		return nil, fmt.Errorf("bundle: seal: %w", err)
	}
	return out, nil
}

func writeAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
