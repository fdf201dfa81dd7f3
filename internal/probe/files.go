package probe

import (
	"errors"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/unixsock"
)

const listCap = 200 // directory entries a list attempt names

// doRead opens Target and reads up to readCap bytes.
func doRead(s wire.Step, rep *wire.Report) error {
	f, err := os.Open(s.Target)
	if err != nil {
		return err
	}
	defer f.Close()
	buf, err := unixsock.ReadSome(f, readCap)
	rep.Bytes = len(buf)
	rep.Excerpt = string(buf)
	return err
}

// doList names up to listCap entries of the folder Target, sorted.
func doList(s wire.Step, rep *wire.Report) error {
	f, err := os.Open(s.Target)
	if err != nil {
		return err
	}
	defer f.Close()
	names, err := f.Readdirnames(listCap)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	sort.Strings(names)
	rep.Bytes = len(names)
	rep.Excerpt = strings.Join(names, "\n")
	return nil
}

// doWrite writes Payload to the regular file Target (created 0600 or
// truncated). Every refusal check runs before any byte is written.
func doWrite(s wire.Step, rep *wire.Report) error {
	f, err := openForWrite(s.Target)
	if err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return err
	}
	wrote(rep, f.Name())
	n, err := io.WriteString(f, s.Payload)
	rep.Bytes = n
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readFile reads the head (readCap bytes) of p.
func readFile(p string) ([]byte, error) { return readLimited(p, readCap) }
