package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
)

// ReadFile reads the file rel (a slash path) of the run folder dir as
// verify does: bounded, with no link followed below dir and nothing but a
// regular file opened, so a folder from a hostile runner can neither hang
// the reader with a FIFO nor show it a host file through a link. "Not
// there" is ErrMissingFile. For readers of unverified folders (diff,
// compare --run).
func ReadFile(dir, rel string) ([]byte, error) { return readSmall(dir, rel) }

// readSmall reads one metadata file of the folder dir, bounded, with no
// link followed below dir and nothing but a regular file opened; "not
// there" is ErrMissingFile.
func readSmall(dir, rel string) ([]byte, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, fail(ErrMalformed, "", "", err)
	}
	d, err := untrusted.OpenDir(abs)
	if err != nil {
		return nil, fail(ErrMalformed, "", "", err)
	}
	defer d.Close()
	b, err := d.ReadFile(rel, maxMetadataSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fail(ErrMissingFile, rel, "", nil)
	case errors.Is(err, untrusted.ErrTooLarge):
		return nil, fail(ErrTooLarge, rel, "", nil)
	case errors.Is(err, untrusted.ErrNotRegular), errors.Is(err, syscall.ELOOP):
		return nil, failf(ErrUnsafePath, rel, "", "not a regular file")
	case err != nil:
		return nil, fail(ErrMalformed, rel, "", err)
	}
	return b, nil
}

// decodeStrict decodes exactly one JSON value, refusing trailing data.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after JSON value")
	}
	return nil
}

func readRun(s *snapshot) (evidence.Run, error) {
	var run evidence.Run
	b, err := s.data(evidence.RunFile)
	if err != nil {
		return run, err
	}
	if err := decodeStrict(b, &run); err != nil {
		return run, fail(ErrMalformed, evidence.RunFile, "", err)
	}
	return run, nil
}

func readResults(s *snapshot) ([]evidence.Result, error) {
	var rs []evidence.Result
	b, err := s.data(evidence.ResultsFile)
	if err != nil {
		return nil, err
	}
	if err := decodeStrict(b, &rs); err != nil {
		return nil, fail(ErrMalformed, evidence.ResultsFile, "", err)
	}
	return rs, nil
}

// checkPolicy ties run.json's policy_files to the bytes under policy/: each
// named file must be there with that digest, and nothing else may be.
func checkPolicy(run evidence.Run, entries []Entry) error {
	have := map[string]string{}
	for _, e := range entries {
		if rel, ok := strings.CutPrefix(e.Path, evidence.PolicyDir+"/"); ok {
			have[rel] = e.SHA256
		}
	}
	for name, want := range run.PolicyFiles {
		want = strings.TrimPrefix(want, "sha256:")
		got, ok := have[name]
		if !ok {
			return fail(ErrMissingFile, evidence.PolicyDir+"/"+name, "", fmt.Errorf("named in %s policy_files", evidence.RunFile))
		}
		if got != want {
			return failf(ErrDigest, evidence.PolicyDir+"/"+name, "", "%s says %s, file is %s", evidence.RunFile, want, got)
		}
	}
	for name := range have {
		if _, ok := run.PolicyFiles[name]; !ok {
			return failf(ErrExtraFile, evidence.PolicyDir+"/"+name, "", "not in %s policy_files", evidence.RunFile)
		}
	}
	return nil
}
