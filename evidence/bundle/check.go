package bundle

import (
	"github.com/gatehouse-dev/gatehouse/evidence"
)

// checkSums verifies SHA256SUMS against its subject and parses it; its
// entries must be exactly the file subjects.
func checkSums(s *snapshot, want map[string]string) ([]Entry, error) {
	raw, err := s.data(SumsFile)
	if err != nil {
		return nil, err
	}
	if got := s.files[SumsFile].sha256; got != want[SumsFile] {
		return nil, failf(ErrDigest, SumsFile, "", "sha256 %s, signed %s", got, want[SumsFile])
	}
	entries, err := ParseSums(raw)
	if err != nil {
		return nil, fail(ErrMalformed, SumsFile, "", err)
	}
	listed := map[string]bool{}
	for _, e := range entries {
		listed[e.Path] = true
		if want[e.Path] != e.SHA256 {
			return nil, failf(ErrStatement, SumsFile, "subject", "%s: SHA256SUMS and signed subjects disagree", e.Path)
		}
	}
	for name := range want {
		if name != SumsFile && name != ImageSubject && !listed[name] {
			return nil, failf(ErrStatement, SumsFile, "subject", "%s is a subject but not in SHA256SUMS", name)
		}
	}
	return entries, nil
}

// checkFiles compares every file's digest, as read once, with the signed
// list: none missing, none added.
func checkFiles(s *snapshot, entries []Entry, want map[string]string) error {
	for _, f := range s.paths {
		if _, ok := want[f]; !ok || f == ImageSubject {
			return fail(ErrExtraFile, f, "", nil)
		}
	}
	for _, e := range entries {
		f, ok := s.files[e.Path]
		if !ok {
			return fail(ErrMissingFile, e.Path, "", nil)
		}
		if f.sha256 != e.SHA256 {
			return failf(ErrDigest, e.Path, "", "sha256 %s, signed %s", f.sha256, e.SHA256)
		}
	}
	return nil
}

// checkImage requires the image subject exactly when run.json names an image.
func checkImage(run evidence.Run, want map[string]string) error {
	signed, has := want[ImageSubject]
	if run.ImageDigest == "" {
		if has {
			return failf(ErrStatement, evidence.RunFile, "image_digest", "empty, but the statement names image sha256:%s", signed)
		}
		return nil
	}
	h, err := imageHex(run.ImageDigest)
	if err != nil {
		return fail(ErrMalformed, evidence.RunFile, "image_digest", err)
	}
	if h != signed {
		return failf(ErrStatement, evidence.RunFile, "image_digest", "%s, statement names sha256:%s", run.ImageDigest, signed)
	}
	return nil
}
