package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// readSmall reads a metadata file with a size cap, mapping "not there" to
// ErrMissingFile.
func readSmall(dir, rel string) ([]byte, error) {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fail(ErrMissingFile, rel, "", nil)
	}
	if err != nil {
		return nil, fail(ErrMalformed, rel, "", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxMetadataSize+1))
	if err != nil {
		return nil, fail(ErrMalformed, rel, "", err)
	}
	if len(b) > maxMetadataSize {
		return nil, fail(ErrTooLarge, rel, "", nil)
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

func readRun(dir string) (evidence.Run, error) {
	var run evidence.Run
	b, err := readSmall(dir, RunFile)
	if err != nil {
		return run, err
	}
	if err := decodeStrict(b, &run); err != nil {
		return run, fail(ErrMalformed, RunFile, "", err)
	}
	return run, nil
}

func readResults(dir string) ([]evidence.Result, error) {
	var rs []evidence.Result
	b, err := readSmall(dir, ResultsFile)
	if err != nil {
		return nil, err
	}
	if err := decodeStrict(b, &rs); err != nil {
		return nil, fail(ErrMalformed, ResultsFile, "", err)
	}
	return rs, nil
}

// checkPolicy ties run.json's policy_files to the bytes under policy/: each
// named file must be there with that digest, and nothing else may be.
func checkPolicy(run evidence.Run, entries []Entry) error {
	have := map[string]string{}
	for _, e := range entries {
		if rel, ok := strings.CutPrefix(e.Path, "policy/"); ok {
			have[rel] = e.SHA256
		}
	}
	for name, want := range run.PolicyFiles {
		want = strings.TrimPrefix(want, "sha256:")
		got, ok := have[name]
		if !ok {
			return fail(ErrMissingFile, "policy/"+name, "", fmt.Errorf("named in %s policy_files", RunFile))
		}
		if got != want {
			return failf(ErrDigest, "policy/"+name, "", "%s says %s, file is %s", RunFile, want, got)
		}
	}
	for name := range have {
		if _, ok := run.PolicyFiles[name]; !ok {
			return failf(ErrExtraFile, "policy/"+name, "", "not in %s policy_files", RunFile)
		}
	}
	return nil
}
