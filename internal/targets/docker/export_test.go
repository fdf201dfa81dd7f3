package docker

// SetPinned makes t run f once a session's places are checked and before
// the daemon binds them (a hostile swap in between).
func SetPinned(t *Target, f func()) { t.pinned = f }
