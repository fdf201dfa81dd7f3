package bundle

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// Verified is what a bundle proves once every check has passed.
type Verified struct {
	Dir        string
	Run        evidence.Run
	Results    []evidence.Result
	Files      []Entry // every evidence file (not SHA256SUMS, not attestations)
	TestResult TestResult
	Detail     RunPredicate
	Signer     string // the verifier's identity, e.g. "key sha256:..."
}

// Verify checks a sealed bundle folder offline: folder state, both
// signatures, that both statements name the same subjects, and that every
// file's bytes match both the subjects and SHA256SUMS, with no file missing
// and none added. Every file is read once (readFolder: no link followed,
// nothing but regular files opened, every read bounded) and what is parsed
// is what was hashed. The first failure is returned as an *Error.
func Verify(ctx context.Context, dir string, v Verifier) (*Verified, error) {
	if err := checkName(filepath.Base(filepath.Clean(dir))); err != nil {
		return nil, err
	}
	s, err := readFolder(ctx, dir, DefaultLimits)
	if err != nil {
		return nil, err
	}
	return verifySnapshot(ctx, s, dir, v)
}

// checkName refuses a runner's unfinished folder by its name.
func checkName(base string) error {
	if strings.HasSuffix(base, PartialSuffix) || strings.HasPrefix(base, ".") {
		return failf(ErrPartial, "", "", "folder %q is a runner's unfinished output", base)
	}
	return nil
}

// verifySnapshot makes every check on files already read.
func verifySnapshot(ctx context.Context, s *snapshot, dir string, v Verifier) (*Verified, error) {
	run, err := readRun(s)
	if err != nil {
		return nil, err
	}
	if !run.Complete {
		return nil, fail(ErrIncomplete, evidence.RunFile, "complete", nil)
	}
	if err := checkAttestFiles(s.attest); err != nil {
		return nil, err
	}
	tr, trSubj, err := verifyStatement[TestResult](ctx, s, TestResultFile, TestResultType, v)
	if err != nil {
		return nil, err
	}
	rp, rpSubj, err := verifyStatement[RunPredicate](ctx, s, RunAttestFile, RunPredicateV1, v)
	if err != nil {
		return nil, err
	}
	if err := sameSubjects(trSubj, rpSubj); err != nil {
		return nil, err
	}
	want, err := subjectMap(trSubj)
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
	if err := checkImage(run, want); err != nil {
		return nil, err
	}
	results, err := readResults(s)
	if err != nil {
		return nil, err
	}
	if err := checkPolicy(run, entries); err != nil {
		return nil, err
	}
	if rp.Run.ID != run.ID {
		return nil, failf(ErrStatement, RunAttestFile, "run.id", "statement names run %q, %s names %q", rp.Run.ID, evidence.RunFile, run.ID)
	}
	return &Verified{Dir: dir, Run: run, Results: results, Files: entries,
		TestResult: tr, Detail: rp, Signer: v.Identity()}, nil
}

// checkAttestFiles allows exactly our two attestation files.
func checkAttestFiles(attest []string) error {
	seen := map[string]bool{}
	for _, a := range attest {
		if a != TestResultFile && a != RunAttestFile {
			return fail(ErrExtraFile, a, "", nil)
		}
		seen[a] = true
	}
	for _, a := range []string{TestResultFile, RunAttestFile} {
		if !seen[a] {
			return fail(ErrUnsigned, a, "", fmt.Errorf("attestation missing"))
		}
	}
	return nil
}

// verifyStatement loads one Sigstore bundle, checks its signature, and
// decodes the DSSE payload, which is exactly the bytes that were signed.
func verifyStatement[P any](ctx context.Context, s *snapshot, rel, predicateType string, v Verifier) (P, []ResourceDescriptor, error) {
	var zero P
	raw, err := s.data(rel)
	if err != nil {
		return zero, nil, err
	}
	var b sgbundle.Bundle
	if err := b.UnmarshalJSON(raw); err != nil {
		return zero, nil, fail(ErrMalformed, rel, "", err)
	}
	env, err := b.Envelope()
	if err != nil {
		return zero, nil, fail(ErrMalformed, rel, "dsseEnvelope", err)
	}
	if _, err := v.VerifyBundle(ctx, &b); err != nil {
		return zero, nil, fail(ErrSignature, rel, "", err)
	}
	if env.PayloadType != InTotoPayload {
		return zero, nil, failf(ErrStatement, rel, "payloadType", "%q", env.PayloadType)
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		return zero, nil, fail(ErrMalformed, rel, "payload", err)
	}
	var st Statement[P]
	if err := decodeStrict(payload, &st); err != nil {
		return zero, nil, fail(ErrMalformed, rel, "payload", err)
	}
	if st.Type != StatementType {
		return zero, nil, failf(ErrStatement, rel, "_type", "%q", st.Type)
	}
	if st.PredicateType != predicateType {
		return zero, nil, failf(ErrStatement, rel, "predicateType", "got %q, want %q", st.PredicateType, predicateType)
	}
	return st.Predicate, st.Subject, nil
}

func sameSubjects(a, b []ResourceDescriptor) error {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		return failf(ErrStatement, RunAttestFile, "subject", "subjects differ from %s", TestResultFile)
	}
	return nil
}

// subjectMap indexes subjects by name, refusing duplicates and non-sha256.
func subjectMap(subj []ResourceDescriptor) (map[string]string, error) {
	m := make(map[string]string, len(subj))
	for _, s := range subj {
		d := s.Digest["sha256"]
		if !isHex64(d) || len(s.Digest) != 1 {
			return nil, failf(ErrStatement, TestResultFile, "subject", "%q: want one sha256 digest", s.Name)
		}
		if _, dup := m[s.Name]; dup {
			return nil, failf(ErrStatement, TestResultFile, "subject", "%q listed twice", s.Name)
		}
		m[s.Name] = d
	}
	return m, nil
}
