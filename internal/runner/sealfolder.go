package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
)

// ErrNotSealable means a folder is not a finished, unsigned run folder of
// plain files and folders, within bounds; nothing of it was signed.
var ErrNotSealable = errors.New("not a finished, unsigned run folder")

// sealLimits bound what SealFolder reads, as an archive's extraction is.
var sealLimits = untrusted.Limits{Entries: bundle.DefaultLimits.MaxFiles, Depth: 32,
	Bytes: bundle.DefaultLimits.MaxTotal, FileSize: bundle.DefaultLimits.MaxFileBytes}

// SealFolder seals a complete run folder that a run left unsigned, in a
// process that holds the key and runs no sandbox: the folder may come from
// a runner a guest could reach, so it is read as hostile. It is refused
// (ErrNotSealable) unless it is a finished run folder (its own run id as
// its name, run.json complete), not sealed yet (no SHA256SUMS, no
// attestations/), and holds only folders and regular files of one file
// system, none hard-linked, within bounds. Its files are copied into a
// fresh partial folder under out, report.html is written again from
// run.json and results.json, and Seal signs the copy and gives it the
// run's name. When out is the folder's own parent, the copy replaces the
// unsigned folder. It returns the sealed folder's absolute path.
func SealFolder(ctx context.Context, src, out string, s Sealer) (string, error) {
	src, err := filepath.Abs(src)
	if err != nil {
		return "", err
	}
	if out, err = filepath.Abs(out); err != nil {
		return "", err
	}
	id := filepath.Base(src)
	if strings.HasPrefix(id, ".") || strings.HasSuffix(id, evidence.PartialSuffix) {
		return "", fmt.Errorf("seal: %s: %w: a partial folder, the run never finished", src, ErrNotSealable)
	}
	d, err := untrusted.OpenDir(src)
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR) {
		return "", fmt.Errorf("seal: %s: %w: not a folder, or a link on the way to it", src, ErrNotSealable)
	}
	if err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	defer d.Close()
	files, err := plainFiles(ctx, d)
	if err != nil {
		return "", fmt.Errorf("seal: %s: %w", src, err)
	}
	if err := finishedRun(d, id); err != nil {
		return "", fmt.Errorf("seal: %s: %w", src, err)
	}
	final := filepath.Join(out, id)
	if final != src {
		dir, err := sealCopy(ctx, d, files, out, id, s)
		return dir, err
	}
	// The sealed copy takes the folder's own name: the unsigned folder
	// steps aside (d still reads it) until the copy is sealed, and comes
	// back if it is not.
	aside := filepath.Join(out, "."+id+".unsigned")
	if err := os.Rename(src, aside); err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	dir, err := sealCopy(ctx, d, files, out, id, s)
	if err != nil {
		if rerr := os.Rename(aside, src); rerr != nil {
			err = errors.Join(err, fmt.Errorf("seal: the unsigned folder is kept at %s: %w", aside, rerr))
		}
		return "", err
	}
	removeEntry(aside)
	return dir, nil
}

// sealCopy copies files into a fresh partial folder and seals it.
func sealCopy(ctx context.Context, d *untrusted.Dir, files []string, out, id string, s Sealer) (string, error) {
	folder, err := evidence.Create(out, id)
	if err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	partial := folder.Dir()
	if err := copyFiles(ctx, d, files, partial); err != nil {
		folder.Abandon()
		removeEntry(partial)
		return "", fmt.Errorf("seal: %s: %w", d.Name(), err)
	}
	dir, err := Seal(ctx, folder, s)
	if err != nil {
		removeEntry(partial)
		return "", err
	}
	return dir, nil
}

// plainFiles lists every regular file below d, refusing anything else and
// a folder that is already sealed.
func plainFiles(ctx context.Context, d *untrusted.Dir) ([]string, error) {
	var root syscall.Stat_t
	if err := syscall.Fstat(d.Fd(), &root); err != nil {
		return nil, err
	}
	var files []string
	err := d.Walk(ctx, sealLimits, func(_ *untrusted.Dir, e untrusted.Entry) error {
		switch {
		case e.Path == bundle.SumsFile || e.Path == bundle.AttestDir:
			return fmt.Errorf("%w: already sealed (%s)", ErrNotSealable, e.Path)
		case e.Dev != root.Dev:
			return fmt.Errorf("%w: %s is on another file system", ErrNotSealable, e.Path)
		case e.Mode.IsDir():
			return nil
		case !e.Mode.IsRegular():
			return fmt.Errorf("%w: %s is %s", ErrNotSealable, e.Path, kind(e.Mode))
		}
		if e.Path != evidence.ReportFile { // written again from the records
			files = append(files, e.Path)
		}
		return nil
	})
	if errors.Is(err, untrusted.ErrTooLarge) {
		return nil, fmt.Errorf("%w: %v", ErrNotSealable, err)
	}
	return files, err
}

// finishedRun requires run.json to name the folder's run as complete.
func finishedRun(d *untrusted.Dir, id string) error {
	b, err := d.ReadFile(evidence.RunFile, 64<<20)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNotSealable, evidence.RunFile, err)
	}
	var run evidence.Run
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&run); err != nil || dec.More() {
		return fmt.Errorf("%w: %s is not one JSON run record", ErrNotSealable, evidence.RunFile)
	}
	switch {
	case run.ID != id:
		return fmt.Errorf("%w: the folder's name is not its run's id %q", ErrNotSealable, run.ID)
	case !run.Complete:
		return fmt.Errorf("%w: %s says the run did not complete", ErrNotSealable, evidence.RunFile)
	}
	return nil
}

// copyFiles copies each file, bounded, through descriptors that follow no
// link; a hard-linked file (which may be a host file) is refused.
func copyFiles(ctx context.Context, d *untrusted.Dir, files []string, dst string) error {
	to, err := untrusted.OpenDir(dst)
	if err != nil {
		return err
	}
	defer to.Close()
	left := sealLimits.Bytes
	for _, rel := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if dir := path.Dir(rel); dir != "." {
			if err := to.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		n, err := copyOne(d, to, rel, min(left, sealLimits.FileSize))
		if err != nil {
			return err
		}
		left -= n
	}
	return nil
}

func copyOne(d, to *untrusted.Dir, rel string, max int64) (int64, error) {
	f, err := d.Open(rel)
	if errors.Is(err, untrusted.ErrNotRegular) || errors.Is(err, syscall.ELOOP) {
		return 0, fmt.Errorf("%w: %s: %v", ErrNotSealable, rel, err)
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return 0, err
	} else if sys, ok := st.Sys().(*syscall.Stat_t); !ok || sys.Nlink != 1 {
		return 0, fmt.Errorf("%w: %s is hard-linked: it may be a file of the host", ErrNotSealable, rel)
	}
	c := &counter{r: io.LimitReader(f, max+1)}
	if err := to.WriteFile(rel, c, 0o644); err != nil {
		return 0, err
	}
	if c.n > max {
		return 0, fmt.Errorf("%w: %s: %v: more than %d bytes", ErrNotSealable, rel, untrusted.ErrTooLarge, max)
	}
	return c.n, nil
}

type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// removeEntry removes p and what is below it without following a link.
func removeEntry(p string) {
	if parent, err := untrusted.OpenDir(filepath.Dir(p)); err == nil {
		_ = parent.RemoveAll(filepath.Base(p))
		parent.Close()
	}
}

// kind names what a non-regular entry is.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device node"
	}
	return "not a regular file"
}
