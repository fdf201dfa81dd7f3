package agents

import (
	"context"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
)

// maxTarball bounds one download: the largest pinned tarball (Claude
// Code's native binary) is well under it.
const maxTarball = 1 << 30

// unpack downloads t into a spool file in stage, checks its sha512 against
// the integrity pinned in the lock (t.Integrity is the lock's value, never
// the registry's), and only then extracts it into the folder dst (below
// stage). stage is a staging folder: on any error the caller throws it
// away whole.
func (r registry) unpack(ctx context.Context, t Tarball, stage, dst *untrusted.Dir, lim Limits) error {
	want, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(t.Integrity, "sha512-"))
	if err != nil || !strings.HasPrefix(t.Integrity, "sha512-") || len(want) != sha512.Size {
		return fmt.Errorf("%s: integrity %q is not a sha512", t.id(), t.Integrity)
	}
	u, err := url.Parse(t.URL)
	if err != nil {
		return fmt.Errorf("%s: tarball URL: %w", t.id(), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrRegistry, u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s: %s", ErrRegistry, u.Redacted(), resp.Status)
	}
	// Spool to disk first: nothing is extracted before the digest matches.
	const spoolName = ".download.tgz"
	spool, err := stage.Create(spoolName, 0o600)
	if err != nil {
		return err
	}
	defer stage.Remove(spoolName)
	h := sha512.New()
	n, err := io.Copy(io.MultiWriter(spool, h), io.LimitReader(resp.Body, maxTarball+1))
	if cerr := spool.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%w: %s: download: %w", ErrRegistry, u.Redacted(), err)
	}
	if n > maxTarball {
		return fmt.Errorf("%s: %w: the tarball is more than %d bytes", t.id(), ErrArchive, maxTarball)
	}
	if got := h.Sum(nil); string(got) != string(want) {
		return fmt.Errorf("%s: sha512 of the tarball is sha512-%s, lock.json pins %s: refusing it",
			t.id(), base64.StdEncoding.EncodeToString(got), t.Integrity)
	}
	spool, err = stage.Open(spoolName)
	if err != nil {
		return err
	}
	defer spool.Close()
	if err := extract(ctx, spool, dst, lim); err != nil {
		return fmt.Errorf("%s: %w", t.id(), err)
	}
	return nil
}
