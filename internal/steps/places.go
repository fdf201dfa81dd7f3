package steps

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"github.com/gatehouse-dev/gatehouse/internal/scratch"
	"github.com/gatehouse-dev/gatehouse/internal/untrusted"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// placesRoot makes the scenario's places folder (once), in the harness's
// root-only scratch folder, never in the shared /tmp: only the binds the
// profile asks for reach into it. ROOT itself is bound nowhere, so a
// sandbox can change what lies in storage/ or shared/ (when a profile
// binds them writable) but never ROOT's own entries.
func (m *multi) placesRoot(lab string) (err error) {
	switch {
	case m.dir != nil:
		return nil
	case m.root != "":
		return errors.New("the scenario's places folder could not be made")
	}
	parent, err := scratch.Dir()
	if err != nil {
		return err
	}
	root, err := os.MkdirTemp(parent, "gatehouse-places-"+lab+"-")
	if err != nil {
		return err
	}
	m.root = root
	// Released once the folder is removed, whatever else the teardown
	// left: a removed folder kept on the ledger is a stale entry.
	m.rootRelease, _ = ledger.Record(ledger.Entry{Kind: ledger.Path, What: root})
	if m.dir, err = untrusted.OpenDir(root); err != nil {
		return err
	}
	defer func() {
		if err != nil { // half made: no session may start on it
			m.dir.Close()
			m.dir = nil
		}
	}()
	m.ids = map[string]targets.FileID{}
	m.slotIDs = map[int]targets.FileID{}
	for _, d := range []string{"storage", "shared", "shared/tmp", "shared/shm", "shared/cache", "cache"} {
		id, err := m.newFolder(d, 0o755)
		if err != nil {
			return err
		}
		switch d {
		case "storage":
			m.ids["storage-root"] = id
		case "shared":
			m.ids["shared"] = id
		}
	}
	// Sticky and world-writable, like the /tmp it stands in for.
	for _, d := range []string{"shared/tmp", "shared/shm", "shared/cache"} {
		if err := m.chmod(d, unix.S_ISVTX|0o777); err != nil {
			return err
		}
	}
	return nil
}

// newFolder makes the folder name below ROOT, which must not exist, and
// returns its identity, read through a descriptor opened with no link
// followed.
func (m *multi) newFolder(name string, perm uint32) (targets.FileID, error) {
	parent, err := m.dir.Sub(filepath.Dir(name)) // "." for ROOT itself
	if err != nil {
		return targets.FileID{}, err
	}
	defer parent.Close()
	base := filepath.Base(name)
	if err := unix.Mkdirat(parent.Fd(), base, perm); err != nil {
		return targets.FileID{}, fmt.Errorf("%s: %w", filepath.Join(m.root, name), err)
	}
	return folderID(parent, base)
}

// folderID is the identity of the folder base in parent, opened with no
// link followed.
func folderID(parent *untrusted.Dir, base string) (targets.FileID, error) {
	d, err := parent.Sub(base)
	if err != nil {
		return targets.FileID{}, err
	}
	defer d.Close()
	var st unix.Stat_t
	if err := unix.Fstat(d.Fd(), &st); err != nil {
		return targets.FileID{}, err
	}
	return targets.FileID{Dev: st.Dev, Ino: st.Ino}, nil
}

func (m *multi) chmod(name string, mode uint32) error {
	d, err := m.dir.Sub(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return unix.Fchmod(d.Fd(), mode)
}

// newStorage makes the session's own storage folder with its nonce in
// ROOT, where no sandbox reaches, and only then moves it to
// storage/SESSION, refusing whatever is at that name already: a session
// that binds storage-root writable may have put a link to any host folder
// there, or a folder of its own, for the next session's name. The folder
// moved is the one made: its identity is read before the move.
func (m *multi) newStorage(session, nonce string) (targets.FileID, error) {
	fresh := ".new-storage-" + session
	id, err := m.newFolder(fresh, 0o755)
	if err != nil {
		return targets.FileID{}, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = m.dir.RemoveAll(fresh)
		}
	}()
	own, err := m.dir.Sub(fresh)
	if err != nil {
		return targets.FileID{}, err
	}
	err = own.WriteFile("nonce", strings.NewReader("GATEHOUSE STORAGE NONCE "+nonce+"\n"), 0o644)
	own.Close()
	if err != nil {
		return targets.FileID{}, err
	}
	if m.made != nil {
		m.made(session)
	}
	storage, err := m.dir.Sub("storage")
	if err != nil {
		return targets.FileID{}, err
	}
	defer storage.Close()
	err = unix.Renameat2(m.dir.Fd(), fresh, storage.Fd(), session, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EEXIST) {
		return targets.FileID{}, fmt.Errorf("%s/storage/%s exists already, and the harness did not make it (a session that can write storage-root may have): refusing it, nothing written there", m.root, session)
	}
	if err != nil {
		return targets.FileID{}, fmt.Errorf("%s/storage/%s: %w", m.root, session, err)
	}
	ok = true
	return id, nil
}

// cacheSlot makes the slot's folder the first time, sticky and
// world-writable like the cache folder of a shared runner; a slot taken
// again must still be the folder made then.
func (m *multi) cacheSlot(slot int) (string, targets.FileID, error) {
	name := fmt.Sprintf("cache/slot-%d", slot)
	if want, ok := m.slotIDs[slot]; ok {
		cache, err := m.dir.Sub("cache")
		if err != nil {
			return "", targets.FileID{}, err
		}
		defer cache.Close()
		got, err := folderID(cache, filepath.Base(name))
		if err != nil {
			return "", targets.FileID{}, err
		}
		if got != want {
			return "", targets.FileID{}, fmt.Errorf("%s/%s: %w", m.root, name, targets.ErrPlaceSwapped)
		}
		return filepath.Join(m.root, name), got, nil
	}
	id, err := m.newFolder(name, 0o755)
	if err != nil {
		return "", targets.FileID{}, err
	}
	if err := m.chmod(name, unix.S_ISVTX|0o777); err != nil {
		return "", targets.FileID{}, err
	}
	m.slotIDs[slot] = id
	return filepath.Join(m.root, name), id, nil
}
