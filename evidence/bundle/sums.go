package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Entry is one line of SHA256SUMS: a file and the hex SHA-256 of its bytes.
type Entry struct {
	Path   string
	SHA256 string
}

// FormatSums writes entries in `sha256sum` format ("<hex>  <path>\n"), so
// `sha256sum -c SHA256SUMS` works in the bundle root. Entries must be sorted.
func FormatSums(entries []Entry) []byte {
	var b bytes.Buffer
	for _, e := range entries {
		fmt.Fprintf(&b, "%s  %s\n", e.SHA256, e.Path)
	}
	return b.Bytes()
}

// ParseSums reads SHA256SUMS strictly: lowercase 64-hex digests, two spaces,
// safe relative paths, sorted with no duplicates, every line ended by "\n".
// Anything else is malformed: a lenient parser is a place to hide a file.
func ParseSums(b []byte) ([]Entry, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("empty")
	}
	if b[len(b)-1] != '\n' {
		return nil, fmt.Errorf("last line not terminated")
	}
	lines := strings.Split(string(b[:len(b)-1]), "\n")
	out := make([]Entry, 0, len(lines))
	for i, ln := range lines {
		digest, p, ok := strings.Cut(ln, "  ")
		if !ok || !isHex64(digest) {
			return nil, fmt.Errorf("line %d: want \"<sha256>  <path>\"", i+1)
		}
		if err := checkRel(p); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if p == SumsFile || p == AttestDir || strings.HasPrefix(p, AttestDir+"/") {
			return nil, fmt.Errorf("line %d: %s may not be listed", i+1, p)
		}
		if len(out) > 0 && out[len(out)-1].Path >= p {
			return nil, fmt.Errorf("line %d: %s out of order or repeated", i+1, p)
		}
		out = append(out, Entry{Path: p, SHA256: digest})
	}
	return out, nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// checkRel accepts only clean, relative, slash-separated paths whose names
// print safely in SHA256SUMS (no control characters or backslashes).
func checkRel(p string) error {
	if p == "" || p != path.Clean(p) || path.IsAbs(p) || p == "." ||
		p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Errorf("%w: %q", ErrUnsafePath, p)
	}
	for _, c := range p {
		if c < 0x20 || c == 0x7f || c == '\\' {
			return fmt.Errorf("%w: %q", ErrUnsafePath, p)
		}
	}
	return nil
}

// scan lists the regular files under dir, sorted, split into evidence files
// and attestation files; SHA256SUMS is reported separately. Symlinks and
// other non-regular files are refused: they could point outside the bundle.
func scan(dir string) (evidence []string, attest []string, hasSums bool, err error) {
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fail(ErrUnsafePath, rel, "", fmt.Errorf("not a regular file (%s)", d.Type()))
		}
		if err := checkRel(rel); err != nil {
			return fail(ErrUnsafePath, rel, "", err)
		}
		switch {
		case rel == SumsFile:
			hasSums = true
		case strings.HasPrefix(rel, AttestDir+"/"):
			attest = append(attest, rel)
		default:
			evidence = append(evidence, rel)
		}
		return nil
	})
	return evidence, attest, hasSums, err
}

// hashFile returns the hex SHA-256 of a file.
func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
