package wire

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// FileID names a file the way the kernel does: device and inode. The
// same folder seen through a bind mount has the same FileID inside and
// outside a sandbox, so the harness can match what the probe reports
// against host paths it stats itself.
type FileID struct {
	Major, Minor uint32
	Ino          uint64
}

// String is "major:minor:inode", the form reports carry.
func (id FileID) String() string { return fmt.Sprintf("%d:%d:%d", id.Major, id.Minor, id.Ino) }

// ParseFileID reads the String form back.
func ParseFileID(s string) (FileID, bool) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return FileID{}, false
	}
	ma, e1 := strconv.ParseUint(parts[0], 10, 32)
	mi, e2 := strconv.ParseUint(parts[1], 10, 32)
	ino, e3 := strconv.ParseUint(parts[2], 10, 64)
	if e1 != nil || e2 != nil || e3 != nil {
		return FileID{}, false
	}
	return FileID{uint32(ma), uint32(mi), ino}, true
}

// StatID returns the FileID of p, following symlinks.
func StatID(p string) (FileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return FileID{}, err
	}
	return FileIDOf(&st), nil
}

// FileIDOf is the FileID of what st describes.
func FileIDOf(st *unix.Stat_t) FileID {
	return FileID{unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), uint64(st.Ino)}
}
